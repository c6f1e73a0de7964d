"""Issue 18, findings 5-7, through the real surface: the official `mcp` SDK client against one daphne
worker (SQLite), a y-websocket client for edits, the admin for a version restore.

- Subscriptions are canonical and bounded: hundreds of spellings of one note are one subscription, past
  `LENSRELAY_MCP_MAX_SUBSCRIPTIONS` a clear JSON-RPC error, and one edit is one event.
- `delete` answers from what the token sees: a note in a folder it cannot see changes nothing in it.
- A version restore that withdraws a session's suggestion tells that session within a second.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
import unicodedata
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from .notify_clients import Heard, sdk_client
from .relay import HTTP_TIMEOUT, Relay, TokenSpec

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

CAP = 12
SPELLINGS = 300  # well past the cap: every one is accepted, as one subscription
RELAY_ENV = {"LENSRELAY_MCP_EVENTS_POLL_SECONDS": "0.2", "LENSRELAY_MCP_MAX_SUBSCRIPTIONS": str(CAP)}
PLAN = "# Plan\n\nPlants make sugar from light.\n"
EDITOR, PASSWORD = "hilda", "notify-trust-pw"
SUPERUSER = f"""
from django.contrib.auth.models import User
User.objects.create_superuser({EDITOR!r}, "hilda@example.org", {PASSWORD!r})
print("done")
"""


@dataclass(frozen=True)
class Site:
    relay: Relay
    tokens: dict[str, str]
    beta: Path  # the Beta folder's source directory (re-imported with --prune to empty it)


@pytest.fixture(scope="module")
def site(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Site:
    public = tmp_path_factory.mktemp("public")
    (public / "Index.md").write_text("The index.\n")
    (public / "Über Photosynthese.md").write_text("Licht.\n")
    for n in range(CAP + 2):
        (public / f"Note {n:02}.md").write_text(f"Note {n}.\n")
    alpha = tmp_path_factory.mktemp("alpha")
    (alpha / "Lone.md").write_text("Nobody links here.\n")
    (alpha / "Target.md").write_text("Only Beta links here.\n")
    (alpha / "Shared.md").write_text("Alpha and Beta link here.\n")
    (alpha / "Index.md").write_text("See [[Shared]].\n")
    beta = tmp_path_factory.mktemp("beta")
    (beta / "Pointer.md").write_text("[[Alpha/Target]] and [[Alpha/Shared]]\n")
    history = tmp_path_factory.mktemp("history")
    (history / "Plan.md").write_text(PLAN)
    tokens = relay.setup(
        imports=[(public, "Public"), (alpha, "Alpha"), (beta, "Beta"), (history, "History")],
        tokens={
            "public-view": TokenSpec("view", ("Public",)),
            "alpha-suggest": TokenSpec("suggest", ("Alpha",)),
            "history-suggest": TokenSpec("suggest", ("History",)),
        },
    )
    relay.manage("shell", "-c", SUPERUSER)
    return Site(relay=relay, tokens=tokens, beta=beta)


def connect(relay: Relay, token: str, heard: Heard | None = None) -> AbstractAsyncContextManager[Client]:
    return sdk_client(relay.http_url, token, heard)


def spell(path: str, rng: random.Random) -> str:
    """One more way to write a `lens://` URI for `path`: NFC or NFD, `.md` or not, any character
    percent-encoded (its UTF-8 bytes, hex digits in either case) or left as it is where a URI allows."""
    if rng.random() < 0.5:
        path = path[: -len(".md")]
    path = unicodedata.normalize(rng.choice(["NFC", "NFD"]), path)
    out = []
    for char in path:
        if char == " " or not char.isascii() or rng.random() < 0.4:
            hexes = [f"{b:02X}" for b in char.encode()]
            out.append("".join("%" + (h.lower() if rng.random() < 0.5 else h) for h in hexes))
        else:
            out.append(char)
    return "lens://" + "".join(out)


# ------------------------------------------------------------------------------------------- finding 5


async def test_many_spellings_are_one_subscription_bounded_and_one_edit_is_one_event(
    site: Site, yclients: Any
) -> None:
    relay, token = site.relay, site.tokens["public-view"]
    rng = random.Random(18)
    heard = Heard()
    async with connect(relay, token, heard) as client:
        canonical = "lens://Public/Index.md"
        spellings = {spell("Public/Index.md", rng) for _ in range(SPELLINGS * 3)}
        spellings = set(list(spellings)[:SPELLINGS]) | {"lens://Public/Inde%78.md", "lens://Public/Index"}
        assert len(spellings) > CAP
        for uri in spellings:
            await client.subscribe_resource(uri)  # every spelling accepted, as the same subscription
        for n in range(CAP - 1):  # with Index.md: exactly the cap
            await client.subscribe_resource(spell(f"Public/Note {n:02}.md", rng))
        with pytest.raises(MCPError) as refused:
            await client.subscribe_resource("lens://Public/%C3%9Cber%20Photosynthese.md")
        assert refused.value.code == -32602
        assert f"Too many subscriptions: this session already has {CAP}" in refused.value.message
        assert refused.value.data["limit"] == CAP
        # A resource already held is no new subscription, at the cap too.
        await client.subscribe_resource("lens://Public/Index")

        doc_id = await relay.doc_id(token, folder="Public", path="/Index.md")
        writer = await yclients(relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]})
        await writer.insert(0, "Changed. ")
        updated = await heard.wait(lambda: heard.of(types.ResourceUpdatedNotification), "resources/updated")
        await asyncio.sleep(1.0)  # whatever else would come has come by now
        assert [str(n.params.uri) for n in heard.of(types.ResourceUpdatedNotification)] == [canonical]
        assert str(updated[0].params.uri) == canonical

        # Unsubscribing with yet another spelling ends it: the next edit is not notified.
        await client.unsubscribe_resource("lens://Public/%49ndex")
        await asyncio.sleep(0.5)  # past the debounce window of the first event
        await writer.insert(0, "Again. ")
        await asyncio.sleep(1.0)
        assert len(heard.of(types.ResourceUpdatedNotification)) == 1
        # And the place it held is free again.
        await client.subscribe_resource("lens://Public/%C3%9Cber%20Photosynthese.md")


# ------------------------------------------------------------------------------------------- finding 6


def shape(answer: str) -> str:
    """An answer with its path and suggestion id taken out, to compare two answers' shapes."""
    return re.sub(r"suggestion [0-9a-f]+", "suggestion ID", re.sub(r"Alpha/\w+\.md", "PATH", answer))


def text_of(result: Any) -> tuple[str, bool]:
    return "".join(part.text for part in result.content), bool(result.is_error)


async def test_delete_answers_reveal_nothing_of_a_folder_the_token_cannot_see(site: Site) -> None:
    relay = site.relay
    async with connect(relay, site.tokens["alpha-suggest"]) as client:
        # Linked from Beta only vs linked from nowhere: the same answer.
        lone = text_of(await client.call_tool("delete", {"file_path": "Alpha/Lone.md"}))
        target = text_of(await client.call_tool("delete", {"file_path": "Alpha/Target.md"}))
        assert not lone[1] and not target[1], (lone, target)
        assert shape(target[0]) == shape(lone[0])
        # Linked from Alpha and Beta: refused naming Alpha's note only, and exactly as when Beta's note
        # is gone.
        with_beta = text_of(await client.call_tool("delete", {"file_path": "Alpha/Shared.md"}))
        assert with_beta[1] and "Alpha/Index.md" in with_beta[0]
        assert "Beta" not in with_beta[0] and "cannot see" not in with_beta[0]
        empty = site.beta.parent / "beta-emptied"
        empty.mkdir(exist_ok=True)
        await asyncio.to_thread(
            relay.command, "import_vault", str(empty), "--folder", "Beta", "--prune"
        )  # Beta/Pointer.md goes to the trash, where links never resolve from
        without_beta = text_of(await client.call_tool("delete", {"file_path": "Alpha/Shared.md"}))
        assert without_beta == with_beta


# ------------------------------------------------------------------------------------------- finding 7


async def signed_in(relay: Relay) -> httpx.AsyncClient:
    client = httpx.AsyncClient(base_url=relay.http_url, timeout=HTTP_TIMEOUT)
    page = await client.get("/admin/login/")
    answer = await client.post(
        "/admin/login/",
        data={"username": EDITOR, "password": PASSWORD, "csrfmiddlewaretoken": csrf(page.text), "next": "/"},
        headers={"Referer": f"{relay.http_url}/admin/login/"},
    )
    assert answer.status_code == 302, answer.text[:500]
    return client


def csrf(html: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert found, html[:500]
    return found.group(1)


async def document_pk(admin: httpx.AsyncClient, doc_id: str) -> int:
    page = await admin.get("/admin/lensrelay/document/", params={"q": doc_id})
    found = re.search(r'href="/admin/lensrelay/document/(\d+)/change/', page.text)
    assert found, page.text[:1000]
    return int(found.group(1))


async def test_a_restore_that_withdraws_a_suggestion_tells_its_session_within_a_second(site: Site) -> None:
    relay, token = site.relay, site.tokens["history-suggest"]
    doc_id = await relay.doc_id(token, folder="History", path="/Plan.md")
    heard = Heard()
    async with connect(relay, token, heard) as client:
        await client.call_tool("read", {"file_path": "History/Plan.md"})
        proposed = await client.call_tool(
            "edit", {"file_path": "History/Plan.md", "old_string": "sugar", "new_string": "glucose"}
        )
        assert not proposed.is_error, proposed
        # The first server edit of an imported note keeps the imported text as a version.
        listed = await relay.get_json(f"/d/{doc_id}/versions", token=token)
        original = next(v for v in listed if v["size"] == len(PLAN.encode()))
        admin = await signed_in(relay)
        try:
            pk = await document_pk(admin, doc_id)
            url = f"/admin/lensrelay/document/{pk}/versions/{original['versionId']}/restore/"
            confirm = await admin.get(url)
            done = await admin.post(
                url,
                data={"post": "yes", "csrfmiddlewaretoken": csrf(confirm.text)},
                headers={"Referer": f"{relay.http_url}{url}"},
            )
            assert done.status_code == 302, done.text[:500]
            restored_at = time.monotonic()
        finally:
            await admin.aclose()
        decided = await heard.wait(
            lambda: heard.of(types.LoggingMessageNotification), "the decision", seconds=1.0
        )
        assert time.monotonic() - restored_at <= 1.0
        data = decided[0].params.data
        assert data["type"] == "suggestion_decided" and data["path"] == "History/Plan.md"
        assert data["status"] == "rejected" and data["decidedBy"] == EDITOR
        assert data["note"].startswith("Withdrawn: the document was restored to its version of")
    assert await relay.doc_text(doc_id, token=relay.tokens["edit"]) == PLAN
