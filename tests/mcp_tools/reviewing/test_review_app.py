"""The MCP Apps review over /mcp: the review tool names the page and hands the page a key in `_meta`; the
app-only `review_decide` refuses every call without a live key (the model's), decides as the person who
granted the OAuth access, within the grant's folders, once; plain API tokens see the page but cannot decide.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Permission, User
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application

from lensrelay.access.oauth import grant_create
from lensrelay.models import Folder, YUpdate
from lensrelay.vault.importexport import import_vault
from mcp_tools.reviewing import APP_META_KEY, APP_MIME_TYPE, REVIEW_APP_URI
from suggestions.models import Suggestion
from tests.mcp_tools.test_transport_support import HANDSHAKE, Mcp, TokenFactory

pytestmark = pytest.mark.django_db(transaction=True)

DEMO = Path(__file__).resolve().parents[3] / "lensrelay" / "demo_vault"
NOTE = "Lens/Photosynthesis.md"


def _person(username: str, *, review: bool) -> User:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    codenames = ["suggest", "view_document"] + (["review_suggestion"] if review else [])
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return User.objects.get(pk=user.pk)  # permissions are cached per object


def _oauth(raw: str, *, username: str, review: bool = True, role: str = "suggest", folder: str = "") -> int:
    user = _person(username, review=review)
    application = Application.objects.create(
        name="Claude",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1:7777/callback",
    )
    folders = [Folder.objects.get_or_create(name=folder)[0]] if folder else []
    grant = grant_create(user=user, application=application, role=role, folders=folders)
    AccessToken.objects.create(
        user=user,
        application=application,
        token=raw,
        expires=timezone.now() + timedelta(minutes=10),
        scope="mcp",
        resource=["http://localhost/mcp"],
    )
    return grant.pk


oauth = sync_to_async(_oauth)


@pytest.fixture
async def vault(store: Any, transactional_db: None) -> Any:
    await import_vault(store=store, root=DEMO, folder_name="Lens")
    return store


async def _propose(http: httpx.AsyncClient, tokens: TokenFactory) -> str:
    """A suggest token's edit of the note, as an assistant proposes it: the suggestion's id."""
    mcp = Mcp(http, await tokens("suggest"))
    session = await mcp.initialize()
    read = await mcp.request(
        "tools/call", {"name": "read", "arguments": {"file_path": NOTE}}, session=session
    )
    assert not read.result["isError"], read.text()
    edit = await mcp.request(
        "tools/call",
        {
            "name": "edit",
            "arguments": {"file_path": NOTE, "old_string": "stored in sugar", "new_string": "kept in sugar"},
        },
        session=session,
    )
    assert not edit.result["isError"], edit.text()
    row = await Suggestion.objects.filter(status="pending").alatest("created")
    return row.uid


async def _call(mcp: Mcp, session: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = await mcp.request("tools/call", {"name": name, "arguments": arguments}, session=session)
    return reply.result


def _text(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


async def _review(mcp: Mcp, session: str, **arguments: str) -> tuple[dict[str, Any], str | None]:
    result = await _call(mcp, session, "review_suggestions", arguments)
    assert not result["isError"], _text(result)
    key = (result.get("_meta") or {}).get(APP_META_KEY, {}).get("key")
    return result, key


async def _status(uid: str) -> str:
    row = await Suggestion.objects.select_related("decided_by").aget(uid=uid)
    return f"{row.status} by {row.decided_by.get_username() if row.decided_by else None}"


async def test_both_eras_list_the_review_tool_with_its_page_and_the_decide_tool_as_app_only(
    http: httpx.AsyncClient, tokens: TokenFactory
) -> None:
    mcp = Mcp(http, await tokens("suggest"))
    session = await mcp.initialize(HANDSHAKE)
    handshake = (await mcp.request("tools/list", {}, session=session)).result["tools"]
    modern = (await mcp.modern("tools/list")).result["tools"]
    for tools in (handshake, modern):
        by_name = {t["name"]: t for t in tools}
        assert by_name["review_suggestions"]["_meta"] == {"ui": {"resourceUri": REVIEW_APP_URI}}
        decide = by_name["review_decide"]["_meta"]["ui"]
        assert decide == {"resourceUri": REVIEW_APP_URI, "visibility": ["app"]}
        assert "_meta" not in by_name["read"]
    old = await mcp.initialize("2025-03-26")
    listed = (await mcp.request("tools/list", {}, session=old, version="2025-03-26")).result["tools"]
    assert all("_meta" not in t for t in listed)


async def test_the_page_is_one_self_contained_mcp_app_html_with_no_credential(
    http: httpx.AsyncClient, tokens: TokenFactory
) -> None:
    raw = await tokens("view")
    mcp = Mcp(http, raw)
    session = await mcp.initialize()
    contents = (await mcp.request("resources/read", {"uri": REVIEW_APP_URI}, session=session)).result[
        "contents"
    ]
    assert len(contents) == 1 and contents[0]["mimeType"] == APP_MIME_TYPE
    html = contents[0]["text"]
    assert html.lower().startswith("<!doctype html>") and raw not in html
    assert "<script src" not in html and "<link" not in html  # everything inline, nothing fetched
    listed = (await mcp.request("resources/list", {}, session=session)).result["resources"]
    assert all(not r["uri"].startswith("ui://") for r in listed)  # the notes' listing is unchanged


async def test_the_app_accepts_as_the_granting_person_once(
    http: httpx.AsyncClient, tokens: TokenFactory, vault: Any
) -> None:
    uid = await _propose(http, tokens)
    await oauth("oauth-rita", username="rita")
    mcp = Mcp(http, "oauth-rita")
    session = await mcp.initialize()
    result, key = await _review(mcp, session, path=NOTE)
    shown = result["structuredContent"]
    assert shown["can_decide"] and [s["id"] for s in shown["suggestions"]] == [uid]
    change = shown["suggestions"][0]["changes"][0]
    assert (change["deleted"], change["inserted"]) == ("stored", "kept")
    assert key and key not in _text(result) and key not in str(shown)  # only `_meta` holds it

    accepted = await _call(
        mcp, session, "review_decide", {"suggestion": uid, "decision": "accept", "note": "ok", "app_key": key}
    )
    assert not accepted["isError"], _text(accepted)
    assert "as rita" in _text(accepted)
    assert await _status(uid) == "accepted by rita"
    row = await Suggestion.objects.aget(uid=uid)
    assert row.note == "ok"
    # The note's history names the person, as for a decision in the admin (not the assistant's grant).
    authors = [
        author async for author in YUpdate.objects.filter(doc_id=row.doc_id).values_list("author", flat=True)
    ]
    assert "rita (staff)" in authors

    # Replaying the call: the key is spent. With a fresh key: one winner, already decided.
    replay = await _call(
        mcp, session, "review_decide", {"suggestion": uid, "decision": "reject", "app_key": key}
    )
    assert replay["isError"] and "no valid app key" in _text(replay)
    _, fresh = await _review(mcp, session, suggestion=uid)
    again = await _call(
        mcp, session, "review_decide", {"suggestion": uid, "decision": "reject", "app_key": fresh}
    )
    assert again["isError"] and "already" in _text(again).lower()
    assert await _status(uid) == "accepted by rita"


async def test_the_models_call_of_the_app_only_tool_is_refused(
    http: httpx.AsyncClient, tokens: TokenFactory, vault: Any
) -> None:
    uid = await _propose(http, tokens)
    await oauth("oauth-rita", username="rita")
    mcp = Mcp(http, "oauth-rita")
    session = await mcp.initialize()
    await _review(mcp, session, path=NOTE)  # a key exists, but the model never saw it
    for arguments in (
        {"suggestion": uid, "decision": "accept"},
        {"suggestion": uid, "decision": "accept", "app_key": ""},
        {"suggestion": uid, "decision": "accept", "app_key": "guessed-key"},
        {"suggestion": uid, "decision": "accept", "app_key": ["not", "a", "string"]},
    ):
        refused = await _call(mcp, session, "review_decide", arguments)
        assert refused["isError"] and "only be called by the Lens Relay review app" in _text(refused)
    modern = await mcp.modern(
        "tools/call", {"name": "review_decide", "arguments": {"suggestion": uid, "decision": "accept"}}
    )
    assert modern.result["isError"] and "no valid app key" in modern.text()
    assert await _status(uid) == "pending by None"


async def test_a_key_works_only_in_the_session_it_was_given_to(
    http: httpx.AsyncClient, tokens: TokenFactory, vault: Any
) -> None:
    uid = await _propose(http, tokens)
    await oauth("oauth-rita", username="rita")
    mcp = Mcp(http, "oauth-rita")
    first, second = await mcp.initialize(), await mcp.initialize()
    _, key = await _review(mcp, first, path=NOTE)
    stolen = await _call(
        mcp, second, "review_decide", {"suggestion": uid, "decision": "accept", "app_key": key}
    )
    assert stolen["isError"] and "no valid app key" in _text(stolen)
    assert await _status(uid) == "pending by None"


async def test_plain_api_tokens_see_the_app_but_cannot_decide(
    http: httpx.AsyncClient, tokens: TokenFactory, vault: Any
) -> None:
    uid = await _propose(http, tokens)
    for role in ("view", "edit"):
        mcp = Mcp(http, await tokens(role))
        session = await mcp.initialize()
        result, key = await _review(mcp, session, path=NOTE)
        shown = result["structuredContent"]
        assert [s["id"] for s in shown["suggestions"]] == [uid]
        assert not shown["can_decide"] and "API token" in shown["why_not"] and key is None
        assert "reading only" in _text(result)
        refused = await _call(
            mcp, session, "review_decide", {"suggestion": uid, "decision": "accept", "app_key": "x"}
        )
        assert refused["isError"]
    assert await _status(uid) == "pending by None"


@pytest.mark.parametrize(
    ("grant", "refusal"),
    [
        ({"folder": "Other"}, "No suggestion"),
        ({"review": False}, "may not review suggestions"),
        ({"role": "view"}, "(role view) may not"),
    ],
)
async def test_a_grant_that_may_not_decide_this_suggestion_is_refused(
    http: httpx.AsyncClient, tokens: TokenFactory, vault: Any, grant: dict[str, Any], refusal: str
) -> None:
    uid = await _propose(http, tokens)
    await oauth("oauth-other", username="otto", **grant)
    # A key as the app would have it, had the session shown a review: the refusal is the grant's.
    mcp = Mcp(http, "oauth-other")
    session = await mcp.initialize()
    key = await _key_for(mcp, session)
    decided = await _call(
        mcp, session, "review_decide", {"suggestion": uid, "decision": "accept", "app_key": key}
    )
    assert decided["isError"] and refusal in _text(decided), _text(decided)
    assert await _status(uid) == "pending by None"


async def _key_for(mcp: Mcp, session: str) -> str:
    from mcp_tools.reviewing import app_keys

    scope_key = session  # a handshake session's key is its id
    grant = await sync_to_async(_token_of)(mcp.token)
    return await app_keys.aissue(token_id=grant, session_key=scope_key)


def _token_of(raw: str | None) -> int:
    from lensrelay.access.auth import authenticate_token

    access = authenticate_token(raw, oauth_surface="mcp")
    assert access is not None and access.token_id is not None
    return access.token_id


async def test_forged_and_hostile_ids_are_refused_and_change_nothing(
    http: httpx.AsyncClient, tokens: TokenFactory, vault: Any
) -> None:
    uid = await _propose(http, tokens)
    await oauth("oauth-rita", username="rita")
    mcp = Mcp(http, "oauth-rita")
    session = await mcp.initialize()
    _, key = await _review(mcp, session, path=NOTE)
    forged = await _call(
        mcp,
        session,
        "review_decide",
        {"suggestion": "0123456789abcdef", "decision": "accept", "app_key": key},
    )
    assert forged["isError"] and "No suggestion 0123456789abcdef" in _text(forged)
    for hostile in ("<img src=x onerror=alert(1)>", "../../etc", uid + "'--"):
        _, key = await _review(mcp, session, path=NOTE)
        bad = await _call(
            mcp, session, "review_decide", {"suggestion": hostile, "decision": "accept", "app_key": key}
        )
        assert bad["isError"] and "Invalid arguments" in _text(bad)
        shown = await _call(mcp, session, "review_suggestions", {"suggestion": hostile})
        assert shown["isError"]
    neither = await _call(mcp, session, "review_suggestions", {})
    assert neither["isError"] and "either path or suggestion" in _text(neither)
    assert await _status(uid) == "pending by None"


async def test_the_stateless_era_decides_with_the_key_its_review_handed_out(
    http: httpx.AsyncClient, tokens: TokenFactory, vault: Any
) -> None:
    uid = await _propose(http, tokens)
    await oauth("oauth-rita", username="rita")
    mcp = Mcp(http, "oauth-rita")
    shown = (
        await mcp.modern("tools/call", {"name": "review_suggestions", "arguments": {"suggestion": uid}})
    ).result
    key = shown["_meta"][APP_META_KEY]["key"]
    assert shown["structuredContent"]["can_decide"] and "io.modelcontextprotocol/serverInfo" in shown["_meta"]
    arguments = {"suggestion": uid, "decision": "reject", "note": "not now", "app_key": key}
    decided = await mcp.modern("tools/call", {"name": "review_decide", "arguments": arguments})
    assert not decided.result["isError"], decided.text()
    assert await _status(uid) == "rejected by rita"
    replayed = await mcp.modern("tools/call", {"name": "review_decide", "arguments": arguments})
    assert replayed.result["isError"] and "no valid app key" in replayed.text()
