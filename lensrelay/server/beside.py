"""The derive process beside the server: `python -m lensrelay.server.serve` starts `manage.py derive`
(lensrelay.docstore.derived) as a child, starts it again should it end, and stops it on the way out.

The child ends with its parent in two ways (`manage.py derive --parent-pid`): it asks the kernel for SIGTERM
when the launcher dies (PR_SET_PDEATHSIG, Linux), and it exits by itself once its parent process id changes.
(Not through `preexec_fn`: a fork of this many-threaded process may deadlock before it execs.)
The server never waits for it: killed, the live path keeps serving and the next child resumes from the
durable cursor.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import subprocess
import sys
import threading

from django.conf import settings

logger = logging.getLogger(__name__)


def derive_argv(*, parent_pid: int) -> list[str]:
    return [sys.executable, "-m", "django", "derive", f"--parent-pid={parent_pid}"]


class DeriveBeside:
    """Keeps one derive child running until `stop()`."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        # The thread that forks must live as long as the child: PDEATHSIG follows the forking thread.
        self._thread = threading.Thread(target=self._supervise, name="lensrelay-derive", daemon=True)
        self._thread.start()
        atexit.register(self.stop)

    def _supervise(self) -> None:
        env = dict(os.environ)
        # Not into the server's metrics: the rooms the derive process loads are not live documents, and a
        # scrape reads its backlog from the database (lensrelay.docstore.derived.derive_backlog).
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        while not self._stopping.is_set():
            try:
                self.process = subprocess.Popen(derive_argv(parent_pid=os.getpid()), env=env)
            except OSError:
                logger.exception("could not start the derive process")
            else:
                code = self.process.wait()
                if not self._stopping.is_set():
                    logger.warning("the derive process ended (%s); starting it again", code)
            self._stopping.wait(float(settings.LENSRELAY_DERIVE_RESTART_SECONDS))

    def stop(self) -> None:
        self._stopping.set()
        process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(10)
            if process.poll() is None:
                process.kill()


def start_derive_beside() -> DeriveBeside | None:
    """Start the derive process if this deployment wants one beside the server."""
    if str(settings.LENSRELAY_DERIVED_WORK) != "process" or not settings.LENSRELAY_DERIVE_BESIDE:
        return None
    beside = DeriveBeside()
    beside.start()
    return beside
