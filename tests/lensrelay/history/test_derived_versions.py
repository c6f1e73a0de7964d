"""Versions kept by the derive process (LENSRELAY_DERIVED_WORK=process): the server keeps none, not per
update nor per compaction; the follower keeps the text before a document's first edits, each compaction it
reads and each edit burst once it has gone quiet, and a follower started afresh (a derive process killed
and started again) keeps what its predecessor had read but not kept."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pycrdt import Text

from lensrelay.docstore.derived import DeriveFollower, derive_pending, follower_for
from lensrelay.docstore.room import Origin
from lensrelay.history import listen
from lensrelay.history.models import DocVersion
from lensrelay.history.recording import state_text
from lensrelay.history.selectors import versions_summaries
from lensrelay.models import YUpdate
from lensrelay.vault.documents import document_create

pytestmark = pytest.mark.django_db(transaction=True)

QUIET = 0.3


@pytest.fixture
def process_mode(settings: Any) -> None:
    settings.LENSRELAY_DERIVED_WORK = "process"
    settings.LENSRELAY_VERSIONS_QUIET_SECONDS = QUIET


@pytest.fixture
async def note(process_mode: None, store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Note.md", text="start 😀")


async def append(store: Any, doc_id: str, value: str, *, author: str) -> None:
    room = await store.get(doc_id)
    ytext = room.doc.get("contents", type=Text)
    with room.transact(Origin("test", author=author)):
        ytext.insert(len(str(ytext).encode()), value)
    await room.flushed()


def texts(doc_id: str) -> list[str]:
    return [
        state_text(bytes(v.state))
        for v in DocVersion.objects.filter(doc_id=doc_id).order_by("-upto_update_id")
    ]


async def quiet_then_derive(store: Any) -> None:
    await asyncio.sleep(QUIET + 0.1)
    await derive_pending(store)


async def test_the_server_keeps_no_version_and_the_follower_keeps_baseline_and_quiet_burst(
    store: Any, note: Any
) -> None:
    await append(store, note.doc_id, " a", author="alice")
    await append(store, note.doc_id, " b", author="bob")
    # Longer than the quiet time: the server process has no timer, and keeps nothing.
    await asyncio.sleep(QUIET + 0.3)
    assert await sync_to_async(texts)(note.doc_id) == []
    assert note.doc_id not in listen.quiet_for(store).timers

    # The first pass reads the burst (creation and edits), quiet by the rows' own times already: the
    # text before the first edit, and the burst.
    await derive_pending(store)
    assert await sync_to_async(texts)(note.doc_id) == ["start 😀 a b", "start 😀"]
    summaries = await sync_to_async(versions_summaries)(doc_id=note.doc_id)
    assert summaries[0]["author"] == "alice, bob"

    # A later burst: its baseline is the version before (nothing new), then its quiet version.
    await append(store, note.doc_id, " c", author="carol")
    await derive_pending(store)
    assert len(await sync_to_async(texts)(note.doc_id)) == 2  # not quiet yet
    await quiet_then_derive(store)
    assert await sync_to_async(texts)(note.doc_id) == ["start 😀 a b c", "start 😀 a b", "start 😀"]
    # Nothing new: passes keep nothing more.
    await quiet_then_derive(store)
    assert len(await sync_to_async(texts)(note.doc_id)) == 3


async def test_each_compaction_the_follower_reads_is_a_version(store: Any, note: Any, settings: Any) -> None:
    settings.LENSRELAY_VERSIONS_QUIET_SECONDS = 3600  # only compactions and baselines here
    room = await store.get(note.doc_id)
    await derive_pending(store)
    await append(store, note.doc_id, " one", author="alice")
    await derive_pending(store)  # the row read before the compaction folds it
    await store.compact(room)
    # The compaction ran in the server process, which kept nothing of it.
    assert await sync_to_async(texts)(note.doc_id) == ["start 😀"]
    await derive_pending(store)
    assert await sync_to_async(texts)(note.doc_id) == ["start 😀 one", "start 😀"]

    await append(store, note.doc_id, " two", author="bob")
    await append(store, note.doc_id, " three", author="carol")
    await derive_pending(store)
    await store.compact(room)
    await derive_pending(store)
    # Rows folded before the follower read them: the compaction is still a version.
    await append(store, note.doc_id, " four", author="dave")
    await store.compact(room)
    await derive_pending(store)
    await store.compact(room)  # nothing new: no version
    await derive_pending(store)
    assert await sync_to_async(texts)(note.doc_id) == [
        "start 😀 one two three four",
        "start 😀 one two three",
        "start 😀 one",
        "start 😀",
    ]
    summaries = await sync_to_async(versions_summaries)(doc_id=note.doc_id)
    assert [s["author"] for s in summaries][1:] == ["bob, carol", "alice", ""]
    assert await sync_to_async(YUpdate.objects.filter(doc_id=note.doc_id).count)() == 0


async def test_a_follower_started_afresh_keeps_what_its_predecessor_had_read_but_not_kept(
    store: Any, note: Any
) -> None:
    await append(store, note.doc_id, " one", author="alice")
    await quiet_then_derive(store)
    assert await sync_to_async(texts)(note.doc_id) == ["start 😀 one", "start 😀"]
    await append(store, note.doc_id, " lost?", author="alice")
    first = follower_for(store)
    await first.step()  # read, and its cursor saved past the row, but not quiet yet: nothing kept
    assert first.cursor is not None
    assert note.doc_id in dict(first.feed_views)["versions"].bursts  # type: ignore[attr-defined]
    assert await sync_to_async(texts)(note.doc_id) == ["start 😀 one", "start 😀"]

    # Killed: a new derive process starts from the saved cursor, past the row; the log still says it
    # is newer than the newest version, and the burst is kept once quiet.
    await asyncio.sleep(QUIET + 0.1)
    again = DeriveFollower(store)
    await again.step()
    assert again.cursor == first.cursor
    assert await sync_to_async(texts)(note.doc_id) == ["start 😀 one lost?", "start 😀 one", "start 😀"]
    summaries = await sync_to_async(versions_summaries)(doc_id=note.doc_id)
    assert summaries[0]["author"] == "alice"


async def test_a_document_only_created_gets_its_first_versions_with_its_first_edits(
    store: Any, process_mode: None, make_folder: Any
) -> None:
    folder = await sync_to_async(make_folder)("Fresh")
    created = await document_create(store=store, folder=folder, path="/New.md", text="just made\n")
    await quiet_then_derive(store)
    # Nothing to keep: its text is its one logged row (an import leaves thousands of such documents).
    assert await sync_to_async(texts)(created.doc_id) == []
    # A follower started afresh does not take it up again either.
    await DeriveFollower(store).step()
    assert await sync_to_async(texts)(created.doc_id) == []

    await append(store, created.doc_id, "edited\n", author="alice")
    await derive_pending(store)
    assert await sync_to_async(texts)(created.doc_id) == ["just made\n"]  # the text before the edit
    await quiet_then_derive(store)
    assert await sync_to_async(texts)(created.doc_id) == ["just made\nedited\n", "just made\n"]
    assert not await DocVersion.objects.filter(doc_id=folder.doc_id).aexists()  # folders have none


async def test_a_failing_version_never_stops_the_follower(store: Any, note: Any, monkeypatch: Any) -> None:
    from lensrelay.history import recording

    def broken(**kwargs: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(recording, "version_record_burst_baseline", broken)
    await append(store, note.doc_id, " x", author="alice")
    handled = await derive_pending(store)
    assert note.doc_id in handled  # the other views ran, the cursor moved on
    await asyncio.sleep(QUIET + 0.1)
    await derive_pending(store)
    # No quiet version before its baseline was looked for: the baseline is tried again on each pass.
    assert await sync_to_async(texts)(note.doc_id) == []
    monkeypatch.undo()
    await derive_pending(store)
    assert await sync_to_async(texts)(note.doc_id) == ["start 😀 x", "start 😀"]


async def test_a_pass_looks_for_a_few_baselines_and_for_a_long_burst_beyond_them(
    store: Any, process_mode: None, make_folder: Any, monkeypatch: Any, settings: Any
) -> None:
    """A team starting to type into many notes: their first versions are spread over passes (each a state
    rebuilt and a write), except a burst so long that a compaction could soon fold the text before it."""
    folder = await sync_to_async(make_folder)("Lens")
    notes = [
        await document_create(store=store, folder=folder, path=f"/N{n}.md", text=f"note {n}")
        for n in range(7)
    ]
    follower = follower_for(store)
    await follower.step()  # their creations: nothing to keep before a first edit
    monkeypatch.setattr(listen, "BASELINES_PER_PASS", 2)
    settings.LENSRELAY_COMPACT_AFTER_UPDATES = 40  # a burst of 10 rows is urgent
    short, long = notes[:4], notes[4:]
    for note in short:
        await append(store, note.doc_id, " edited", author="alice")
    for note in long:
        for n in range(10):
            await append(store, note.doc_id, f" {n}", author="bob")

    def versioned() -> set[str]:
        return set(DocVersion.objects.values_list("doc_id", flat=True))

    await follower.step()
    assert await sync_to_async(versioned)() == {note.doc_id for note in long}
    await follower.step()
    assert len(await sync_to_async(versioned)()) == 5
    await follower.step()
    assert len(await sync_to_async(versioned)()) == 7
    for n, note in enumerate(notes):
        assert await sync_to_async(texts)(note.doc_id) == [f"note {n}"]
