"""`manage.py derive`: the derive process. Follows the update log from its durable cursor and keeps the
derived views (backlinks, search rows, vectors, version snapshots, MCP `resources/updated` events) in
step, off the server's live path; beside that, it delivers webhooks (lensrelay.webhooks.delivery) from
their outbox.

`python -m lensrelay.server.serve` starts one beside the server; scaled out, run exactly one per database
(on any machine that reaches it). `--once` works off what is logged and exits; `--rebuild` starts again
from the log's origin, bringing every view in step with every document.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import os
import signal
import sys
import threading
from functools import partial
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from lensrelay.docstore.derived import (
    CURSOR_NAME,
    DeriveFollower,
    cursor_save,
    derive_pending,
    derived_views,
    follower_for,
)
from lensrelay.docstore.giveway import give_way
from lensrelay.docstore.spare_cpu import SpareCpu
from lensrelay.docstore.store import DocStore, get_store
from lensrelay.search.maintain import search_catch_up
from lensrelay.webhooks.delivery import WebhookDeliverer

logger = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1


def _end_with_parent(parent_pid: int) -> None:
    """SIGTERM from the kernel when the launcher goes (Linux); gone already: exit now."""
    libc_name = ctypes.util.find_library("c")
    if sys.platform.startswith("linux") and libc_name is not None:
        ctypes.CDLL(libc_name, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent_pid:
        raise SystemExit("the server that started this derive process is gone")


# Seconds a stopping derive process may take to finish its pass; past them it exits at once. A process
# whose database went away mid-pass was seen waiting on it for an hour after its launcher was gone.
STOP_GRACE_SECONDS = 10.0


def stop_soon(stop: asyncio.Event, *, grace: float = STOP_GRACE_SECONDS) -> threading.Timer:
    """Ask the loops to stop after their pass; a thread ends the process if they have not within `grace`
    (everything the derive process writes is resumable from the log and the outbox)."""
    stop.set()
    deadline = threading.Timer(grace, os._exit, args=(1,))
    deadline.daemon = True
    deadline.start()
    return deadline


async def _lower_priority_but_the_database_thread(store: DocStore) -> SpareCpu:
    """Deliveries go first where this process shares cores with a server (lensrelay.docstore.spare_cpu),
    but not its database thread: a transaction holds SQLite's one write lock, and at a low priority it held
    it while the scheduler ran the server, which waited for that lock to log a live change (priority
    inversion: appends waited up to 1.2 s in the loop-lag test). On Linux a thread's nice value and class
    are its own and new threads take their creator's, so the store's database thread is started first,
    then the loop's thread (and every thread it starts later) is lowered."""
    spare = SpareCpu(
        nice=int(settings.LENSRELAY_DERIVE_NICE),
        idle=bool(settings.LENSRELAY_DERIVE_IDLE),
        stretch=float(settings.LENSRELAY_DERIVE_STRETCH_SECONDS),
    )
    await store.db(int)  # starts the store's one database thread, at this process's priority
    spare.lower()
    return spare


async def _first_pass(follower: DeriveFollower) -> None:
    while not follower.steps:
        await asyncio.sleep(0.1)


class Command(BaseCommand):
    # The launcher starts it beside a server that has just run them.
    requires_system_checks: list[str] = []
    help = (
        "Keep backlinks, search rows, vectors and versions in step with the update log, and deliver "
        "webhooks (the derive process)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="Work off what is logged now, then exit.")
        parser.add_argument(
            "--rebuild", action="store_true", help="Start from the log's origin (every document again)."
        )
        parser.add_argument(
            "--parent-pid", type=int, default=None, help="Exit when this process (the launcher) is gone."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        give_way()  # to the server's update log appends, in the same SQLite file
        if options["parent_pid"] is not None:
            _end_with_parent(options["parent_pid"])
        if options["rebuild"]:
            cursor_save(last_update_id=0, name=CURSOR_NAME)
        asyncio.run(self._run(once=options["once"], parent_pid=options["parent_pid"]))

    async def _run(self, *, once: bool, parent_pid: int | None) -> None:
        store = get_store()
        # Each pass catches up with the log before it reads a note (DeriveFollower.step); polls in between
        # would apply the same rows in smaller batches, each its own rehearsal, transaction and flush.
        store.catch_up_on_poll = False
        if store.peers is not None:
            # Each pass reads the log: the workers' updates over Redis would be every update twice.
            store.peers.stop_listening()
        spare = await _lower_priority_but_the_database_thread(store)
        follower_for(store).behind = spare.behind
        try:
            if once:
                handled = await derive_pending(store)
                self.stdout.write(f"Derived views in step: {len(handled)} documents handled.")
                return
            follower = follower_for(store)
            # Rows of notes whose rewrite a stopped derive process still owed (lensrelay.search.maintain)
            # are found by comparing modified times, once the first pass has done what the log says.
            search_catch_up(store, after=partial(_first_pass, follower))
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, stop_soon, stop)
            views = ", ".join(view.name for view in derived_views())
            self.stdout.write(f"Deriving {views} from the update log; delivering webhooks.")
            self.stdout.flush()
            deliverer = WebhookDeliverer()
            try:
                await asyncio.gather(
                    follower.run(stop=stop, parent_pid=parent_pid),
                    deliverer.run(stop=stop, parent_pid=parent_pid),
                )
                await follower.do_owed()
            finally:
                await deliverer.close()
        finally:
            await store.close()
