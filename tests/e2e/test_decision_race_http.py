"""Two reviewers press Accept and Reject on the same suggestion at the same instant, over HTTP against a
running daphne server: exactly one wins, the other is told who decided, history has one entry.

20 pairs per kind (edit, create, move, delete), all pairs of a kind in flight together (40 concurrent
admin requests). Each request runs in its own request thread and hops onto the server's event loop, as
in production; the rows, the admin history and the documents are then read back from the server.
"""

from __future__ import annotations

import asyncio
import html
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from .relay import Relay

pytestmark = pytest.mark.e2e

PAIRS = 20
KINDS = ("edit", "create", "move", "delete")
ORIGINAL = "The quick brown fox jumps over the lazy dog.\n"
EDITED = "The slow red fox jumps over the lazy dog.\n"
CREATED = "A brand new note.\n"
PASSWORD = "correct horse battery staple"
REVIEWERS = ("alice", "bob")
_MARKER = "E2E-RACE "

_SETUP_SCRIPT = """
import json
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from lensrelay.docstore.store import store_session
from lensrelay.models import Folder
from lensrelay.vault.paths import path_index
from suggestions.lifecycle.proposing import EditSpec, Proposer, suggestion_propose_create
from suggestions.lifecycle.proposing import suggestion_propose_edits, suggestion_propose_move_or_delete
call_command("import_vault", {vault!r}, folder="Race")
review = Permission.objects.filter(codename__in=["view_suggestion", "review_suggestion"])
for name in {reviewers!r}:
    User.objects.create_user(name, password={password!r}, is_staff=True).user_permissions.set(review)
proposer = Proposer(author="claude")

async def propose():
    made = {{}}
    async with store_session() as store:
        index = path_index(store)
        await index.ensure()
        folder = await store.db(Folder.objects.get, name="Race")
        for kind in ("edit", "move", "delete"):
            for n in range({pairs}):
                entry = index.entry_at(f"Race/{{kind}} {{n}}.md")
                if kind == "edit":
                    outcome = await suggestion_propose_edits(
                        store=store, entry=entry, proposer=proposer,
                        specs=[EditSpec("quick brown", "slow red")], tool="edit",
                    )
                    row = outcome.suggestion
                else:
                    new_path = f"Race/Moved/{{kind}} {{n}}.md" if kind == "move" else None
                    row = await suggestion_propose_move_or_delete(
                        store=store, entry=entry, proposer=proposer, new_path=new_path, comment=None
                    )
                made.setdefault(kind, []).append([row.pk, row.doc_id, f"/{{kind}} {{n}}.md"])
        for n in range({pairs}):
            row = await suggestion_propose_create(
                store=store, folder_id=folder.pk, relative_path=f"/create {{n}}.md", content={created!r},
                proposer=proposer,
            )
            made.setdefault("create", []).append([row.pk, row.doc_id, f"/create {{n}}.md"])
    return made

print({marker!r} + json.dumps(async_to_sync(propose)()))
"""

_OUTCOME_SCRIPT = """
import json
from django.contrib.admin.models import LogEntry
from lensrelay.docstore.persistence import stored_text
from lensrelay.models import Document
from suggestions.models import Suggestion
out = {{}}
for pk, doc_id in {pairs!r}:
    row = Suggestion.objects.select_related("decided_by").get(pk=pk)
    out[str(pk)] = {{
        "status": row.status,
        "decided_by": row.decided_by.username if row.decided_by else None,
        "history": [[e.user.username, e.change_message] for e in LogEntry.objects.filter(object_id=str(pk))],
        "path": Document.objects.filter(doc_id=doc_id).values_list("path", flat=True).first(),
        "text": stored_text(doc_id),
    }}
print({marker!r} + json.dumps(out))
"""


@dataclass(frozen=True)
class Pending:
    pk: int
    doc_id: str
    path: str


def _marked(out: str) -> Any:
    line = next(line for line in out.splitlines() if line.startswith(_MARKER))
    return json.loads(line[len(_MARKER) :])


Manage = Callable[..., str]  # runs `manage.py ARGS` against the server's database, returns stdout


def propose_pending(manage: Manage, vault: Path) -> dict[str, list[Pending]]:
    """Import PAIRS notes per kind, add the two reviewers and one pending suggestion per note."""
    for kind in ("edit", "move", "delete"):
        for n in range(PAIRS):
            (vault / f"{kind} {n}.md").write_text(ORIGINAL)
    script = _SETUP_SCRIPT.format(
        vault=str(vault), reviewers=REVIEWERS, password=PASSWORD, pairs=PAIRS, created=CREATED, marker=_MARKER
    )
    made = _marked(manage("shell", "-c", script))
    return {kind: [Pending(*row) for row in rows] for kind, rows in made.items()}


@pytest.fixture(scope="module")
def pending(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Pending]]:
    return propose_pending(relay.manage, tmp_path_factory.mktemp("race-vault"))


class Reviewer:
    """A signed-in admin user; every request gets its own client (own messages cookie) on one session."""

    def __init__(self, base_url: str, username: str, cookies: dict[str, str]) -> None:
        self.base_url, self.username, self.cookies = base_url, username, cookies

    @classmethod
    async def sign_in(cls, base_url: str, username: str) -> Reviewer:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
            await http.get("/admin/login/")
            response = await http.post(
                "/admin/login/?next=/admin/",
                data={
                    "username": username,
                    "password": PASSWORD,
                    "csrfmiddlewaretoken": http.cookies["csrftoken"],
                },
            )
            assert response.status_code == 302, response.text[:500]
            return cls(base_url, username, dict(http.cookies))

    async def decide(self, pk: int, decision: str) -> list[str]:
        """POST the decision as the change page's form does; returns the messages the page then shows."""
        async with httpx.AsyncClient(
            base_url=self.base_url, cookies=self.cookies, timeout=60, follow_redirects=True
        ) as http:
            response = await http.post(
                f"/admin/suggestions/suggestion/{pk}/decide/",
                data={"decision": decision, "csrfmiddlewaretoken": self.cookies["csrftoken"]},
            )
            assert response.status_code == 200, response.text[:500]
            return [
                html.unescape(m)
                for m in re.findall(r'<li class="(?:success|error)">(.*?)</li>', response.text)
            ]


def sign_in_reviewers(base_urls: dict[str, str]) -> dict[str, Reviewer]:
    """Each reviewer signed in at its own server (the same one, or one worker each)."""

    async def sign_in() -> dict[str, Reviewer]:
        return {name: await Reviewer.sign_in(base_urls[name], name) for name in REVIEWERS}

    return asyncio.run(sign_in())


@pytest.fixture(scope="module")
def reviewers(relay: Relay, pending: dict[str, list[Pending]]) -> dict[str, Reviewer]:
    return sign_in_reviewers(dict.fromkeys(REVIEWERS, relay.http_url))


LOSER = re.compile(
    r"^Could not (accept|reject) the .*: "
    r"suggestion is already (being )?(?P<verb>accepted|rejected) by (?P<who>\w+)\.$"
)


async def race_and_check(
    manage: Manage, kind: str, pending: list[Pending], reviewers: dict[str, Reviewer]
) -> None:
    """All pairs of a kind in flight together; then every pair's messages, row, history and documents."""
    rng = random.Random(kind)
    accepted_by = {p.pk: rng.choice(REVIEWERS) for p in pending}

    async def pair(p: Pending) -> dict[str, list[str]]:
        calls = {
            who: reviewers[who].decide(p.pk, "accept" if accepted_by[p.pk] == who else "reject")
            for who in REVIEWERS
        }
        answers = await asyncio.gather(*calls.values())
        return dict(zip(calls, answers, strict=True))

    answers = await asyncio.gather(*(pair(p) for p in pending))
    pairs = [[p.pk, p.doc_id] for p in pending]
    script = _OUTCOME_SCRIPT.format(pairs=pairs, marker=_MARKER)
    stored = _marked(await asyncio.to_thread(manage, "shell", "-c", script))
    for p, said in zip(pending, answers, strict=True):
        winners = [
            who
            for who, messages in said.items()
            if messages and messages[0].startswith(("Accepted", "Rejected"))
        ]
        assert len(winners) == 1, said
        [winner] = winners
        [loser] = [who for who in REVIEWERS if who != winner]
        verb = "accepted" if accepted_by[p.pk] == winner else "rejected"
        [lost] = said[loser]
        found = LOSER.match(lost)
        assert found and (found["verb"], found["who"]) == (verb, winner), lost

        row = stored[str(p.pk)]
        assert (row["status"], row["decided_by"]) == (verb, winner), row
        assert row["history"] == [[winner, f"{verb.capitalize()} the suggestion"]], row
        accepted = verb == "accepted"
        if kind == "edit":
            assert (row["path"], row["text"]) == (p.path, EDITED if accepted else ORIGINAL)
        elif kind == "create":
            # A rejected create goes to the trash, like every removal.
            assert row["path"] == (p.path if accepted else "/_trash" + p.path)
            if accepted:
                assert row["text"] == CREATED
        elif kind == "move":
            assert row["path"] == ("/Moved" + p.path if accepted else p.path)
        else:
            assert row["path"] == ("/_trash" + p.path if accepted else p.path)


@pytest.mark.parametrize("kind", KINDS)
async def test_concurrent_admin_decisions_have_one_winner(
    relay: Relay, pending: dict[str, list[Pending]], reviewers: dict[str, Reviewer], kind: str
) -> None:
    await race_and_check(relay.manage, kind, pending[kind], reviewers)
