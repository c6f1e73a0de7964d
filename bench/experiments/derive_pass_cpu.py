"""CPU of one pass of the derive process at a team's load (issue 36): 50 notes as the team bench writes
them, grown to about 3 KB with prose (`--small`: left as the bench writes them), each typed into twice
between passes (a marker inserted at the start, as `bench/node/load.mjs`
does) by another writer, as the server logs it; then `DeriveFollower.step()`, every half second as the
derive process's poll (`--back-to-back`: at once). Three rounds of 40 passes; `--profile` prints cProfile's
top functions over one more round; `--db-times` the CPU of each kind of database call per pass (on its thread,
by the called function's name) over the rounds. Runs on a scratch SQLite database in a temporary directory (or
`DATABASE_URL`, migrated first):

    [NOTES=50] .venv/bin/python bench/experiments/derive_pass_cpu.py [--small] [--back-to-back] [--profile]
        [--db-times]
"""

import asyncio
import collections
import cProfile
import os
import pstats
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lensrelay.settings")
os.environ.setdefault("LENSRELAY_DATA_DIR", tempfile.mkdtemp(prefix="derive-pass-"))
os.environ["LENSRELAY_DERIVED_WORK"] = "process"
import django

django.setup()

from asgiref.sync import sync_to_async  # noqa: E402
from django.core.management import call_command  # noqa: E402
from pycrdt import Doc, Text  # noqa: E402

from lensrelay.docstore import persistence  # noqa: E402
from lensrelay.docstore.derived import derive_pending, follower_for  # noqa: E402
from lensrelay.docstore.store import get_store  # noqa: E402
from lensrelay.vault.documents import document_create  # noqa: E402
from lensrelay.vault.folders import folder_create  # noqa: E402

NOTES = int(os.environ.get("NOTES", "50"))
PROSE = "A team's notes on the relay, typed live by people and proposed into by assistants. " * 36
PASSES = 40
POLL = 0.5


def time_db_calls(store) -> collections.Counter:
    """The CPU each database call takes on its thread, summed by the called function's name."""
    spent: collections.Counter = collections.Counter()
    db = store.db

    async def timed(fn, *args, **kwargs):
        def call():
            started = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[getattr(fn, "__qualname__", repr(fn))] += time.thread_time() - started

        return await db(call)

    store.db = timed
    return spent


async def main(*, profile: bool, pause: float, small: bool, db_times: bool) -> None:
    await sync_to_async(call_command)("migrate", verbosity=0)
    store = get_store()
    folder = await sync_to_async(folder_create)(name="Team")
    notes = []
    for n in range(NOTES):
        links = " ".join(f"[[doc {(n + k) % NOTES}]]" for k in (1, 2, 3))
        note = await document_create(
            store=store,
            folder=folder,
            path=f"/doc {n}.md",
            text=f"# Team note {n}\n\nSee {links}.\n" + ("" if small else PROSE),
        )
        notes.append(note.doc_id)
    await derive_pending(store)
    store.catch_up_on_poll = False  # as `manage.py derive` runs its store: each pass catches up itself
    # The writers' copies: what another process's clients type into, logged as that process would.
    typists = {}
    for doc_id in notes:
        state = await store.db(persistence.load_state, doc_id)
        doc: Doc = Doc()
        assert state.update is not None
        doc.apply_update(state.update)
        typists[doc_id] = doc
    follower = follower_for(store)
    sent = 0
    typing = 0.0  # the typists' own CPU, taken out of the rounds' (the database thread's time in type_once)

    def type_once() -> None:
        nonlocal sent, typing
        started = time.thread_time()
        entries = []
        for doc_id, doc in typists.items():
            for _ in range(2):
                before = doc.get_state()
                doc.get("contents", type=Text).insert(0, f"⟨w.{sent}.{time.time():.3f}⟩")
                sent += 1
                entries.append((doc_id, doc.get_update(before), True, "typist"))
        persistence.append_updates(entries, writer="other-process")
        typing += time.thread_time() - started

    async def passes(count: int) -> float:
        """The process's CPU over `count` passes and what they left for later, the typists' taken out."""
        nonlocal typing
        typing = 0.0
        cpu = time.process_time()
        for _ in range(count):
            await store.db(type_once)
            await follower.step()
            await asyncio.sleep(pause)
        await follower.do_owed()
        return time.process_time() - cpu - typing

    spent_in_db = time_db_calls(store) if db_times else None
    cpu = time.process_time()
    await asyncio.sleep(PASSES * pause)
    idle = time.process_time() - cpu
    print(f"CPU {1e3 * idle / PASSES:.1f} ms per pass's time with nothing typed and no pass")
    if spent_in_db is not None:
        spent_in_db.clear()
    for _ in range(3):
        spent = await passes(PASSES)
        print(f"CPU {1e3 * spent / PASSES:.1f} ms per pass, {1e6 * spent / PASSES / NOTES:.0f} µs per note")
    if spent_in_db is not None:
        for name, seconds in spent_in_db.most_common(25):
            print(f"  {1e3 * seconds / PASSES / 3:7.3f} ms per pass  {name}")
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        await passes(PASSES)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(60)
    await store.close()


asyncio.run(
    main(
        profile="--profile" in sys.argv,
        pause=0.0 if "--back-to-back" in sys.argv else POLL,
        small="--small" in sys.argv,
        db_times="--db-times" in sys.argv,
    )
)
