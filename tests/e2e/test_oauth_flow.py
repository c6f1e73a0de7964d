"""An assistant connects the way claude.ai's connectors do: the official `mcp` SDK's OAuth client provider
against a served Lens Relay, the consent page driven in headless Chromium.

The whole flow: a 401 names the resource metadata, the SDK discovers the authorization server, registers
itself (RFC 7591), sends the person to the consent page (signed in through the admin's login), exchanges
the code with its PKCE verifier, refreshes (the refresh token rotates), then calls tools. The grant is for
one folder and the client sees nothing of the other on any tool. Revoking the grant in the admin ends the
session at once. A non-staff person cannot grant anything; a person without live-edit rights is not
offered (and cannot forge) the edit role. A code exchanged by hand works once: replayed, it is refused and
the tokens it issued stop working on /mcp and at the token endpoint; a failed PKCE check burns it.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from mcp.shared.exceptions import MCPError
from playwright.sync_api import BrowserContext, Route

from .browser import PASSWORD, BrowserThread, mcp_client, signed_in_context
from .errors import leaves
from .liveserver import free_port
from .notify_clients import RawSession
from .relay import Relay

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

TIMEOUT = 30.0
CUT_OFF_SECONDS = 1.0
RELAY_ENV = {"LENSRELAY_OAUTH_ACCESS_TOKEN_SECONDS": "600"}
ALPHA, BRAVO = "Alpha", "Bravo"
ALPHA_TEXT = "# Plan\n\nThe alpha plan mentions zebra.\n"
BRAVO_TEXT = "# Secret\n\nThe bravo vault code is zebra-4711.\n"
_MARKER = "E2E-OAUTH "
_SETUP = """
from django.contrib.auth.models import User
from django.core.management import call_command
call_command("import_vault", {alpha!r}, folder={alpha_name!r})
call_command("import_vault", {bravo!r}, folder={bravo_name!r})
User.objects.create_superuser("alice", password={password!r})
User.objects.create_user("vera", password={password!r}, is_staff=True)
User.objects.create_user("bob", password={password!r}, is_staff=False)
print({marker!r} + "ok")
"""


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None
        self.history: list[OAuthToken] = []

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.history.append(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@dataclass
class World:
    relay: Relay
    browser: BrowserThread
    alice: BrowserContext
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return self.relay.http_url


@pytest.fixture(scope="module")
def world(
    relay: Relay, browser_thread: BrowserThread, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    alpha, bravo = tmp_path_factory.mktemp("alpha"), tmp_path_factory.mktemp("bravo")
    (alpha / "Plan.md").write_text(ALPHA_TEXT, encoding="utf-8")
    (bravo / "Secret.md").write_text(BRAVO_TEXT, encoding="utf-8")
    script = _SETUP.format(
        alpha=str(alpha),
        alpha_name=ALPHA,
        bravo=str(bravo),
        bravo_name=BRAVO,
        password=PASSWORD,
        marker=_MARKER,
    )
    assert _MARKER + "ok" in relay.manage("shell", "-c", script)
    alice = signed_in_context(browser_thread, relay.http_url, "alice")
    yield World(relay, browser_thread, alice)
    browser_thread.call(alice.close)


def consent(
    world: World, context: BrowserContext, url: str, callback: str, *, role: str, folders: list[str]
) -> str:
    """Open the authorization URL in `context`, grant `role` on `folders`, return the callback URL reached."""
    reached: list[str] = []

    def drive() -> None:
        page = context.new_page()

        def land(route: Route) -> None:
            reached.append(route.request.url)
            route.fulfill(status=200, content_type="text/plain", body="You can close this tab.")

        page.route(f"{callback}*", land)
        try:
            page.goto(url)
            assert page.locator("#client-name").inner_text() == "Claude"
            page.select_option("#id_role", role)
            for label in folders:
                page.locator("#id_folders label", has_text=label).locator("input").check()
            page.click("#allow")
            page.wait_for_url(f"{callback}*")
        finally:
            page.close()

    world.browser.call(drive)
    assert reached, "the consent page never sent the browser back to the client"
    return reached[0]


@dataclass
class Connector:
    provider: OAuthClientProvider
    storage: MemoryStorage
    callback: str


def connector(world: World, *, role: str, folders: list[str]) -> Connector:
    callback = f"http://127.0.0.1:{free_port()}/callback"
    storage = MemoryStorage()
    landed: list[str] = []

    async def redirect_handler(url: str) -> None:
        landed.append(
            await asyncio.to_thread(consent, world, world.alice, url, callback, role=role, folders=folders)
        )

    async def callback_handler() -> AuthorizationCodeResult:
        query = parse_qs(urlparse(landed.pop()).query)
        # RFC 9207: the SDK checks `iss` against the metadata's issuer, and requires it since the metadata
        # says responses carry it.
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0], iss=query["iss"][0])

    provider = OAuthClientProvider(
        server_url=f"{world.base}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="Claude",
            redirect_uris=[callback],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    return Connector(provider, storage, callback)


@asynccontextmanager
async def connected(world: World, conn: Connector) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(auth=conn.provider, timeout=TIMEOUT)
    async with http:
        transport = streamable_http_client(f"{world.base}/mcp", http_client=http)
        async with Client(transport, mode="legacy") as client:
            yield client


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def admin_revoke(world: World, grant_name: str, role_label: str) -> float:
    """Revoke the grant through the admin's token list (select, action, confirm); returns when it was done."""

    def revoke() -> float:
        page = world.alice.new_page()
        try:
            page.goto(f"{world.base}/admin/lensrelay/apitoken/")
            row = (
                page.locator("#result_list tbody tr", has_text=grant_name)
                .filter(has_text=role_label)
                .filter(has_text="active")
            )
            assert "OAuth grant" in row.inner_text()
            row.locator("input.action-select").check()
            page.select_option("select[name=action]", "revoke_selected")
            page.click("button[name=index]")
            page.wait_for_selector(".messagelist")
            return time.monotonic()
        finally:
            page.close()

    return world.browser.call(revoke)


async def test_the_sdk_connects_refreshes_and_sees_only_its_folder(world: World) -> None:
    # Discovery starts from the 401 of /mcp.
    async with httpx.AsyncClient() as plain:
        refused = await plain.post(f"{world.base}/mcp", json={})
        assert refused.status_code == 401
        assert (
            f'resource_metadata="{world.base}/.well-known/oauth-protected-resource/mcp"'
            in (refused.headers["WWW-Authenticate"])
        )
        metadata = (await plain.get(f"{world.base}/.well-known/oauth-protected-resource/mcp")).json()
        assert metadata["resource"] == f"{world.base}/mcp"

    conn = connector(world, role="edit", folders=[ALPHA])
    started = time.monotonic()
    async with connected(world, conn) as client:
        listed = await client.list_tools()
        world.timings["connect_to_first_tool_seconds"] = time.monotonic() - started
        assert "read" in {tool.name for tool in listed.tools}
        assert conn.storage.client is not None and conn.storage.client.client_id
        first = conn.storage.tokens
        assert first is not None and first.refresh_token and first.expires_in

        seen = text(await client.call_tool("read", {"file_path": f"{ALPHA}/Plan.md"}))
        assert "alpha plan" in seen

        # Force a refresh: the token rotates and the next calls carry the new one.
        conn.provider.context.token_expiry_time = time.time() - 1
        globbed = text(await client.call_tool("glob", {"pattern": "**/*.md"}))
        second = conn.storage.tokens
        assert second is not None and second.access_token != first.access_token
        assert second.refresh_token and second.refresh_token != first.refresh_token

        # Folder A only, on every tool.
        assert f"{ALPHA}/Plan.md" in globbed and BRAVO not in globbed
        grep = text(await client.call_tool("grep", {"pattern": "zebra"}))
        assert "alpha" in grep.lower() and "4711" not in grep and BRAVO not in grep
        for tool, arguments in [
            ("read", {"file_path": f"{BRAVO}/Secret.md"}),
            ("get_links", {"file_path": f"{BRAVO}/Secret.md"}),
            ("edit", {"file_path": f"{BRAVO}/Secret.md", "old_string": "4711", "new_string": "0000"}),
            ("grep", {"pattern": "zebra", "path": BRAVO}),
            ("glob", {"pattern": "**", "path": BRAVO}),
        ]:
            answer = await client.call_tool(tool, arguments)
            assert answer.is_error, f"{tool} reached {BRAVO}"
            assert "4711" not in text(answer)

        # What it proposes carries who it acts for and which client.
        proposed = await client.call_tool(
            "edit",
            {"file_path": f"{ALPHA}/Plan.md", "old_string": "alpha plan", "new_string": "alpha scheme"},
        )
        assert not proposed.is_error, text(proposed)
        author = world.relay.manage(
            "shell",
            "-c",
            "from suggestions.models import Suggestion; print(Suggestion.objects.latest('pk').author)",
        )
        assert author.strip().splitlines()[-1] == "alice · Claude"

        # The old refresh token, replayed after rotation, is refused and issues nothing.
        async with httpx.AsyncClient() as plain:
            replay = await plain.post(
                f"{world.base}/oauth/token/",
                data={
                    "grant_type": "refresh_token",
                    "refresh_token": first.refresh_token,
                    "client_id": conn.storage.client.client_id,
                },
            )
        assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
        assert "access_token" not in replay.json()


async def test_revoking_the_grant_in_the_admin_ends_the_session(world: World) -> None:
    conn = connector(world, role="suggest", folders=[ALPHA])
    observed: dict[str, Any] = {}

    async def no_new_consent(url: str) -> None:
        raise RuntimeError("asked for a new consent")

    with pytest.raises(BaseException) as ended:  # the session's end surfaces from the client's exit too
        async with connected(world, conn) as client:
            observed["before"] = text(await client.call_tool("read", {"file_path": f"{ALPHA}/Plan.md"}))
            token = conn.storage.tokens
            assert token is not None
            revoked_at = await asyncio.to_thread(admin_revoke, world, "alice · Claude", "Suggest (read")
            # The token's very next request is refused, within the second.
            async with httpx.AsyncClient() as plain:
                while True:
                    answer = await plain.post(
                        f"{world.base}/mcp",
                        headers={
                            "Authorization": f"Bearer {token.access_token}",
                            "Accept": "application/json, text/event-stream",
                            "MCP-Protocol-Version": "2025-11-25",
                        },
                        json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
                    )
                    if answer.status_code == 401 or time.monotonic() - revoked_at > CUT_OFF_SECONDS:
                        break
                    await asyncio.sleep(0.05)
            observed["status"], observed["elapsed"] = answer.status_code, time.monotonic() - revoked_at
            # The SDK's session is over: its next call is refused and only a new consent would reopen it.
            conn.provider.context.redirect_handler = no_new_consent
            await client.call_tool("read", {"file_path": f"{ALPHA}/Plan.md"})
            observed["after"] = "still answered"
    assert "The alpha" in observed["before"]
    assert observed["status"] == 401
    assert observed["elapsed"] <= CUT_OFF_SECONDS + 0.2
    assert "after" not in observed
    # Either the client asked for a new consent, or the server's refusal of the ended session reached it,
    # bare or inside the SDK's task groups, depending on which of its tasks saw the end first.
    assert "asked for a new consent" in repr(ended.value) or any(
        isinstance(leaf, MCPError) for leaf in leaves(ended.value)
    )


def test_a_person_without_staff_rights_grants_nothing(world: World) -> None:
    """bob is not staff: the admin login refuses him, so the consent page is never reached."""

    def try_sign_in() -> str:
        context = world.browser.browser.new_context()
        page = context.new_page()
        try:
            page.goto(f"{world.base}/oauth/authorize/?client_id=x&response_type=code")
            assert "/admin/login/" in page.url
            page.fill("#id_username", "bob")
            page.fill("#id_password", PASSWORD)
            page.click("input[type=submit]")
            return page.content()
        finally:
            context.close()

    content = world.browser.call(try_sign_in)
    assert "staff account" in content
    assert 'id="consent"' not in content


async def test_the_role_offered_stops_at_the_persons_own_rights(world: World) -> None:
    """vera is staff without live-edit rights: edit is not offered, and a forged edit is refused."""
    vera = signed_in_context(world.browser, world.base, "vera")
    try:
        conn = connector(world, role="view", folders=[])
        # Register and start the flow by hand to stop at the consent page.
        async with httpx.AsyncClient() as plain:
            registered = (
                await plain.post(
                    f"{world.base}/oauth/register/",
                    json={
                        "client_name": "Claude",
                        "redirect_uris": [conn.callback],
                        "grant_types": ["authorization_code", "refresh_token"],
                        "token_endpoint_auth_method": "none",
                    },
                )
            ).json()
        url = (
            f"{world.base}/oauth/authorize/?response_type=code&client_id={registered['client_id']}"
            f"&redirect_uri={conn.callback}&state=s&code_challenge={'a' * 43}&code_challenge_method=S256"
        )

        def forge() -> tuple[list[str], int, str]:
            page = vera.new_page()
            try:
                page.goto(url)
                offered = page.locator("#id_role option").evaluate_all("(os) => os.map(o => o.value)")
                # Forge the POST: add an "edit" option the page did not offer and submit it.
                page.locator("#id_role").evaluate(
                    "(s) => { const o = document.createElement('option');"
                    " o.value = 'edit'; s.add(o); s.value = 'edit'; }"
                )
                with page.expect_response(
                    lambda r: "/oauth/authorize/" in r.url and r.request.method == "POST"
                ) as info:
                    page.click("#allow")
                return offered, info.value.status, page.content()
            finally:
                page.close()

        offered, status, content = world.browser.call(forge)
        assert offered == ["view"]
        assert status == 200 and "Select a valid choice" in content
        grants = json.loads(
            world.relay.manage(
                "shell",
                "-c",
                "import json; from lensrelay.models import ApiToken; print(json.dumps(list("
                "ApiToken.objects.filter(user__username='vera').values_list('role', flat=True))))",
            )
            .strip()
            .splitlines()[-1]
        )
        assert grants == []
    finally:
        world.browser.call(vera.close)


async def test_tool_errors_start_alike_and_windows_names_are_refused(world: World) -> None:
    """Through the official client: every tool error starts with "Error: "; a name Windows cannot hold is
    refused naming the rule, and nothing is proposed."""
    async with mcp_client(world.base, world.relay.tokens["edit"]) as client:
        for name in ["Bad:name.md", "What?.md", "Trailing. /x.md", "Note .md ", 'Quote".md', "Pipe|.md"]:
            answer = await client.call_tool("write", {"file_path": f"{ALPHA}/{name}", "content": "x"})
            assert answer.is_error, name
            assert text(answer).startswith("Error: ") and "Windows" in text(answer), text(answer)
        moved = await client.call_tool(
            "move", {"file_path": f"{ALPHA}/Plan.md", "new_path": f"{ALPHA}/Plan*.md"}
        )
        assert moved.is_error and text(moved).startswith("Error: ") and "Windows" in text(moved)
        failures = [
            await client.call_tool("read", {"file_path": f"{ALPHA}/Missing.md"}),
            await client.call_tool(
                "edit", {"file_path": f"{ALPHA}/Plan.md", "old_string": "x", "new_string": "x"}
            ),
            await client.call_tool("read", {}),
            await client.call_tool("no_such_tool", {}),
            await client.call_tool("grep", {"pattern": "(unclosed"}),
        ]
        for failure in failures:
            assert failure.is_error and text(failure).startswith("Error: "), text(failure)

        # read's pending-suggestions footer names each suggestion by the id list_suggestions gives.
        await client.call_tool("read", {"file_path": f"{ALPHA}/Plan.md"})
        edited = await client.call_tool(
            "edit", {"file_path": f"{ALPHA}/Plan.md", "old_string": "zebra", "new_string": "okapi"}
        )
        assert not edited.is_error, text(edited)
        footer = text(await client.call_tool("read", {"file_path": f"{ALPHA}/Plan.md"})).split(
            "[Pending suggestions]"
        )[1]
        mine = [line for line in footer.splitlines() if "{++okapi++}" in line]
        assert len(mine) == 1 and ", id " in mine[0], footer
        uid = mine[0].rsplit(", id ", 1)[1].strip()
        listed = text(await client.call_tool("list_suggestions", {}))
        assert f"- {uid} PENDING" in listed, listed
    pending = world.relay.manage(
        "shell",
        "-c",
        "from suggestions.models import Suggestion; print(Suggestion.objects.filter(tool='move').count())",
    )
    assert pending.strip().splitlines()[-1] == "0"


# ------------------------------------------------------------------- authorization codes after first use

VERIFIER = "lens-relay-e2e-verifier-" + "v" * 40


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


async def code_by_hand(world: World) -> tuple[str, str, str]:
    """Register a client, consent as alice (view, Alpha) with the S256 challenge of VERIFIER: (client id,
    redirect URI, code)."""
    callback = f"http://127.0.0.1:{free_port()}/callback"
    async with httpx.AsyncClient() as plain:
        registered = await plain.post(
            f"{world.base}/oauth/register/",
            json={
                "client_name": "Claude",
                "redirect_uris": [callback],
                "grant_types": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_method": "none",
            },
        )
    client_id = str(registered.json()["client_id"])
    url = f"{world.base}/oauth/authorize/?" + urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": callback,
            "state": "s",
            "code_challenge": s256(VERIFIER),
            "code_challenge_method": "S256",
            "resource": f"{world.base}/mcp",
        }
    )
    landed = await asyncio.to_thread(consent, world, world.alice, url, callback, role="view", folders=[ALPHA])
    return client_id, callback, parse_qs(urlparse(landed).query)["code"][0]


async def token_request(world: World, **data: str) -> httpx.Response:
    async with httpx.AsyncClient() as plain:
        return await plain.post(f"{world.base}/oauth/token/", data=data)


async def exchange(world: World, client_id: str, callback: str, code: str, verifier: str) -> httpx.Response:
    return await token_request(
        world,
        grant_type="authorization_code",
        code=code,
        redirect_uri=callback,
        client_id=client_id,
        code_verifier=verifier,
        resource=f"{world.base}/mcp",
    )


async def mcp_initialize_status(world: World, access_token: str) -> int:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        return (await RawSession(http, access_token).initialize(world.base)).status_code


async def test_a_replayed_code_revokes_the_tokens_it_issued(world: World) -> None:
    """RFC 6749 §4.1.2: a code used twice is refused, and what it issued before stops working."""
    client_id, callback, code = await code_by_hand(world)
    first = await exchange(world, client_id, callback, code, VERIFIER)
    assert first.status_code == 200, first.text
    tokens = first.json()
    async with mcp_client(world.base, tokens["access_token"]) as client:
        seen = text(await client.call_tool("read", {"file_path": f"{ALPHA}/Plan.md"}))
    assert "alpha" in seen
    assert await mcp_initialize_status(world, tokens["access_token"]) == 200

    replay = await exchange(world, client_id, callback, code, VERIFIER)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert "access_token" not in replay.json()
    assert await mcp_initialize_status(world, tokens["access_token"]) == 401
    refreshed = await token_request(
        world, grant_type="refresh_token", refresh_token=tokens["refresh_token"], client_id=client_id
    )
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"


@pytest.mark.parametrize("wrong", ["w" * 64, ""], ids=["wrong-verifier", "no-verifier"])
async def test_a_failed_pkce_check_burns_the_code(world: World, wrong: str) -> None:
    client_id, callback, code = await code_by_hand(world)
    failed = await exchange(world, client_id, callback, code, wrong)
    assert failed.status_code == 400 and "access_token" not in failed.json()
    assert failed.json()["error"] == ("invalid_grant" if wrong else "invalid_request")
    right = await exchange(world, client_id, callback, code, VERIFIER)
    assert right.status_code == 400 and right.json()["error"] == "invalid_grant"
    assert "access_token" not in right.json()
