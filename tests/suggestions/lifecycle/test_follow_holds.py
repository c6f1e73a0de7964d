"""The follower's rule against operations in other processes (suggestions.lifecycle.follow): a held document
is left for the next pass; otherwise a row is settled only when the text read before the rows (T1) and the
text read after them (T2) show the same decision. Each interleaving is forced: the follower's look runs at the
exact point of an operation (between its markup write and its row write), or an operation runs entirely
between T1 and the rows' statement. The follower runs as the derive process runs it (process mode: the
server's own follower is off), through `look` and the feed view."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.utils import timezone
from pycrdt import Text

from lensrelay.docstore.derived import FeedRow, FeedStep
from lensrelay.docstore.offsets import text_replace
from lensrelay.vault.documents import document_create
from suggestions.lifecycle import cleaning, follow, proposing
from suggestions.lifecycle.claims import settle_undo
from suggestions.lifecycle.cleaning import suggestion_clean_up_in_store
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.lifecycle.follow import FollowerView, holding, look
from suggestions.lifecycle.undoing import suggestions_undo_decided
from suggestions.models import Suggestion, SuggestionHold
from tests.suggestions.lifecycle.test_restoring import propose

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = "Plants make sugar from light.\n"


@pytest.fixture(autouse=True)
def process_mode(settings: Any) -> None:
    settings.LENSRELAY_DERIVED_WORK = "process"  # nothing follows in the background: each look is ours


async def a_note(store: Any, make_folder: Any, name: str = "Leaf") -> Any:
    folder = await sync_to_async(make_folder)(f"Lens {name}")
    return await document_create(store=store, folder=folder, path=f"/{name}.md", text=TEXT)


async def a_proposal(store: Any, make_folder: Any) -> tuple[Any, Suggestion]:
    """A note with one pending suggestion: sugar → glucose."""
    note = await a_note(store, make_folder)
    return note, await propose(store, note.doc_id, "sugar", "glucose")


async def person_decides(store: Any, doc_id: str, *, keep: str) -> None:
    """What an editor's accept or reject does: the markup becomes one of its words."""
    room = await store.get(doc_id)
    ytext = room.doc.get("contents", type=Text)
    current = str(ytext)
    start = current.index("{--")
    end = current.index("++}", start) + 3
    with room.transact():
        text_replace(ytext, current=current, start=start, end=end, value=keep)
    await room.flushed()


def status(pk: int) -> str:
    return str(Suggestion.objects.get(pk=pk).status)


async def looked(store: Any, doc_id: str, pk: int) -> str:
    """Look at the note (nothing left for later) and give the row's status."""
    assert await look(store, [doc_id]) == set()
    return await sync_to_async(status)(pk)


Db = Callable[..., Awaitable[Any]]


def intercept(
    monkeypatch: pytest.MonkeyPatch, store: Any, fn: Any, before: Callable[[], Awaitable[None]]
) -> None:
    """Run `before` once, right before the store's first database call of `fn`."""
    real: Db = store.db
    done = False

    async def db(called: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal done
        if called is fn and not done:
            done = True
            await before()
        return await real(called, *args, **kwargs)

    monkeypatch.setattr(store, "db", db)


async def test_a_look_during_a_superseding_proposal_leaves_the_held_note_alone(
    store: Any, make_folder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    note, first = await a_proposal(store, make_folder)
    seen: dict[str, Any] = {}

    async def the_follower_looks() -> None:
        # The new markup is written (and logged), the rows not yet: the first row's markup is gone.
        seen["again"] = await look(store, [note.doc_id])
        seen["status"] = await sync_to_async(status)(first.pk)

    intercept(monkeypatch, store, proposing._save_suggestion, the_follower_looks)
    second = await propose(store, note.doc_id, "glucose", "fructose")
    assert seen == {"again": {note.doc_id}, "status": "pending"}
    assert await sync_to_async(status)(first.pk) == "superseded"
    monkeypatch.undo()
    assert await looked(store, note.doc_id, first.pk) == "superseded"
    assert await sync_to_async(status)(second.pk) == "pending"
    assert not await SuggestionHold.objects.aexists()  # released


async def test_a_proposal_done_between_the_first_reading_and_the_rows_decides_nothing(
    store: Any, make_folder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    note, first = await a_proposal(store, make_folder)
    made: list[Suggestion] = []

    async def a_whole_proposal() -> None:
        made.append(await propose(store, note.doc_id, "glucose", "fructose"))

    # T1 holds the first row's markup, the rows say it was superseded, T2 holds the second's markup.
    intercept(monkeypatch, store, follow.pending_and_holds, a_whole_proposal)
    assert await look(store, [note.doc_id]) <= {note.doc_id}  # the second row's markup: not in T1
    assert made
    assert await sync_to_async(status)(first.pk) == "superseded"
    assert await sync_to_async(status)(made[0].pk) == "pending"
    monkeypatch.undo()
    assert await looked(store, note.doc_id, first.pk) == "superseded"
    assert await sync_to_async(status)(made[0].pk) == "pending"


async def test_a_person_who_removes_the_markup_decides(store: Any, make_folder: Any) -> None:
    note, kept = await a_proposal(store, make_folder)
    await person_decides(store, note.doc_id, keep="glucose")
    assert await looked(store, note.doc_id, kept.pk) == "accepted"

    other = await a_note(store, make_folder, "Other")
    dropped = await propose(store, other.doc_id, "light", "the sun")
    await person_decides(store, other.doc_id, keep="light")
    assert await looked(store, other.doc_id, dropped.pk) == "rejected"


async def type_at(store: Any, doc_id: str, *, after: str, insert: str = "", remove: int = 0) -> None:
    room = await store.get(doc_id)
    ytext = room.doc.get("contents", type=Text)
    current = str(ytext)
    at = current.index(after) + len(after)
    with room.transact():
        text_replace(ytext, current=current, start=at, end=at + remove, value=insert)
    await room.flushed()


async def test_two_readings_that_disagree_decide_nothing_and_look_again(
    store: Any, make_folder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    note, row = await a_proposal(store, make_folder)
    await type_at(store, note.doc_id, after="glu", insert="-x-")  # T1: typed inside, stale
    real = store.catch_up

    async def typed_away_first() -> int:  # T2: the typing undone, the markup as proposed again
        await type_at(store, note.doc_id, after="glu", remove=3)
        return int(await real())

    monkeypatch.setattr(store, "catch_up", typed_away_first)
    again = await look(store, [note.doc_id])
    monkeypatch.undo()
    assert again == {note.doc_id}
    assert await sync_to_async(status)(row.pk) == "pending"
    assert await looked(store, note.doc_id, row.pk) == "pending"
    await person_decides(store, note.doc_id, keep="glucose")
    assert await looked(store, note.doc_id, row.pk) == "accepted"


async def test_a_held_note_is_looked_at_again_on_the_next_pass_without_an_edit(
    store: Any, make_folder: Any
) -> None:
    note, row = await a_proposal(store, make_folder)
    view = FollowerView(store)
    await view.step(FeedStep(rows=[], compacted=[], kinds={}))  # the first pass: rows known from now on
    hold = await SuggestionHold.objects.acreate(
        doc_id=note.doc_id, expires_at=timezone.now() + timedelta(seconds=60)
    )
    await person_decides(store, note.doc_id, keep="sugar")
    changed = FeedRow(id=1, doc_id=note.doc_id, author="", created=timezone.now())
    await view.step(FeedStep(rows=[changed], compacted=[], kinds={note.doc_id: "content"}))
    assert await sync_to_async(status)(row.pk) == "pending"
    assert view.again == {note.doc_id}
    await hold.adelete()
    await view.step(FeedStep(rows=[], compacted=[], kinds={}))  # nothing new in the log
    assert await sync_to_async(status)(row.pk) == "rejected"
    assert view.again == set()


async def test_a_row_written_after_its_markup_was_removed_is_found_by_the_next_pass(
    store: Any, make_folder: Any
) -> None:
    note = await a_note(store, make_folder)
    view = FollowerView(store)
    await view.step(FeedStep(rows=[], compacted=[], kinds={}))
    row = await propose(store, note.doc_id, "sugar", "glucose")
    await person_decides(store, note.doc_id, keep="glucose")
    await view.step(FeedStep(rows=[], compacted=[], kinds={}))  # no log row: found as a new pending row
    assert await sync_to_async(status)(row.pk) == "accepted"


async def test_an_expired_hold_does_not_block(store: Any, make_folder: Any) -> None:
    note, row = await a_proposal(store, make_folder)
    await SuggestionHold.objects.acreate(doc_id=note.doc_id, expires_at=timezone.now() - timedelta(seconds=1))
    await person_decides(store, note.doc_id, keep="sugar")
    assert await looked(store, note.doc_id, row.pk) == "rejected"


async def test_holding_releases_even_when_the_operation_fails(store: Any) -> None:
    with pytest.raises(RuntimeError):
        async with holding(store, "a", "b", "a"):
            assert await SuggestionHold.objects.acount() == 2
            raise RuntimeError("boom")
    assert not await SuggestionHold.objects.aexists()


async def test_a_clean_up_is_recorded_as_the_reviewers_not_as_an_editors(
    store: Any, make_folder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = await sync_to_async(User.objects.create_superuser)("rita", "r@example.org", "pw")
    note, row = await a_proposal(store, make_folder)
    seen: dict[str, Any] = {}

    async def the_follower_looks() -> None:  # the markup is gone, the row not yet written
        seen["again"] = await look(store, [note.doc_id])

    intercept(monkeypatch, store, cleaning._record_clean_up, the_follower_looks)
    decision = await suggestion_clean_up_in_store(store=store, suggestion=row, user=user)
    assert decision.ok, decision
    assert seen == {"again": {note.doc_id}}
    fresh = await Suggestion.objects.aget(pk=row.pk)
    assert (fresh.status, fresh.decided_by_id, fresh.note) == ("rejected", user.pk, cleaning.CLEANED_NOTE)


async def test_an_undo_is_not_read_as_a_decision_on_the_way(
    store: Any, make_folder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = await sync_to_async(User.objects.create_superuser)("rita", "r@example.org", "pw")
    note, row = await a_proposal(store, make_folder)
    decided = await suggestion_decide(store=store, suggestion=row, user=user, accept=True)
    assert decided.ok, decided
    seen: dict[str, Any] = {}

    async def the_follower_looks() -> None:  # the markup is back, the row not pending yet
        before = await sync_to_async(status)(row.pk)
        await look(store, [note.doc_id])
        seen["unchanged"] = before == await sync_to_async(status)(row.pk)

    intercept(monkeypatch, store, settle_undo, the_follower_looks)
    undone = await suggestions_undo_decided(store=store, suggestions=[row], user=user)
    assert undone.ok, undone
    assert seen == {"unchanged": True}
    monkeypatch.undo()
    assert await looked(store, note.doc_id, row.pk) == "pending"


# -- hostile and malformed -------------------------------------------------------------------------------


async def test_holds_and_rows_naming_notes_the_follower_cannot_load_change_nothing(
    store: Any, make_folder: Any
) -> None:
    _, row = await a_proposal(store, make_folder)
    ghost = "00000000-0000-0000-0000-000000000000"
    hostile = "x' OR '1'='1"
    for doc_id in (ghost, hostile):
        await SuggestionHold.objects.acreate(doc_id=doc_id, expires_at=timezone.now() + timedelta(seconds=60))
        await Suggestion.objects.acreate(
            doc_id=doc_id, path="/Ghost.md", author="x", tool="edit", hunks=[{"start": "?"}]
        )
    assert await look(store, [ghost, hostile]) == set()
    view = FollowerView(store)
    feed = FeedStep(
        rows=[FeedRow(id=1, doc_id=d, author="", created=timezone.now()) for d in (ghost, hostile)],
        compacted=[(ghost, 5)],
        kinds={ghost: "content", hostile: "folder"},
    )
    await view.step(feed)  # nothing to load: no error, and the real note's row is untouched
    await view.step(FeedStep(rows=[], compacted=[], kinds={}))
    assert await sync_to_async(status)(row.pk) == "pending"
    assert await Suggestion.objects.filter(doc_id__in=[ghost, hostile], status="pending").acount() == 2


async def test_a_row_with_malformed_positions_is_never_decided_from_them(
    store: Any, make_folder: Any
) -> None:
    note, row = await a_proposal(store, make_folder)
    garbage = [{"start": "not a position", "old": "sugar", "new": "glucose"}, {"start": {"item": None}}]
    await Suggestion.objects.filter(pk=row.pk).aupdate(hunks=garbage)
    await person_decides(store, note.doc_id, keep="sugar")
    # Positions that do not resolve leave the row undecided (a panic caught, logged), never a decision.
    assert await looked(store, note.doc_id, row.pk) == "pending"
    unreadable = [{"old": "sugar", "new": "glucose"}]  # no position at all: stale
    await Suggestion.objects.filter(pk=row.pk).aupdate(hunks=unreadable)
    assert await looked(store, note.doc_id, row.pk) == "stale"


def test_pending_or_held_reads_marked_pending_rows_and_standing_holds_in_one_statement() -> None:
    """The derive process asks on every pass; one plain statement per 500 notes (the ORM's union cost more
    to build than to answer, issue 36)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def row(doc_id: str, **fields: Any) -> None:
        Suggestion.objects.create(doc_id=doc_id, path=f"L/{doc_id}.md", author="bot", tool="edit", **fields)

    def hold(doc_id: str, seconds: float) -> None:
        SuggestionHold.objects.create(doc_id=doc_id, expires_at=timezone.now() + timedelta(seconds=seconds))

    row("edited")
    row("created", kind=Suggestion.Kind.CREATE)
    row("moved", kind=Suggestion.Kind.MOVE)  # no markup: not the follower's
    row("accepted", status=Suggestion.Status.ACCEPTED)
    row("held")
    hold("held", 60)
    hold("only-held", 60)
    row("expired")
    hold("expired", -1)
    row("quoted'); DROP TABLE suggestions_suggestion; --")
    asked = ["edited", "created", "moved", "accepted", "held", "only-held", "expired", "unknown"]
    asked.append("quoted'); DROP TABLE suggestions_suggestion; --")
    with CaptureQueriesContext(connection) as queries:
        pending, held = follow.pending_or_held(asked)
    assert pending == {
        "edited",
        "created",
        "held",
        "expired",
        "quoted'); DROP TABLE suggestions_suggestion; --",
    }
    assert held == {"held", "only-held"}
    assert len(queries.captured_queries) == 1
    many = [f"n{n}" for n in range(1200)]
    row("n1100")
    with CaptureQueriesContext(connection) as queries:
        assert follow.pending_or_held(many) == ({"n1100"}, set())
    assert len(queries.captured_queries) == 3
    assert Suggestion.objects.count() == 8  # the quoted id harmed nothing
    # The follower's other read each pass: pending rows with markup above a pk, with their notes.
    first = Suggestion.objects.order_by("pk").first()
    assert first is not None
    assert sorted(follow.new_pending(above=first.pk - 1)) == sorted(
        Suggestion.objects.filter(status="pending", kind__in=["edit", "create"]).values_list("pk", "doc_id")
    )
    assert {doc_id for _, doc_id in follow.new_pending(above=first.pk)} == {
        "created",
        "held",
        "expired",
        "quoted'); DROP TABLE suggestions_suggestion; --",
        "n1100",
    }
