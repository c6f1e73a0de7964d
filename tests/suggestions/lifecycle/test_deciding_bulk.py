"""Accept all / Reject all in slices (suggestions/lifecycle/deciding.py): each suggestion is still claimed,
changed and settled on its own (one winner against a reviewer deciding it alone at the same time, a stale one
left alone), while the database is visited twice per slice rather than three times per suggestion, the loop is
handed back between decisions, and a long note is parsed in a heavy-work process."""

from __future__ import annotations

import asyncio
import itertools
import math
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from pycrdt import Text

from lensrelay.docstore.offsets import text_insert
from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import path_index
from suggestions.lifecycle import deciding
from suggestions.lifecycle.deciding import suggestion_bulk_decide, suggestion_decide
from suggestions.lifecycle.proposing import EditSpec, Proposer, suggestion_propose_edits
from suggestions.markup.criticmarkup import own_changes
from suggestions.models import Suggestion

pytestmark = pytest.mark.django_db(transaction=True)

COUNT = 60


async def many_suggestions(store: Any, make_folder: Any) -> tuple[Any, list[Suggestion]]:
    folder = await sync_to_async(make_folder)("Lens")
    text = "".join(f"Line {n}: word{n} stays.\n" for n in range(COUNT))
    note = await document_create(store=store, folder=folder, path="/Many.md", text=text)
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(note.doc_id)
    assert entry is not None
    rows = []
    for n in range(COUNT):
        outcome = await suggestion_propose_edits(
            store=store,
            entry=entry,
            proposer=Proposer(author="claude"),
            specs=[EditSpec(f"word{n} stays", f"word{n} goes")],
            tool="edit",
        )
        assert outcome.suggestion is not None
        rows.append(outcome.suggestion)
    return note, rows


async def test_accept_all_decides_each_once_in_slices_beside_a_racing_reviewer(
    store: Any, make_folder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    note, rows = await many_suggestions(store, make_folder)
    # Every decision's parse in the heavy-work process, as for a long note (the loop checks the text).
    monkeypatch.setattr(deciding, "PARSE_ON_LOOP_CHARS", 0)
    alice, bob = await sync_to_async(
        lambda: (
            User.objects.create_superuser("alice", "alice@example.org", "pw"),
            User.objects.create_superuser("bob", "bob@example.org", "pw"),
        )
    )()
    room = await store.get(note.doc_id)
    ytext = room.doc.get("contents", type=Text)
    # A person typed inside suggestion 7's proposed words: it is stale, and stays in the note.
    raw = str(ytext)
    [typed] = own_changes(raw, rows[7].uid)
    with room.transact():
        text_insert(ytext, current=raw, index=raw.index("goes", typed.start) + 1, value="-")
    trips = 0
    real_db = store.db
    # Only the deciders' own trips: the follower, the path index and the other derived views run in tasks
    # of their own, and how often they look depends on the machine's load, not on deciding.
    deciders: set[asyncio.Task[Any] | None] = {asyncio.current_task()}

    async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal trips
        if asyncio.current_task() in deciders:
            trips += 1
        return await real_db(fn, *args, **kwargs)

    monkeypatch.setattr(store, "db", counted)
    # Bob rejects the last ten one by one while Alice accepts everything.
    bulk = asyncio.create_task(
        suggestion_bulk_decide(store=store, suggestions=rows, user=alice, accept=True, note="ok")
    )
    deciders.add(bulk)
    alone = [
        await suggestion_decide(store=store, suggestion=row, user=bob, accept=False)
        for row in await sync_to_async(
            lambda: list(Suggestion.objects.filter(pk__in=[r.pk for r in rows[-10:]]))
        )()
    ]
    decisions = await bulk
    monkeypatch.setattr(store, "db", real_db)

    by_pk = {d.suggestion.pk: d for d in decisions}
    assert len(alone) == 10
    for single in alone:
        # exactly one of the two won each of the last ten
        mine = by_pk[single.suggestion.pk]
        assert single.ok != mine.ok, (single.suggestion.pk, single.reason, mine.reason)
    assert not by_pk[rows[7].pk].ok and by_pk[rows[7].pk].suggestion.status == "stale"
    stored = await sync_to_async(lambda: {s.pk: s for s in Suggestion.objects.filter(doc_id=note.doc_id)})()
    text = str(ytext)
    for n, row in enumerate(rows):
        mine = stored[row.pk]
        if n == 7:
            assert mine.status == "stale" and row.uid in text  # its markup is left for a person
        elif by_pk[row.pk].ok:
            assert mine.status == "accepted" and mine.decided_by_id == alice.pk and mine.note == "ok"
            assert f"Line {n}: word{n} goes." in text and mine.undo["regions"]
        else:
            assert mine.status == "rejected" and mine.decided_by_id == bob.pk
            assert f"Line {n}: word{n} stays." in text
    accepted = [stored[r.pk] for r in rows if by_pk[r.pk].ok]
    assert len(accepted) >= COUNT - 11 and len({s.decision_batch for s in accepted}) == 1
    history = await sync_to_async(
        lambda: LogEntry.objects.filter(object_id__in=[str(r.pk) for r in rows]).count()
    )()
    assert history == len(accepted) + sum(1 for d in alone if d.ok)  # one entry per decision
    # Alice's bulk: a claim trip and a settle trip per slice (and a trip for the stale one's row); Bob's
    # single decisions: a claim and a settle each, fewer when refused. Each slice and each single decision
    # also holds its note for the follower (suggestions.lifecycle.follow.holding): a trip to make the hold,
    # one to release it.
    slices = math.ceil(COUNT / deciding.BULK_SLICE)
    # Deciding one suggestion after another took three trips each: over 180 here.
    assert trips <= 4 * slices + 1 + 4 * len(alone) + 10, trips


async def test_reject_all_hands_the_loop_back_between_decisions(
    store: Any, make_folder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    note, rows = await many_suggestions(store, make_folder)
    monkeypatch.setattr(deciding, "BULK_LOOP_BUDGET_SECONDS", 0.0)  # after every decision
    ticks = 0
    seen: list[int] = []  # the ticker's count as each decision starts
    real = deciding._decide_markup

    def decide_markup(*args: Any, **kwargs: Any) -> Any:
        seen.append(ticks)
        return real(*args, **kwargs)

    monkeypatch.setattr(deciding, "_decide_markup", decide_markup)
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            await asyncio.sleep(0)
            ticks += 1

    ticking = asyncio.create_task(ticker())
    decisions = await suggestion_bulk_decide(store=store, suggestions=rows, user=None, accept=False)
    done.set()
    await ticking
    assert all(d.ok for d in decisions)
    room = await store.get(note.doc_id)
    expected = "".join(f"Line {n}: word{n} stays.\n" for n in range(COUNT))
    assert str(room.doc.get("contents", type=Text)) == expected
    # The other tasks of the loop ran between every two decisions of a slice.
    assert len(seen) == COUNT and all(b > a for a, b in itertools.pairwise(seen)), seen
