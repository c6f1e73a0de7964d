"""Run a server under test as a subprocess on 127.0.0.1 with its own data directory.

:class:`LiveServer` is generic (an argv built from the port, an environment, a readiness check) and keeps
its port and data directory across :meth:`LiveServer.restart`, so clients reconnect to the same URL and
find the same database. :func:`lensrelay_server` builds ours (migrate once, then daphne through
``python -m lensrelay.server.serve``);
:func:`reference_server` builds ``@y/websocket-server``. The blocking methods work from any test; the
``a``-prefixed twins run them in a thread so an async test's event loop keeps serving its clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from .yclient import NODE_DIR, node_executable

REPO_ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
_LOG_TAIL_LINES = 40


class LiveServerError(RuntimeError):
    """The server did not start, or a management command failed."""


def _xdist_share() -> tuple[int, int]:
    """(this pytest-xdist worker's index, the number of workers); (0, 1) outside xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return (int(worker[2:]) if worker.startswith("gw") else 0), max(count, 1)


def free_port() -> int:
    """A port free now on 127.0.0.1 (the kernel's pick), for a server that binds it a moment later.

    Under pytest-xdist each worker only takes ports of its own share (``port // 2 % workers``: the kernel
    hands out odd ports to bind(0)), so two workers never choose the same port in the window between
    choosing it and their servers binding it.
    """
    index, count = _xdist_share()
    for _ in range(1000):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((HOST, 0))
            port: int = sock.getsockname()[1]
        if port // 2 % count == index:
            return port
    return port


def _kill_if_running(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(STOP_TIMEOUT)


class LiveServer:
    """A server subprocess bound to ``127.0.0.1:port``, logging to ``data_dir/server.log``.

    ``argv_factory(port)`` gives the command line; ``env`` is added to this process's environment;
    readiness is ``GET ready_path`` answering 200, or a plain TCP connect when ``ready_path`` is None.
    ``setup`` commands (e.g. ``migrate``) run once, before the first start, with the same environment.
    """

    def __init__(
        self,
        argv_factory: Callable[[int], Sequence[str]],
        env: Mapping[str, str],
        ready_path: str | None,
        *,
        data_dir: Path,
        cwd: Path = REPO_ROOT,
        port: int | None = None,
        setup: Sequence[Sequence[str]] = (),
        name: str = "server",
    ) -> None:
        self.argv_factory = argv_factory
        self.env = dict(env)
        self.ready_path = ready_path
        self.data_dir = data_dir
        self.cwd = cwd
        self.port = free_port() if port is None else port
        self.setup = [list(argv) for argv in setup]
        self.name = name
        self.log_path = data_dir / "server.log"
        self.starts = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize[..., LiveServer] | None = None
        self._setup_done = False
        data_dir.mkdir(parents=True, exist_ok=True)

    # ----------------------------------------------------------------- addresses

    @property
    def http_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{HOST}:{self.port}"

    def doc_server_url(self, doc_id: str) -> str:
        """The y-websocket server URL for a doc on the y-sweet route (room = ``doc_id``)."""
        return f"{self.ws_url}/d/{doc_id}/ws"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    # ----------------------------------------------------------------- lifecycle

    def full_env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}

    def start(self, *, timeout: float = START_TIMEOUT) -> None:
        if self.running:
            raise LiveServerError(f"{self.name} is already running (pid {self.pid})")
        if not self._setup_done:
            for argv in self.setup:
                self._run_setup(argv)
            self._setup_done = True
        self.starts += 1
        argv = list(self.argv_factory(self.port))
        with self.log_path.open("ab") as log:
            log.write(f"\n===== start #{self.starts}: {' '.join(argv)}\n".encode())
            log.flush()
            self._process = subprocess.Popen(
                argv, cwd=self.cwd, env=self.full_env(), stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        self._finalizer = weakref.finalize(self, _kill_if_running, self._process)
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.kill()
            raise

    def stop(self, *, timeout: float = STOP_TIMEOUT) -> int | None:
        """SIGTERM, then SIGKILL if it has not exited within ``timeout``. Returns the exit code."""
        process = self._process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        return self._forget()

    def kill(self) -> int | None:
        """SIGKILL at once: no shutdown hooks, no flushing."""
        process = self._process
        if process is None:
            return None
        if process.poll() is None:
            process.kill()
            process.wait(STOP_TIMEOUT)
        return self._forget()

    def restart(self, *, hard: bool = False, timeout: float = START_TIMEOUT) -> None:
        """Stop (SIGKILL when ``hard``) and start again on the same port and data directory."""
        if hard:
            self.kill()
        else:
            self.stop()
        self.start(timeout=timeout)

    async def astart(self, *, timeout: float = START_TIMEOUT) -> None:
        await asyncio.to_thread(self.start, timeout=timeout)

    async def astop(self, *, timeout: float = STOP_TIMEOUT) -> int | None:
        return await asyncio.to_thread(self.stop, timeout=timeout)

    async def akill(self) -> int | None:
        return await asyncio.to_thread(self.kill)

    async def arestart(self, *, hard: bool = False, timeout: float = START_TIMEOUT) -> None:
        await asyncio.to_thread(self.restart, hard=hard, timeout=timeout)

    def __enter__(self) -> LiveServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ----------------------------------------------------------------- diagnostics and commands

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def manage(
        self, *args: str, check: bool = True, timeout: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        """``python manage.py ARGS`` against this server's database."""
        return run_manage(self.env, *args, check=check, timeout=timeout)

    def _run_setup(self, argv: Sequence[str]) -> None:
        result = subprocess.run(
            list(argv), cwd=self.cwd, env=self.full_env(), capture_output=True, text=True, timeout=300
        )
        with self.log_path.open("a") as log:
            log.write(
                f"\n===== setup: {' '.join(argv)} -> {result.returncode}\n{result.stdout}{result.stderr}"
            )
        if result.returncode != 0:
            raise LiveServerError(
                f"{self.name} setup {' '.join(argv)} failed ({result.returncode}):\n"
                f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
            )

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last_problem = "not tried"
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise LiveServerError(
                    f"{self.name} exited with code {self._process.returncode} while starting; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            ready, last_problem = self._probe()
            if ready:
                return
            time.sleep(0.05)
        raise LiveServerError(
            f"{self.name} not ready on port {self.port} after {timeout} s ({last_problem}); "
            f"log {self.log_path}:\n{self.log_tail()}"
        )

    def _probe(self) -> tuple[bool, str]:
        if self.ready_path is None:
            try:
                with socket.create_connection((HOST, self.port), timeout=1):
                    return True, "connected"
            except OSError as exc:
                return False, f"connect: {exc}"
        connection = http.client.HTTPConnection(HOST, self.port, timeout=2)
        try:
            connection.request("GET", self.ready_path)
            status = connection.getresponse().status
            return status == 200, f"GET {self.ready_path} -> {status}"
        except (OSError, http.client.HTTPException) as exc:
            return False, f"GET {self.ready_path}: {exc}"
        finally:
            connection.close()

    def _forget(self) -> int | None:
        process, self._process = self._process, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        return None if process is None else process.returncode


# --------------------------------------------------------------------- our server and the reference


def lensrelay_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment that points our server and its management commands at ``data_dir``."""
    return {
        "LENSRELAY_DATA_DIR": str(data_dir),
        "DATABASE_URL": f"sqlite:///{data_dir}/db.sqlite3",
        "DJANGO_SETTINGS_MODULE": "lensrelay.settings",
        "LENSRELAY_DEMO": "0",
        **extra,
    }


def run_manage(
    env: Mapping[str, str], *args: str, check: bool = True, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Run ``manage.py ARGS`` from the repo root with ``env`` (e.g. :func:`lensrelay_env`) added.

    With ``check`` a non-zero exit raises :class:`LiveServerError` carrying stdout and stderr.
    """
    argv = [sys.executable, "manage.py", *args]
    result = subprocess.run(
        argv,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and result.returncode != 0:
        raise LiveServerError(
            f"manage.py {' '.join(args)} failed ({result.returncode}):\n"
            f"stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}"
        )
    return result


def lensrelay_server(tmp_path: Path, **env: str) -> LiveServer:
    """Our server under daphne on a free port; ``tmp_path/lensrelay`` holds its SQLite database.

    Not started: call ``start()`` (``migrate --noinput`` runs before the first start).
    ``env`` overrides or extends :func:`lensrelay_env`.
    """
    data_dir = tmp_path / "lensrelay"
    data_dir.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    return LiveServer(
        # The launcher docs/scale.md documents: daphne with the settings' frame limit (4413 beyond it).
        lambda port: [python, "-m", "lensrelay.server.serve", "-b", HOST, "-p", str(port)],
        # The suite's cores are never idle (two test workers, browsers): there the derive process's idle class
        # would wait out its whole stretch (3 s) before every pass; docs/scale.md's budgets under load are
        # those of a 1 s stretch.
        lensrelay_env(data_dir, **{"LENSRELAY_DERIVE_STRETCH_SECONDS": "1", **env}),
        "/ready",
        data_dir=data_dir,
        setup=[[python, "manage.py", "migrate", "--noinput"]],
        name="lensrelay",
    )


def reference_server(tmp_path: Path) -> LiveServer:
    """``@y/websocket-server`` 0.1.1 (in-memory, no persistence) on a free port. Not started."""
    port = free_port()
    script = NODE_DIR / "node_modules" / "@y" / "websocket-server" / "src" / "server.js"
    node = node_executable()
    return LiveServer(
        lambda _port: [node, str(script)],
        {"HOST": HOST, "PORT": str(port)},
        None,
        data_dir=tmp_path / "reference-server",
        cwd=NODE_DIR,
        port=port,
        name="y-websocket-server",
    )


def node_script_server(tmp_path: Path, script: str, *, name: str | None = None) -> LiveServer:
    """Any server script in ``tests/e2e/node`` that honours HOST and PORT. Not started."""
    port = free_port()
    node = node_executable()
    label = name or Path(script).stem
    return LiveServer(
        lambda _port: [node, str(NODE_DIR / script)],
        {"HOST": HOST, "PORT": str(port)},
        None,
        data_dir=tmp_path / label,
        cwd=NODE_DIR,
        port=port,
        name=label,
    )
