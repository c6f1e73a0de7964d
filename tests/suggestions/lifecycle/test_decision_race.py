"""Accept and reject of the same suggestion at the same instant: exactly one reviewer wins.

Each kind (edit, create, move, delete) gets 20 suggestions and 20 accept/reject pairs, raced two ways:
as concurrent tasks on one store (one server process: the admin's requests hop onto its event loop), and
from two threads that each run their own event loop and document store (like two worker processes that
share only the database). Every pair must end with one winner, a loser told who decided, the row and
the documents showing the winner's decision, and exactly one admin history entry. Run on SQLite, and on
PostgreSQL with DATABASE_URL.
"""

from __future__ import annotations

import asyncio
import random
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User

from lensrelay.docstore import persistence
from lensrelay.docstore.store import DocStore, store_session
from lensrelay.models import Document, Folder
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create
from lensrelay.vault.paths import path_index
from suggestions.lifecycle.deciding import Decision, suggestion_accept, suggestion_decide, suggestion_reject
from suggestions.lifecycle.proposing import (
    EditSpec,
    Proposer,
    suggestion_propose_create,
    suggestion_propose_edits,
    suggestion_propose_move_or_delete,
)
from suggestions.models import Suggestion

pytestmark = pytest.mark.django_db(transaction=True)

PAIRS = 20
KINDS = ("edit", "create", "move", "delete")
ORIGINAL = "The quick brown fox jumps over the lazy dog.\n"
EDITED = "The slow red fox jumps over the lazy dog.\n"
CREATED = "A brand new note.\n"
PROPOSER = Proposer(author="claude")
LOSER = re.compile(r"^suggestion is already (being )?(?P<verb>accepted|rejected) by (?P<who>\w+)$")


@dataclass(frozen=True)
class Race:
    suggestion_pk: int
    path: str  # folder-relative, where the document starts (or is created)
    doc_id: str


async def _propose(store: DocStore, folder: Folder, kind: str, n: int) -> Race:
    path = f"/{kind.capitalize()} {n}.md"
    if kind == "create":
        row = await suggestion_propose_create(
            store=store, folder_id=folder.pk, relative_path=path, content=CREATED, proposer=PROPOSER
        )
        return Race(row.pk, path, row.doc_id)
    document = await document_create(store=store, folder=folder, path=path, text=ORIGINAL)
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(document.doc_id)
    assert entry is not None
    if kind == "edit":
        outcome = await suggestion_propose_edits(
            store=store,
            entry=entry,
            proposer=PROPOSER,
            specs=[EditSpec("quick brown", "slow red")],
            tool="edit",
        )
        assert outcome.suggestion is not None
        return Race(outcome.suggestion.pk, path, document.doc_id)
    new_path = f"Lens/Moved/{kind.capitalize()} {n}.md" if kind == "move" else None
    row = await suggestion_propose_move_or_delete(
        store=store, entry=entry, proposer=PROPOSER, new_path=new_path, comment=None
    )
    return Race(row.pk, path, document.doc_id)


async def propose_all(store: DocStore, kind: str) -> list[Race]:
    folder = await store.db(folder_create, name="Lens")
    await path_index(store).ensure()
    return [await _propose(store, folder, kind, n) for n in range(PAIRS)]


def reviewers() -> tuple[User, User]:
    return (
        User.objects.create_superuser("alice", "alice@example.org", "pw"),
        User.objects.create_superuser("bob", "bob@example.org", "pw"),
    )


def document_path(doc_id: str) -> str | None:
    return Document.objects.filter(doc_id=doc_id).values_list("path", flat=True).first()


def check_pair(kind: str, race: Race, decisions: dict[str, Decision], accepted_by: str) -> None:
    """One winner; the loser names the winner and its decision; row, documents and history agree."""
    winners = [who for who, d in decisions.items() if d.ok]
    assert len(winners) == 1, {who: (d.ok, d.reason) for who, d in decisions.items()}
    winner = winners[0]
    [loser] = [d for who, d in decisions.items() if who != winner]
    won_accept = winner == accepted_by
    verb = "accepted" if won_accept else "rejected"
    found = LOSER.match(loser.reason)
    assert found, loser.reason
    assert (found["verb"], found["who"]) == (verb, winner), loser.reason

    row = Suggestion.objects.select_related("decided_by").get(pk=race.suggestion_pk)
    assert row.status == verb and row.decided_by is not None and row.decided_by.username == winner
    history = LogEntry.objects.filter(object_id=str(race.suggestion_pk))
    assert [(e.user.username, e.change_message) for e in history] == [
        (winner, f"{verb.capitalize()} the suggestion")
    ]

    path, text = document_path(race.doc_id), persistence.stored_text(race.doc_id)
    if kind == "edit":
        assert (path, text) == (race.path, EDITED if won_accept else ORIGINAL)
    elif kind == "create":
        # A rejected create goes to the trash (every removal does), its content kept.
        assert (path, text) == ((race.path, CREATED) if won_accept else ("/_trash" + race.path, text))
    elif kind == "move":
        assert path == ("/Moved" + race.path if won_accept else race.path)
    else:
        assert path == ("/_trash" + race.path if won_accept else race.path)


# -- one process: concurrent tasks on one store --------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_concurrent_tasks_on_one_store_have_one_winner(store: Any, kind: str) -> None:
    alice, bob = await sync_to_async(reviewers)()
    races = await propose_all(store, kind)
    rng = random.Random(kind)
    accepted_by = {race.suggestion_pk: rng.choice(["alice", "bob"]) for race in races}
    users = {"alice": alice, "bob": bob}

    async def decide(race: Race, who: str) -> tuple[int, str, Decision]:
        row = await Suggestion.objects.aget(pk=race.suggestion_pk)  # each reviewer has its own copy
        accept = accepted_by[race.suggestion_pk] == who
        decision = await suggestion_decide(store=store, suggestion=row, user=users[who], accept=accept)
        return race.suggestion_pk, who, decision

    calls = [decide(race, who) for race in races for who in ("alice", "bob")]
    rng.shuffle(calls)
    results = await asyncio.gather(*calls)
    by_pair: dict[int, dict[str, Decision]] = {}
    for pk, who, decision in results:
        by_pair.setdefault(pk, {})[who] = decision
    for room in list(store.rooms.values()):
        await room.flushed()  # everything is in the database before the checks read it
    for race in races:
        await sync_to_async(check_pair)(
            kind, race, by_pair[race.suggestion_pk], accepted_by[race.suggestion_pk]
        )


# -- two "processes": threads with their own event loop and store each ------------------------------------


def race_in_threads(*calls: Callable[[], Decision]) -> list[Decision]:
    barrier = threading.Barrier(len(calls))
    results: list[Decision | BaseException | None] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = calls[i]()
        except BaseException as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    assert all(isinstance(r, Decision) for r in results), results
    return results  # type: ignore[return-value]


@pytest.mark.parametrize("kind", KINDS)
def test_two_stores_in_threads_have_one_winner(transactional_db: None, kind: str) -> None:
    alice, bob = reviewers()

    async def setup() -> list[Race]:
        async with store_session() as store:
            return await propose_all(store, kind)

    races = async_to_sync(setup)()
    for n, race in enumerate(races):
        accepted_by = "alice" if n % 2 else "bob"
        rejected_by = "bob" if accepted_by == "alice" else "alice"
        users = {"alice": alice, "bob": bob}
        mine, theirs = (Suggestion.objects.get(pk=race.suggestion_pk) for _ in range(2))
        accept, reject = race_in_threads(
            partial(suggestion_accept, suggestion=mine, user=users[accepted_by]),
            partial(suggestion_reject, suggestion=theirs, user=users[rejected_by]),
        )
        check_pair(kind, race, {accepted_by: accept, rejected_by: reject}, accepted_by)
