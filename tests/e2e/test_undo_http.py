"""Undoing decisions through the real surface: an assistant suggests over MCP (the official SDK client), a
reviewer decides and undoes over the admin's HTTP endpoints (session, CSRF), and a person's npm
y-websocket client watches the live text: accept → undo brings the markup back and the row is pending;
a bulk "accept all" of several suggestions is undone at once; undo is refused once the person edited the
text the decision left; a staff user without the review permission is refused.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from .browser import PASSWORD, call, mcp_client
from .conftest import YClientFactory
from .relay import Relay
from .test_review_page_browser import suggest
from .yclient import utf16_index

pytestmark = pytest.mark.e2e

FOLDER = "Undo"
NOTE = (
    "# Plan 🦊\n\nThe quick brown fox jumps over the lazy dog.\nBirds sing in the morning, 中文 too.\n"
    "Rivers run to the sea.\n"
)
_MARKER = "E2E-UNDO "
_SETUP = """
from django.contrib.auth.models import Permission, User
review = Permission.objects.filter(codename__in=["view_suggestion", "review_suggestion"])
User.objects.create_user("rita", password={password!r}, is_staff=True).user_permissions.set(review)
User.objects.create_user("otto", password={password!r}, is_staff=True).user_permissions.set(review)
intern = User.objects.create_user("ivan", password={password!r}, is_staff=True)
intern.user_permissions.set(Permission.objects.filter(codename="view_suggestion"))
print({marker!r} + "ok")
"""
_ROWS = """
import json
from django.contrib.admin.models import LogEntry
from suggestions.models import Suggestion
rows = {{}}
for s in Suggestion.objects.filter(uid__in={uids!r}):
    history = [e.change_message for e in LogEntry.objects.filter(object_id=str(s.pk)).order_by("pk")]
    rows[s.uid] = {{"status": s.status, "pk": s.pk, "history": history}}
print({marker!r} + json.dumps(rows))
"""


class Staff:
    """A signed-in staff member posting admin forms as the browser does (session cookie + CSRF token)."""

    def __init__(self, base_url: str, cookies: dict[str, str]) -> None:
        self.base_url, self.cookies = base_url, cookies

    @classmethod
    async def sign_in(cls, base_url: str, username: str) -> Staff:
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
            assert response.status_code == 302, response.text[:300]
            return cls(base_url, dict(http.cookies))

    async def post(self, path: str, data: dict[str, Any], *, csrf: bool = True) -> httpx.Response:
        form = {**data, "csrfmiddlewaretoken": self.cookies["csrftoken"]} if csrf else data
        async with httpx.AsyncClient(base_url=self.base_url, cookies=self.cookies, timeout=60) as http:
            return await http.post(path, data=form)

    async def undo(self, uid: str, **data: str) -> tuple[int, dict[str, Any]]:
        response = await self.post(f"/admin/suggestions/suggestion/{uid}/undo/", data)
        return response.status_code, response.json()


@pytest.fixture(scope="module")
def world(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    vault: Path = tmp_path_factory.mktemp("undo-vault")
    for name in ("Single", "Bulk", "Edited", "Race"):
        (vault / f"{name}.md").write_text(NOTE, encoding="utf-8")
    relay.import_vault(vault, folder=FOLDER)
    out = relay.manage("shell", "-c", _SETUP.format(password=PASSWORD, marker=_MARKER))
    assert _MARKER + "ok" in out
    paths = asyncio.run(relay.document_paths(relay.tokens["edit"], folder=FOLDER))
    return {"doc_ids": {name: paths[f"{FOLDER}/{name}.md"] for name in ("Single", "Bulk", "Edited", "Race")}}


def rows(relay: Relay, uids: list[str]) -> dict[str, Any]:
    out = relay.manage("shell", "-c", _ROWS.format(uids=uids, marker=_MARKER))
    line = next(line for line in out.splitlines() if line.startswith(_MARKER))
    return json.loads(line[len(_MARKER) :])  # type: ignore[no-any-return]


async def watch(relay: Relay, yclients: YClientFactory, doc_id: str) -> Any:
    return await yclients(
        relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]}, label="person"
    )


async def test_accept_then_undo_the_client_sees_the_markup_again_and_the_row_is_pending(
    relay: Relay, world: dict[str, Any], yclients: YClientFactory
) -> None:
    doc_id = world["doc_ids"]["Single"]
    person = await watch(relay, yclients, doc_id)
    rita = await Staff.sign_in(relay.http_url, "rita")
    async with mcp_client(relay.http_url, relay.tokens["suggest"]) as assistant:
        uid = await suggest(assistant, f"{FOLDER}/Single.md", "quick brown", "slow red", comment="Livelier.")
    with_markup = await person.wait_text(contains="slow red++}")
    row = rows(relay, [uid])[uid]

    decided = await rita.post(f"/admin/suggestions/suggestion/{row['pk']}/decide/", {"decision": "accept"})
    assert decided.status_code == 302
    settled = await person.wait_text(contains="The slow red fox")
    assert "{--" not in settled and uid not in settled

    # a staff user without the review permission is refused, and nothing changes
    ivan = await Staff.sign_in(relay.http_url, "ivan")
    status, body = await ivan.undo(uid)
    assert (status, body["ok"]) == (403, False)
    # without the CSRF token the post never reaches the view
    assert (await rita.post(f"/admin/suggestions/suggestion/{uid}/undo/", {}, csrf=False)).status_code == 403
    assert await person.text() == settled

    status, body = await rita.undo(uid)
    assert (status, body["ok"]) == (200, True), body
    assert await person.wait_text(equals=with_markup) == with_markup
    row = rows(relay, [uid])[uid]
    assert row["status"] == "pending"
    assert row["history"] == [
        "Accepted the suggestion",
        "Undid the acceptance: the suggestion is pending again",
    ]
    # undoing twice: it is pending now, never decided since
    status, body = await rita.undo(uid)
    assert (status, body["ok"]) == (409, False) and "never decided" in body["message"]
    # the assistant reads it as pending again
    async with mcp_client(relay.http_url, relay.tokens["suggest"]) as assistant:
        told = await call(assistant, "list_suggestions", {"path": f"{FOLDER}/Single.md"})
    assert f"{uid} PENDING" in told


async def test_a_bulk_accept_all_is_undone_at_once(
    relay: Relay, world: dict[str, Any], yclients: YClientFactory
) -> None:
    doc_id = world["doc_ids"]["Bulk"]
    path = f"{FOLDER}/Bulk.md"
    person = await watch(relay, yclients, doc_id)
    async with mcp_client(relay.http_url, relay.tokens["suggest"]) as assistant:
        uids = [
            await suggest(assistant, path, "quick brown", "slow red"),
            await suggest(assistant, path, "morning", "evening"),
            await suggest(assistant, path, "Rivers run", "Streams flow"),
        ]
    with_markup = await person.wait_text(contains="Streams flow++}")
    rita = await Staff.sign_in(relay.http_url, "rita")
    decided = await rita.post(
        f"/admin/suggestions/suggestion/document/{doc_id}/decide-all/",
        {"decision": "accept", "post": "yes", "uid": uids},
    )
    assert decided.status_code == 302
    accepted = (
        NOTE.replace("quick brown", "slow red")
        .replace("morning", "evening")
        .replace("Rivers run", "Streams flow")
    )
    assert await person.wait_text(equals=accepted) == accepted

    status, body = await rita.undo(uids[1], batch="1")
    assert (status, body["ok"]) == (200, True), body
    assert await person.wait_text(equals=with_markup) == with_markup
    assert {r["status"] for r in rows(relay, uids).values()} == {"pending"}


async def test_undo_is_refused_once_the_person_edited_the_settled_text(
    relay: Relay, world: dict[str, Any], yclients: YClientFactory
) -> None:
    doc_id = world["doc_ids"]["Edited"]
    path = f"{FOLDER}/Edited.md"
    person = await watch(relay, yclients, doc_id)
    async with mcp_client(relay.http_url, relay.tokens["suggest"]) as assistant:
        first = await suggest(assistant, path, "quick brown", "slow red")
        second = await suggest(assistant, path, "lazy dog", "sleepy cat")
    await person.wait_text(contains="sleepy cat++}")
    rita = await Staff.sign_in(relay.http_url, "rita")
    decided = await rita.post(
        f"/admin/suggestions/suggestion/document/{doc_id}/decide-all/",
        {"decision": "accept", "post": "yes", "uid": [first, second]},
    )
    assert decided.status_code == 302
    settled = await person.wait_text(contains="over the sleepy cat.")
    # the person types inside the text the second decision left
    await person.insert(utf16_index(settled, settled.index("sleepy") + len("sleepy")), " old")
    edited = await person.wait_text(contains="sleepy old cat")

    status, body = await rita.undo(first, batch="1")
    assert (status, body["ok"]) == (409, False)
    assert second in body["message"] and "edited since" in body["message"] and first not in body["message"]
    await asyncio.sleep(0.5)
    assert await person.text() == edited  # nothing was written back
    assert {r["status"] for r in rows(relay, [first, second]).values()} == {"accepted"}
    # the first alone still comes back: its own text is untouched
    status, body = await rita.undo(first)
    assert body["ok"] is True, body
    assert "{--" in await person.wait_text(contains="slow red++}")
    assert "sleepy old cat" in await person.text()


async def test_two_reviewers_undoing_and_one_deciding_at_once_give_one_winner(
    relay: Relay, world: dict[str, Any], yclients: YClientFactory
) -> None:
    doc_id = world["doc_ids"]["Race"]
    person = await watch(relay, yclients, doc_id)
    async with mcp_client(relay.http_url, relay.tokens["suggest"]) as assistant:
        uid = await suggest(assistant, f"{FOLDER}/Race.md", "lazy dog", "sleepy cat")
    with_markup = await person.wait_text(contains="sleepy cat++}")
    rita, otto = await Staff.sign_in(relay.http_url, "rita"), await Staff.sign_in(relay.http_url, "otto")
    pk = rows(relay, [uid])[uid]["pk"]
    assert (
        await rita.post(f"/admin/suggestions/suggestion/{pk}/decide/", {"decision": "reject"})
    ).status_code == 302
    await person.wait_text(contains="over the lazy dog.")
    answers = await asyncio.gather(
        rita.undo(uid),
        otto.undo(uid),
        otto.post(f"/admin/suggestions/suggestion/{pk}/decide/", {"decision": "accept"}),
    )
    undone = [body["ok"] for _, body in answers[:2]]
    assert sorted(undone) == [False, True], answers[:2]
    # the markup came back once; the late accept either lost (already rejected / being undone) or, if it ran
    # after the undo, won cleanly on the pending row
    row = rows(relay, [uid])[uid]
    text = await person.text()
    if row["status"] == "pending":
        assert text == with_markup
        assert row["history"] == [
            "Rejected the suggestion",
            "Undid the rejection: the suggestion is pending again",
        ]
    else:
        assert row["status"] == "accepted" and "sleepy cat" in text and "{--" not in text
        assert row["history"][-1] == "Accepted the suggestion"
    assert text.count("sleepy cat") == 1
