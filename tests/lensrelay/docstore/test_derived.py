"""Derived views converge with the documents after a burst over 100 notes (backlinks, search, versions and
MCP resource notifications from the derive process's follower; the suggestion follower, which stays in the
server), and the follower resumes from its durable cursor."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pycrdt import Text

from lensrelay.docstore import folderdoc, persistence
from lensrelay.docstore.derived import (
    DeriveFollower,
    cursor_load,
    cursor_save,
    derive_pending,
    feed_read,
    follower_for,
)
from lensrelay.docstore.modified import MODIFIED_RESOLUTION_SECONDS
from lensrelay.docstore.offsets import text_replace
from lensrelay.docstore.store import DocStore
from lensrelay.history.models import DocVersion
from lensrelay.history.recording import state_text
from lensrelay.models import Document, YUpdate
from lensrelay.search.index import search_query, search_stale
from lensrelay.search.maintain import _markdown_documents
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create
from lensrelay.vault.paths import path_index
from suggestions.lifecycle.follow import outcome_in_text
from suggestions.lifecycle.proposing import EditSpec, Proposer, suggestion_propose_edits
from suggestions.models import Suggestion

pytestmark = pytest.mark.django_db(transaction=True)

NOTES = 100
_names = itertools.count()

# One edit: note i gets a unique word and links to the notes in `links` (self-links included: they are
# not backlinks, and the rebuild must agree).
edits = st.lists(
    st.tuples(st.integers(0, NOTES - 1), st.frozensets(st.integers(0, NOTES - 1), max_size=4)),
    min_size=1,
    max_size=300,
)


async def rewrite(store: DocStore, doc_id: str, text: str) -> None:
    room = await store.get(doc_id)
    assert room is not None
    ytext = room.doc.get("contents", type=Text)
    with room.transact():
        text_replace(ytext, current=str(ytext), start=0, end=len(str(ytext)), value=text)


def expected_backlinks(uuids: list[str], links: dict[int, frozenset[int]]) -> dict[str, list[str]]:
    """The from-scratch answer, computed without the indexer: `[[N{j}]]` is note j by its basename."""
    found: dict[str, list[str]] = {}
    for source, targets in links.items():
        for target in targets:
            if target != source:
                found.setdefault(uuids[target], []).append(uuids[source])
    return {target: sorted(sources) for target, sources in found.items()}


def version_texts(doc_id: str) -> list[str]:
    """The document's versions' texts, newest first."""
    states = (
        DocVersion.objects.filter(doc_id=doc_id).order_by("-upto_update_id").values_list("state", flat=True)
    )
    return [state_text(bytes(state)) for state in states]


def subscribe(session_id: str, notes: list[Any]) -> None:
    from mcp_tools.models import McpSubscription
    from tests.mcp_tools.notifications.test_produce import listening

    listening(session_id)
    for note in notes:
        McpSubscription.objects.create(session_id=session_id, uri=f"lens://{note.doc_id}", doc_id=note.doc_id)


def notified(session_id: str) -> set[str]:
    from mcp_tools.models import McpEvent

    messages = McpEvent.objects.filter(session_id=session_id).values_list("message", flat=True)
    return {m["params"]["uri"] for m in messages if m.get("method") == "notifications/resources/updated"}


async def scenario(ops: list[tuple[int, frozenset[int]]]) -> None:
    store = DocStore(asyncio.get_running_loop())
    try:
        name = f"Burst{next(_names)}"
        folder = await store.db(folder_create, name=name)
        notes = [
            await document_create(store=store, folder=folder, path=f"/N{i}.md", text=f"note{i}\n")
            for i in range(NOTES)
        ]
        await derive_pending(store)
        # MCP resource notifications: a session subscribed to the first ten notes.
        await store.db(subscribe, name, notes[:10])
        # So does the suggestion follower: pending suggestions on five notes.
        index = path_index(store)
        await index.ensure()
        rows = []
        for note in notes[10:15]:
            entry = index.by_doc_id(note.doc_id)
            assert entry is not None
            outcome = await suggestion_propose_edits(
                store=store,
                entry=entry,
                proposer=Proposer(author="claude"),
                specs=[EditSpec(old_string="note", new_string="memo")],
                tool="edit",
            )
            assert outcome.suggestion is not None
            rows.append(outcome.suggestion)
        links: dict[int, frozenset[int]] = {}
        words: dict[int, str] = {}
        for n, (i, targets) in enumerate(ops):
            words[i] = f"word{i}x{n}"
            links[i] = targets
            text = words[i] + " " + " ".join(f"[[N{j}]]" for j in sorted(targets)) + "\n"
            await rewrite(store, notes[i].doc_id, text)
        for note in notes:
            room = store.rooms[note.doc_id]
            await room.flushed()

        # The last change of a burst gets its modified time a moment later (docstore.modified);
        # the from-scratch comparison below reads that time, so let it land before deriving.
        await asyncio.sleep(MODIFIED_RESOLUTION_SECONDS + 0.2)
        # A follower that starts now (a restarted derive process) resumes from the saved cursor.
        fresh = DeriveFollower(store)
        handled = set()
        while True:
            before = fresh.cursor
            handled |= await fresh.step()
            if fresh.cursor == before:
                break
        assert {notes[i].doc_id for i, _ in ops} <= handled

        folder_room = await store.get(folder.doc_id)
        assert folder_room is not None
        want = expected_backlinks([note.uuid for note in notes], links)
        assert folderdoc.backlinks(folder_room.doc) == want

        # Search: every note's latest word finds it, an overwritten word finds nothing, and the index
        # agrees with the document rows (what a from-scratch comparison would reindex is nothing).
        for i, word in words.items():
            hits = await store.db(search_query, query=word, folder_ids={folder.pk})
            assert [hit.doc_id for hit in hits] == [notes[i].doc_id]
        stale = await store.db(
            lambda: search_stale(documents=_markdown_documents(folder_id=folder.pk), folder_id=folder.pk)
        )
        assert stale == ([], [])
        assert await store.db(cursor_load) == fresh.cursor

        # Versions (quiet at once here): every edited note's newest version is its text now, and the
        # text it was created with is kept, whichever follower read its edits; a note only created has
        # none (its text is its one logged row).
        for i, note in enumerate(notes):
            kept = await store.db(version_texts, note.doc_id)
            now = await store.db(persistence.stored_text, note.doc_id)
            if now == f"note{i}\n":
                assert kept in ([], [now]), note.path
            else:
                assert kept[:1] == [now] and f"note{i}\n" in kept, (note.path, kept)
        last_edited, _ = ops[-1]
        assert await store.db(version_texts, notes[last_edited].doc_id)

        # Notifications agree with the burst: every subscribed note that was edited is told, and no note
        # nobody subscribed to. (The follower started afresh re-reads the window below its cursor, the
        # notes' creation included: a restart tells at least once.)
        want_told = {f"lens://{notes[i].doc_id}" for i, _ in ops if i < 10}
        told = await store.db(notified, name)
        assert want_told <= told <= {f"lens://{note.doc_id}" for note in notes[:10]}

        # The follower agrees with the suggestions' outcomes worked out afresh from the texts now.
        def statuses() -> dict[int, str]:
            return dict(Suggestion.objects.filter(pk__in=[r.pk for r in rows]).values_list("pk", "status"))

        want_status: dict[int, str] = {}
        for row in rows:
            fresh_row = await store.db(Suggestion.objects.get, pk=row.pk)
            room = await store.get(row.doc_id)
            assert room is not None
            want_status[row.pk] = outcome_in_text(room, fresh_row) or "pending"
        assert set(want_status.values()) <= {"pending", "stale"}
        found: dict[int, str] = {}
        for _ in range(50):
            found = await store.db(statuses)
            if found == want_status:
                break
            await asyncio.sleep(0.1)
        assert found == want_status
        edited = {notes[i].doc_id for i, _ in ops}
        assert {pk for pk, status in found.items() if status == "pending"} == {
            row.pk for row in rows if row.doc_id not in edited
        }
    finally:
        await store.close()


@hsettings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=edits)
def test_derived_views_converge_after_a_burst_over_a_hundred_notes(ops: Any, settings: Any) -> None:
    settings.LENSRELAY_DERIVED_WORK = "process"
    settings.LENSRELAY_VERSIONS_QUIET_SECONDS = 0
    # The last edit is of a subscribed note, so the notifications check is never vacuous.
    asyncio.run(scenario([*ops, (0, frozenset({1}))]))


async def test_process_mode_leaves_the_live_path_alone(store: DocStore, settings: Any) -> None:
    """With a derive process, the server's own listeners derive nothing: the index changes only when the
    follower runs, and then at once."""
    settings.LENSRELAY_DERIVED_WORK = "process"
    folder = await store.db(folder_create, name="Live")
    target = await document_create(store=store, folder=folder, path="/Target.md", text="target\n")
    source = await document_create(store=store, folder=folder, path="/Source.md", text="plain\n")
    await derive_pending(store)
    await rewrite(store, source.doc_id, "uniqueword [[Target]]\n")
    await store.rooms[source.doc_id].flushed()
    await asyncio.sleep(1.5)  # longer than any inline debounce
    room = await store.get(folder.doc_id)
    assert room is not None
    assert folderdoc.backlinks(room.doc) == {}
    assert await store.db(search_query, query="uniqueword", folder_ids={folder.pk}) == []
    handled = await derive_pending(store)
    assert source.doc_id in handled
    assert folderdoc.backlinks(room.doc) == {target.uuid: [source.uuid]}
    hits = await store.db(search_query, query="uniqueword", folder_ids={folder.pk})
    assert [hit.doc_id for hit in hits] == [source.doc_id]
    # Nothing new: a pass handles nothing, and the cursor stays. (The backlinks it wrote are a logged
    # change of the folder document, which may land after the pass: read them first.)
    await room.flushed()
    await follower_for(store).step()
    cursor = follower_for(store).cursor
    assert await follower_for(store).step() == set()
    assert follower_for(store).cursor == cursor
    assert await store.db(lambda: Document.objects.filter(folder=folder).count()) == 2


async def test_a_compaction_of_rows_never_read_is_handled_once_not_on_every_pass(
    store: DocStore, settings: Any
) -> None:
    """Rows folded before the follower read them leave a snapshot past its cursor, and no later row moves
    the cursor past it: the note is handled on the next pass, then not again (it would be told to its
    subscribers on every pass)."""
    settings.LENSRELAY_DERIVED_WORK = "process"
    folder = await store.db(folder_create, name="Folded")
    note = await document_create(store=store, folder=folder, path="/Note.md", text="one\n")
    await derive_pending(store)
    for n in range(5):
        await rewrite(store, note.doc_id, f"edit {n}\n")
    await store.rooms[note.doc_id].flushed()
    assert await store.db(persistence.compact, note.doc_id) > 0
    follower = follower_for(store)
    assert note.doc_id in await follower.step()
    for _ in range(3):
        assert await follower.step() == set()
    # A follower started afresh (a restart) handles it once more, then not again either.
    fresh = DeriveFollower(store)
    assert note.doc_id in await fresh.step()
    assert await fresh.step() == set()


def test_a_cursor_that_exists_is_saved_in_one_update() -> None:
    cursor_save(last_update_id=5, name="a-view")  # the first save makes it
    assert cursor_load(name="a-view") == 5
    with CaptureQueriesContext(connection) as queries:
        cursor_save(last_update_id=9, name="a-view")
    # Each pass saves its cursor; a read before the write and a savepoint were two statements too many.
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["UPDATE"]
    assert cursor_load(name="a-view") == 9
    assert cursor_load() != 9  # another cursor is left alone


def test_the_feed_turns_only_unhandled_rows_into_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """The window below the cursor is read on every pass for late commits: its handled rows give their ids,
    not their authors and times (turning those into datetimes was a fifth of a profile of the derive process
    at a team's load)."""
    ids = [YUpdate.objects.create(doc_id=f"d{n % 7}", data=b"\x00\x00", author=f"a{n}").pk for n in range(60)]
    cursor = ids[49]
    late = ids[20]  # committed after rows logged later than it: not handled yet
    handled = frozenset(ids[:50]) - {late}
    # SQLite's times are turned into datetimes in Python, row by row (PostgreSQL's driver does it in C).
    turned: list[object] = []
    if connection.vendor == "sqlite":
        convert = connection.ops.convert_datetimefield_value  # type: ignore[attr-defined]

        def counted(value: object, *args: Any) -> Any:
            turned.append(value)
            return convert(value, *args)

        monkeypatch.setattr(connection.ops, "convert_datetimefield_value", counted)
    read = feed_read(after_id=0, cursor=cursor, handled=handled)
    assert [row.id for row in read.rows] == [late, *ids[50:]]
    assert [row.author for row in read.rows] == ["a20", *(f"a{n}" for n in range(50, 60))]
    assert read.newest == ids[-1]
    assert len(turned) == (11 if connection.vendor == "sqlite" else 0)
    # Read by plain statements, the times are the ORM's: aware, the same instants.
    stored = dict(YUpdate.objects.filter(id__in=[late, *ids[50:]]).values_list("id", "created"))
    assert [row.created for row in read.rows] == [stored[row.id] for row in read.rows]
    assert all(row.created.tzinfo is not None for row in read.rows)
    # Nothing after the cursor and nothing late: nothing to turn, the newest id still known.
    turned.clear()
    read = feed_read(after_id=0, cursor=ids[-1], handled=frozenset(ids))
    assert (read.rows, read.newest, turned) == ([], ids[-1], [])
