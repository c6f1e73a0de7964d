"""Versions kept by the derive process (LENSRELAY_DERIVED_WORK=process): the server keeps none, not per
update nor per compaction; the follower keeps the text before a document's first edits, each compaction it
reads and each edit burst once it has gone quiet, and a follower started afresh (a derive process killed
and started again) keeps what its predecessor had read but not kept."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext
from pycrdt import Text

from lensrelay.docstore.derived import DeriveFollower, derive_pending, follower_for
from lensrelay.docstore.room import Origin
from lensrelay.history import listen, recording
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

    monkeypatch.setattr(recording, "version_record_burst_baselines", broken)
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


def _first_row(doc_id: str) -> int:
    return YUpdate.objects.filter(doc_id=doc_id).order_by("id").values_list("id", flat=True)[0]


def _counted(record: Any, **kwargs: Any) -> tuple[Any, int]:
    """What a recording function returns, and the database queries it took."""
    with CaptureQueriesContext(connection) as queries:
        result = record(**kwargs)
    return result, len(queries)


async def _baselines(first_ids: dict[str, int]) -> tuple[dict[str, bool | None], int]:
    return await sync_to_async(_counted)(recording.version_record_burst_baselines, first_ids=first_ids)


async def _quiet_versions(doc_ids: list[str]) -> tuple[dict[str, Any], int]:
    return await sync_to_async(_counted)(recording.versions_record_stored, doc_ids=doc_ids)


async def test_a_pass_reads_and_writes_the_baselines_of_many_notes_in_the_same_few_queries(
    store: Any, process_mode: None, make_folder: Any
) -> None:
    folder = await sync_to_async(make_folder)("Lens")

    async def typed_into(prefix: str, count: int) -> dict[str, int]:
        first_ids = {}
        for n in range(count):
            made = await document_create(
                store=store, folder=folder, path=f"/{prefix}{n}.md", text=f"{prefix} {n}"
            )
            await append(store, made.doc_id, " typed", author=f"writer {n}")
            first_ids[made.doc_id] = await sync_to_async(_first_row)(
                made.doc_id
            )  # the burst began at creation
        return first_ids

    few, many = await typed_into("a", 2), await typed_into("b", 9)
    answers, few_queries = await _baselines(few)
    assert answers == dict.fromkeys(few, True)
    answers, many_queries = await _baselines(many)
    assert answers == dict.fromkeys(many, True)
    assert many_queries == few_queries <= 12, (few_queries, many_queries)
    for n, doc_id in enumerate(many):
        assert await sync_to_async(texts)(doc_id) == [f"b {n}"]  # the text it was created with
    # Asked again (a follower started afresh): they have a version, nothing more is written.
    answers, again = await _baselines(many)
    assert answers == dict.fromkeys(many, True)
    assert again < few_queries
    assert await DocVersion.objects.filter(doc_id__in=list(many)).acount() == len(many)


async def test_baselines_of_notes_only_created_compacted_or_not_versioned_at_all(
    store: Any, process_mode: None, make_folder: Any
) -> None:
    folder = await sync_to_async(make_folder)("Lens")

    async def note_with(name: str, *values: str) -> tuple[str, list[int]]:
        made = await document_create(store=store, folder=folder, path=f"/{name}.md", text=name)
        for value in values:
            await append(store, made.doc_id, value, author="alice")
        ids = await sync_to_async(
            lambda: list(
                YUpdate.objects.filter(doc_id=made.doc_id).order_by("id").values_list("id", flat=True)
            )
        )()
        return made.doc_id, ids

    created, created_rows = await note_with("Created")
    folded, folded_rows = await note_with("Folded", " x", " y")
    await store.compact(await store.get(folded))  # folds the rows before its burst (from " x") away
    before, _ = await note_with("Before", " x")
    await store.compact(await store.get(before))
    await append(
        store, before, " y", author="bob"
    )  # a burst after a compaction: its baseline is the snapshot
    before_burst = await sync_to_async(
        lambda: YUpdate.objects.filter(doc_id=before).values_list("id", flat=True).get()
    )()
    first_ids = {
        created: created_rows[0],
        folded: folded_rows[1],
        before: before_burst,
        folder.doc_id: 10**9,  # all it logged is before: found, but folders keep no versions
        "no-such-document": 1,
    }
    answers, _ = await _baselines(first_ids)
    assert answers == {
        created: None,
        folded: False,
        before: True,
        folder.doc_id: True,
        "no-such-document": None,
    }
    assert await sync_to_async(texts)(before) == ["Before x"]
    for doc_id in (created, folded, folder.doc_id):
        assert await sync_to_async(texts)(doc_id) == []


async def test_notes_going_quiet_together_are_kept_in_the_same_few_queries(
    store: Any, process_mode: None, make_folder: Any
) -> None:
    """A team that stops typing in many notes at once: their quiet versions are read and written together."""
    folder = await sync_to_async(make_folder)("Lens")

    async def typed_into(prefix: str, count: int) -> list[str]:
        doc_ids = []
        for n in range(count):
            made = await document_create(
                store=store, folder=folder, path=f"/{prefix}{n}.md", text=f"{prefix} {n}"
            )
            await append(store, made.doc_id, " typed", author=f"writer {n}")
            await append(store, made.doc_id, " more", author="zoe")
            doc_ids.append(made.doc_id)
        await sync_to_async(recording.version_record_burst_baselines)(
            first_ids={doc_id: await sync_to_async(_first_row)(doc_id) for doc_id in doc_ids}
        )
        return doc_ids

    few, many = await typed_into("a", 2), await typed_into("b", 9)
    kept, few_queries = await _quiet_versions(few)
    assert all(kept[doc_id] is not None for doc_id in few)
    kept, many_queries = await _quiet_versions(many)
    assert many_queries == few_queries <= 12, (few_queries, many_queries)
    for n, doc_id in enumerate(many):
        assert (
            kept[doc_id].upto_update_id
            == await sync_to_async(
                lambda doc_id=doc_id: (
                    YUpdate.objects.filter(doc_id=doc_id).order_by("-id").values_list("id", flat=True)[0]
                )
            )()
        )
        assert await sync_to_async(texts)(doc_id) == [f"b {n} typed more", f"b {n}"]
        # Who made it: the authors of the rows after the version before.
        assert kept[doc_id].author == f"writer {n}, zoe"
    # Nothing new since: asked again (another worker saw the same bursts go quiet), nothing more is kept.
    kept, _ = await _quiet_versions(many)
    assert kept == dict.fromkeys(many)
    assert await DocVersion.objects.filter(doc_id__in=many).acount() == 2 * len(many)


async def test_quiet_versions_of_notes_compacted_unversionable_unknown_or_undecodable(
    store: Any, process_mode: None, make_folder: Any, settings: Any, caplog: Any
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    settings.LENSRELAY_VERSIONS_MAX = 2
    notes = [
        await document_create(store=store, folder=folder, path=f"/N{n}.md", text=f"n{n}") for n in range(3)
    ]
    compacted, pruned, broken = (note.doc_id for note in notes)
    for value in (" x", " y"):
        for note in notes:
            await append(store, note.doc_id, value, author="alice")
        await sync_to_async(recording.versions_record_stored)(doc_ids=[compacted, pruned, broken])
    await append(store, compacted, " z", author="bob")
    await store.compact(await store.get(compacted))  # its state is now in its snapshot and no row
    await append(store, pruned, " z", author="bob")
    # A row no Yjs client could have written: that note cannot be read, the others are kept regardless.
    await YUpdate.objects.acreate(doc_id=broken, data=b"\xff\xfe not an update", author="mallory")

    kept = await sync_to_async(recording.versions_record_stored)(
        doc_ids=[compacted, pruned, broken, folder.doc_id, "no-such-document"]
    )
    assert kept[broken] is None and kept[folder.doc_id] is None and kept["no-such-document"] is None
    assert f"reading the stored state of {broken} failed" in caplog.text
    # The compacted note's state is its snapshot (the server keeps no version per compaction in this mode).
    assert await sync_to_async(texts)(compacted) == ["n0 x y z", "n0 x y"]
    # Retention keeps at most two: the oldest of three went in the same pass.
    assert await sync_to_async(texts)(pruned) == ["n1 x y z", "n1 x y"]
    assert await sync_to_async(texts)(broken) == ["n2 x y", "n2 x"]
    assert not await DocVersion.objects.filter(doc_id=folder.doc_id).aexists()


async def test_many_quiet_versions_are_written_a_few_notes_to_a_transaction(
    store: Any, process_mode: None, make_folder: Any, monkeypatch: Any
) -> None:
    """On SQLite a transaction holds the write lock the live path's appends wait for: a big pass is cut."""
    monkeypatch.setattr(recording, "VERSIONS_PER_TRANSACTION", 2)
    folder = await sync_to_async(make_folder)("Lens")
    doc_ids = []
    for n in range(5):
        made = await document_create(store=store, folder=folder, path=f"/N{n}.md", text=f"n{n}")
        await append(store, made.doc_id, " typed", author="alice")
        doc_ids.append(made.doc_id)

    def recorded() -> tuple[dict[str, Any], list[str]]:
        with CaptureQueriesContext(connection) as queries:
            kept = recording.versions_record_stored(doc_ids=doc_ids)
        return kept, [q["sql"] for q in queries.captured_queries]

    kept, sql = await sync_to_async(recorded)()
    assert all(kept[doc_id] is not None for doc_id in doc_ids)
    assert sum(1 for statement in sql if statement.startswith("INSERT")) == 3  # 2 + 2 + 1 notes
    for n, doc_id in enumerate(doc_ids):
        assert await sync_to_async(texts)(doc_id) == [f"n{n} typed"]
