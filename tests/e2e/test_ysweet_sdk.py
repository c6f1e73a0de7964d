"""Jamsocket's `@y-sweet/sdk` and `@y-sweet/client` (0.9.1) against one served Lens Relay.

The Node suite (``node/ysweet_sdk.test.mjs``, node's own test runner) calls every `DocumentManager`
method, runs the documented auth-endpoint pattern with two providers (text, maps, awareness), a read-only
client token, an expired one and the file upload/download flow. The last test restarts the server under a
connected provider (``node/ysweet_restart.mjs``) and checks it reconnects and its edits land.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.lensrelay.files.samples import png

from .relay import Relay, RelayTokens, TokenSpec
from .yclient import NODE_DIR, node_executable

pytestmark = pytest.mark.e2e

SUITE = NODE_DIR / "ysweet_sdk.test.mjs"
RESTART = NODE_DIR / "ysweet_restart.mjs"
TIMEOUT = 60.0


@pytest.fixture(scope="module")
def site(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> RelayTokens:
    alpha: Path = tmp_path_factory.mktemp("alpha")
    (alpha / "Note.md").write_text("# Note\n", encoding="utf-8")
    (alpha / "pic.png").write_bytes(png(3))
    beta: Path = tmp_path_factory.mktemp("beta")
    (beta / "Plan.md").write_text("# Plan\n", encoding="utf-8")
    scoped = relay.setup(
        imports=[(alpha, "Alpha"), (beta, "Beta")], tokens={"alpha-edit": TokenSpec("edit", ("Alpha",))}
    )
    return RelayTokens(relay=relay, tokens={**relay.tokens, **scoped})


def node_env(site: RelayTokens, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "RELAY_URL": site.relay.http_url,
        "EDIT_TOKEN": site.tokens["edit"],
        "VIEW_TOKEN": site.tokens["view"],
        "ALPHA_TOKEN": site.tokens["alpha-edit"],
        **extra,
    }


async def test_the_sdk_and_client_suite_passes(site: RelayTokens) -> None:
    relay, edit = site.relay, site.tokens["edit"]
    env = node_env(
        site,
        ALPHA_DOC=await relay.doc_id(edit, folder="Alpha", path="Note.md"),
        BETA_DOC=await relay.doc_id(edit, folder="Beta", path="Plan.md"),
        FILE_DOC=await relay.doc_id(edit, folder="Alpha", path="pic.png"),
    )
    run = await asyncio.to_thread(
        subprocess.run,
        [node_executable(), "--test", "--test-reporter=tap", str(SUITE)],
        cwd=NODE_DIR, env=env, capture_output=True, text=True, timeout=TIMEOUT * 3,
    )  # fmt: skip
    report = run.stdout + run.stderr
    assert run.returncode == 0, report
    expected = len(re.findall(r"^test\(", SUITE.read_text(encoding="utf-8"), flags=re.M))
    assert re.search(rf"^# pass {expected}$", run.stdout, flags=re.M), report
    assert re.search(r"^# fail 0$", run.stdout, flags=re.M), report


async def test_a_provider_reconnects_after_a_restart_and_its_edits_land(site: RelayTokens) -> None:
    # Last in the module: it restarts the module's server.
    relay = site.relay
    doc_id = "sdk-restart"
    process = await asyncio.create_subprocess_exec(
        node_executable(), str(RESTART), cwd=NODE_DIR, env=node_env(site, DOC_ID=doc_id),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    try:
        ready = json.loads(await asyncio.wait_for(process.stdout.readline(), TIMEOUT) or b"{}")
        assert ready == {"ready": "before restart."}, await _stderr(process)
        await relay.server.arestart()
        process.stdin.write(b"restarted\n")
        await process.stdin.drain()
        done = json.loads(await asyncio.wait_for(process.stdout.readline(), TIMEOUT) or b"{}")
        assert done.get("done") == "before restart. after restart.", await _stderr(process)
        assert done["closes"], done
        assert await relay.doc_text(doc_id, token=site.tokens["edit"]) == "before restart. after restart."
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def _stderr(process: asyncio.subprocess.Process) -> str:
    if process.returncode is None:
        process.kill()
    assert process.stderr is not None
    return (await process.stderr.read()).decode(errors="replace")[-4000:]
