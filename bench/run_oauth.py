"""OAuth against API tokens, on one served Lens Relay: connect time and `/mcp` latency.

- **connect**: from "add connector" (the official `mcp` SDK's OAuth client provider given the URL) to the
  first tool call's answer: 401, discovery, registration, the consent page in headless Chromium (signed
  in already, as a person adding a connector is), code exchange, `initialize`, `tools/call read`. Peer:
  the same SDK client with an API token in a header, URL to first tool call's answer.
- **latency**: `tools/call read` of one note, sequential, over one session each, OAuth access token vs
  API token (same role, same folder), rounds alternating so both see the same machine load. Both tokens are
  checked from memory after their first request (`mcp_tools.callers.memory`), so the goal is no difference.

    .venv/bin/python -m bench.run_oauth [--rounds 5] [--calls 200] [--connects 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench import harness
from bench.run_grep import McpSession
from tests.e2e.browser import PASSWORD, BrowserThread, signed_in_context
from tests.e2e.relay import Relay
from tests.e2e.test_oauth_flow import World, connected, connector

FOLDER = "Bench"
NOTE = "# Note\n\n" + "A line of the benchmark note.\n" * 40
_SETUP = """
from datetime import timedelta
from django.contrib.auth.models import User
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application
from lensrelay.access.oauth import grant_create
from lensrelay.models import Folder
user = User.objects.create_superuser("bench", password={password!r})
app = Application.objects.create(
    name="Bench", client_type="public", authorization_grant_type="authorization-code",
    redirect_uris="http://127.0.0.1:1/cb",
)
grant_create(user=user, application=app, role="edit", folders=Folder.objects.filter(name={folder!r}))
AccessToken.objects.create(user=user, application=app, token="bench-oauth-token", scope="mcp",
                           expires=timezone.now() + timedelta(hours=2), resource=[{base!r} + "/mcp"])
print("ready")
"""


async def sequential(url: str, token: str, calls: int) -> list[float]:
    session = McpSession(url, token)
    await session.open()
    try:
        await session.call("read", {"file_path": f"{FOLDER}/Note.md"})  # untimed: first lookup
        timings = []
        for _ in range(calls):
            started = time.perf_counter()
            reply = await session.call("read", {"file_path": f"{FOLDER}/Note.md"})
            timings.append(time.perf_counter() - started)
            assert not reply.is_error, reply.text
        return timings
    finally:
        await session.close()


async def api_connect(base: str, token: str) -> float:
    started = time.monotonic()
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    transport = streamable_http_client(f"{base}/mcp", http_client=http)
    async with http, Client(transport, mode="legacy") as client:
        result = await client.call_tool("read", {"file_path": f"{FOLDER}/Note.md"})
        assert not result.is_error
        return time.monotonic() - started


async def oauth_connect(world: World) -> float:
    started = time.monotonic()
    conn = connector(world, role="edit", folders=[FOLDER])
    async with connected(world, conn) as client:
        result = await client.call_tool("read", {"file_path": f"{FOLDER}/Note.md"})
        assert not result.is_error
        return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--connects", type=int, default=3)
    args = parser.parse_args(argv)
    harness.print_header("OAuth vs API token", source=harness.describe_source(harness.REPO_ROOT, None))
    with tempfile.TemporaryDirectory(prefix="bench-oauth-") as work:
        workdir = Path(work)
        vault = workdir / "vault"
        vault.mkdir()
        (vault / "Note.md").write_text(NOTE, encoding="utf-8")
        server = harness.start_relay(workdir)
        browser = BrowserThread()
        try:
            harness.import_vault(server, vault, folder=FOLDER)
            api_token = harness.create_token(server, role="edit")
            base = server.http_url
            setup = _SETUP.format(password=PASSWORD, folder=FOLDER, base=base)
            assert "ready" in harness.manage(server, "shell", "-c", setup)
            url = f"{base}/mcp"
            api: list[float] = []
            oauth: list[float] = []
            for round_number in range(args.rounds):
                # Alternate which goes first, so neither always meets the machine warmer or busier.
                order = [(api, api_token), (oauth, "bench-oauth-token")]
                for timings, token in order if round_number % 2 == 0 else order[::-1]:
                    timings += asyncio.run(sequential(url, token, args.calls))
            browser.start()
            world = World(Relay(server), browser, signed_in_context(browser, base, "bench"))
            api_connects = [asyncio.run(api_connect(base, api_token)) for _ in range(args.connects)]
            oauth_connects = [asyncio.run(oauth_connect(world)) for _ in range(args.connects)]
        finally:
            browser.close()
            server.stop()
    p50_api, p50_oauth = statistics.median(api) * 1000, statistics.median(oauth) * 1000
    c_api, c_oauth = statistics.median(api_connects), statistics.median(oauth_connects)
    print(
        harness.table(
            ["measure", "OAuth", "API token (peer)", "ratio"],
            [
                [
                    "`read` p50, sequential",
                    f"{p50_oauth:.2f} ms",
                    f"{p50_api:.2f} ms",
                    harness.ratio(p50_oauth, p50_api),
                ],
                [
                    "add connector → first tool answer (median)",
                    f"{c_oauth:.2f} s",
                    f"{c_api:.2f} s",
                    harness.ratio(c_oauth, c_api),
                ],
            ],
        )
    )
    print(f"connect runs: OAuth {[round(x, 2) for x in oauth_connects]} s")
    print(f"connect runs: API token {[round(x, 2) for x in api_connects]} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
