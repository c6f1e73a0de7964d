"""Versions are recorded at compaction and when edits go quiet, once per state across workers, and pruned."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from pycrdt import Text

from lensrelay.docstore import persistence
from lensrelay.docstore.room import Origin
from lensrelay.history import listen
from lensrelay.history.models import DocVersion
from lensrelay.history.recording import Retention, state_text, version_record, versions_prune
from lensrelay.history.selectors import versions_summaries
from lensrelay.models import YUpdate
from lensrelay.vault.documents import document_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
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
        for v in DocVersion.objects.filter(doc_id=doc_id).order_by("-created", "-id")
    ]


async def test_each_compaction_keeps_a_version_naming_who_wrote_it(store: Any, note: Any) -> None:
    room = await store.get(note.doc_id)
    await append(store, note.doc_id, " one", author="alice")
    await store.compact(room)
    await append(store, note.doc_id, " two", author="bob")
    await append(store, note.doc_id, " three", author="carol")
    await store.compact(room)
    await store.compact(room)  # nothing new: no version
    found = await sync_to_async(texts)(note.doc_id)
    # The baseline (the text before this process first edited it), then one per compaction.
    assert found == ["start 😀 one two three", "start 😀 one", "start 😀"]
    summaries = await sync_to_async(versions_summaries)(doc_id=note.doc_id)
    assert [s["author"] for s in summaries] == ["bob, carol", "alice", ""]
    assert [s["isLatest"] for s in summaries] == [True, False, False]
    assert summaries[0]["size"] == len("start 😀 one two three".encode())
    assert await sync_to_async(YUpdate.objects.filter(doc_id=note.doc_id).count)() == 0


async def test_a_quiet_edit_burst_becomes_a_version(store: Any, note: Any, settings: Any) -> None:
    settings.LENSRELAY_VERSIONS_QUIET_SECONDS = 0.2
    await append(store, note.doc_id, " a", author="alice")
    await append(store, note.doc_id, " b", author="alice")
    quiet = listen.quiet_for(store)
    assert note.doc_id in quiet.timers
    for _ in range(100):
        if len(await sync_to_async(texts)(note.doc_id)) == 2:
            break
        await store.db(lambda: None)
        import asyncio

        await asyncio.sleep(0.05)
    assert await sync_to_async(texts)(note.doc_id) == ["start 😀 a b", "start 😀"]
    summaries = await sync_to_async(versions_summaries)(doc_id=note.doc_id)
    assert summaries[0]["author"] == "alice"


def test_two_workers_recording_the_same_state_keep_one_version(transactional_db: None) -> None:
    from lensrelay.models import YDoc

    YDoc.objects.create(doc_id="doc-1", kind=YDoc.Kind.STANDALONE)
    from pycrdt import Doc

    doc: Doc[Any] = Doc()
    doc.get("contents", type=Text).insert(0, "same text")
    state = doc.get_update()
    barrier = threading.Barrier(4)
    results: list[Any] = []

    def worker(upto: int) -> None:
        try:
            barrier.wait()
            results.append(version_record(doc_id="doc-1", state=state, upto_update_id=upto, authors=[]))
        finally:
            connection.close()

    # Two pairs: the same state seen at the same log id, and the same text at a later id.
    threads = [threading.Thread(target=worker, args=(upto,)) for upto in (5, 5, 6, 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(1 for r in results if r is not None) == 1
    assert DocVersion.objects.filter(doc_id="doc-1").count() == 1


def test_retention_keeps_recent_versions_one_per_older_day_and_at_most_max(transactional_db: None) -> None:
    now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    made = {}
    for label, when in {
        "now": now,
        "hour ago": now - timedelta(hours=1),
        "2 days ago": now - timedelta(days=2),
        "10 days ago late": now - timedelta(days=10, hours=-3),
        "10 days ago early": now - timedelta(days=10, hours=3),
        "11 days ago": now - timedelta(days=11),
    }.items():
        made[label] = DocVersion.objects.create(
            doc_id="d", created=when, upto_update_id=len(made), state=b"", size=0, text_hash=label
        ).pk
    deleted = versions_prune(doc_id="d", retention=Retention(keep_all_days=7, max_count=10), now=now)
    assert deleted == 1
    left = set(DocVersion.objects.filter(doc_id="d").values_list("text_hash", flat=True))
    assert left == {"now", "hour ago", "2 days ago", "10 days ago late", "11 days ago"}
    versions_prune(doc_id="d", retention=Retention(keep_all_days=7, max_count=3), now=now)
    assert list(DocVersion.objects.filter(doc_id="d").values_list("text_hash", flat=True)) == [
        "now",
        "hour ago",
        "2 days ago",
    ]
    versions_prune(
        doc_id="d", retention=Retention(keep_all_days=0, max_count=3), now=now + timedelta(days=30)
    )
    # Only the newest of each day beyond the window: "hour ago" shares its day with "now".
    assert list(DocVersion.objects.filter(doc_id="d").values_list("text_hash", flat=True)) == [
        "now",
        "2 days ago",
    ]


async def test_recording_prunes_to_the_configured_maximum(store: Any, note: Any, settings: Any) -> None:
    settings.LENSRELAY_VERSIONS_MAX = 2
    room = await store.get(note.doc_id)
    for n in range(4):
        await append(store, note.doc_id, f" {n}", author="alice")
        await store.compact(room)
    assert await sync_to_async(texts)(note.doc_id) == ["start 😀 0 1 2 3", "start 😀 0 1 2"]


async def test_a_failing_version_record_never_undoes_the_compaction(
    store: Any, note: Any, monkeypatch: Any
) -> None:
    def broken(done: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(persistence, "_compaction_listeners", [broken])
    await append(store, note.doc_id, " x", author="alice")
    folded = await store.db(persistence.compact, note.doc_id)
    assert folded >= 1
    assert await sync_to_async(YUpdate.objects.filter(doc_id=note.doc_id).count)() == 0
    assert await store.db(persistence.stored_text, note.doc_id) == "start 😀 x"


def test_snapshots_of_finds_hostile_ids_and_binds_them_on_postgresql() -> None:
    from django.test.utils import CaptureQueriesContext

    from lensrelay.history.recording import snapshots_of
    from lensrelay.models import YSnapshot

    odd = ['quote"d', "back\\slash", "{brace},comma", "it's", "plain"]
    YSnapshot.objects.bulk_create(
        YSnapshot(doc_id=doc_id, data=b"", upto_update_id=n + 1) for n, doc_id in enumerate(odd)
    )
    with CaptureQueriesContext(connection) as queries:
        found = snapshots_of(doc_ids=[*odd, "never compacted", "x' OR '1'='1", "%", "{}"])
    assert found == {doc_id: n + 1 for n, doc_id in enumerate(odd)}
    assert snapshots_of(doc_ids=[]) == {}
    if connection.vendor == "postgresql":  # bound on the server: Django's cursors quoted nothing
        assert [q for q in queries.captured_queries if "ysnapshot" in q["sql"]] == []
