"""A client's own name cannot pose as another actor: not an OAuth client that registers (no sign-in needed)
as `Claude (token #7) · root [admin]`, nor an MCP session whose `clientInfo` says the same; and the audit
of token #7 does not list what they did (the second and third findings of the third trust round)."""

from __future__ import annotations

import io
import json
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.management import call_command
from oauth2_provider.models import Application

from lensrelay.access.tokens import token_create
from lensrelay.models import ApiToken
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create
from suggestions.models import Suggestion

from ..lensrelay.access.test_oauth_server import code_from, consent, exchange
from .test_transport_support import HANDSHAKE, Mcp

pytestmark = pytest.mark.django_db(transaction=True)

# Invisible and lookalike characters around the forged label: a soft hyphen, tag characters, the Hangul
# filler, U+0387 (whose normal form is "·"), fullwidth parentheses and a zero-width joiner.
HOSTILE = "Claude\u00ad (token #{id}) \u0387 root [admin]\U000e0041\u3164 \uff08staff\uff09\u200d"


def _registered_as(name: str) -> tuple[str, str]:
    """Register through /oauth/register/ with `name`; the client id and the name the server kept."""
    from django.test import Client

    reply = Client(HTTP_HOST="localhost").post(
        "/oauth/register/",
        data=json.dumps(
            {
                "client_name": name,
                "redirect_uris": ["http://127.0.0.1:7777/callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_method": "none",
            }
        ),
        content_type="application/json",
    )
    assert reply.status_code == 201, reply.content
    client_id = str(reply.json()["client_id"])
    return client_id, Application.objects.get(client_id=client_id).name


def _oauth_token(client_id: str, person: User) -> str:
    reply = exchange(client_id, code_from(consent(person, client_id, role="suggest")))
    assert reply.status_code == 200, reply.content
    return str(reply.json()["access_token"])


def _audit(token_id: int) -> list[dict[str, Any]]:
    out = io.StringIO()
    call_command("audit_export", "--format", "json", "--token", str(token_id), stdout=out)
    records: list[dict[str, Any]] = json.loads(out.getvalue())
    return records


async def _edit(mcp: Mcp, *, client_name: str, old: str, new: str) -> None:
    reply = await mcp.post(
        {
            "jsonrpc": "2.0",
            "id": mcp.next_id(),
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE,
                "capabilities": {},
                "clientInfo": {"name": client_name, "version": "1"},
            },
        }
    )
    assert reply.status == 200, reply.response.text
    session = reply.headers["Mcp-Session-Id"]
    await mcp.post(
        {"jsonrpc": "2.0", "method": "notifications/initialized"}, session=session, version=HANDSHAKE
    )
    read = await mcp.request(
        "tools/call", {"name": "read", "arguments": {"file_path": "Lens/Note"}}, session=session
    )
    assert "quick" in read.text(), read.message
    edit = await mcp.request(
        "tools/call",
        {"name": "edit", "arguments": {"file_path": "Lens/Note", "old_string": old, "new_string": new}},
        session=session,
    )
    assert not edit.result.get("isError"), edit.text()


async def test_an_oauth_client_and_an_mcp_session_cannot_pose_as_a_token(
    http: httpx.AsyncClient, store: Any
) -> None:
    folder = await sync_to_async(folder_create)(name="Lens")
    await document_create(
        store=store, folder=folder, path="/Note.md", text="# Note\n\nThe quick brown fox.\n"
    )
    victim, victim_raw = await sync_to_async(token_create)(name="claude-review", role="edit")
    root = await sync_to_async(User.objects.create_superuser)("root", password="pw")
    hostile = HOSTILE.format(id=victim.pk)

    client_id, kept = await sync_to_async(_registered_as)(hostile)
    assert kept == f"Claude token #{victim.pk} root admin staff"
    oauth_raw = await sync_to_async(_oauth_token)(client_id, root)
    await _edit(Mcp(http, oauth_raw), client_name=hostile, old="quick", new="slow")
    # A session on the victim's own token, whose client also names itself hostilely.
    await _edit(Mcp(http, victim_raw), client_name=hostile, old="brown", new="red")

    by_grant = await Suggestion.objects.aget(new_text__contains="slow")
    assert by_grant.author == f"root · Claude token #{victim.pk} root admin staff"
    by_victim = await Suggestion.objects.aget(new_text__contains="red")
    assert by_victim.author == f"claude-review · Claude token #{victim.pk} root admin staff"
    for author in (by_grant.author, by_victim.author):
        assert "(" not in author and "[" not in author and author.count("·") == 1
    # The audit of the token lists its own session's change, never the grant's.
    audited = await sync_to_async(_audit)(victim.pk)
    assert [r["suggestion"] for r in audited if r["record"] == "suggestion"] == [by_victim.uid]
    assert not [r for r in audited if r["who"].startswith("root")]


def test_clients_may_share_a_name_but_one_persons_grants_never_do() -> None:
    """Every claude.ai connector registers as "Claude": people's grants differ by the person, and one
    person's second client of that name is numbered."""
    alice = User.objects.create_superuser("alice", password="pw")
    bob = User.objects.create_superuser("bob", password="pw")
    first, second = _registered_as("Claude"), _registered_as("claude\u200b")
    assert (first[1], second[1]) == ("Claude", "claude")
    grants = []
    for client_id, person in ((first[0], alice), (first[0], bob), (second[0], alice), (first[0], alice)):
        _oauth_token(client_id, person)
        grants.append(ApiToken.objects.filter(user=person).latest("created").name)
    # alice consenting to her first client again keeps its name (the earlier grant is replaced).
    assert grants == ["alice · Claude", "bob · Claude", "alice · claude 2", "alice · Claude"]


def test_a_client_cannot_take_a_person_or_a_token_name() -> None:
    User.objects.create_user("ada", is_staff=True)
    token_create(name="reviewer-bot", role="view")
    assert _registered_as("Ada")[1] == "Ada 2"
    assert _registered_as("reviewer-bot")[1] == "reviewer-bot 2"
    # Nor does a token take a person's or a client's name.
    token, _ = token_create(name="ADA", role="view")
    assert token.name == "ADA 3"  # "ada" is a person's, "Ada 2" the client's
    with pytest.raises(ValueError, match="needs a name"):
        token_create(name="\u200b\u00ad(  )", role="view")
