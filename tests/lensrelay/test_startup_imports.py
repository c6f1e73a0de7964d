"""What a server start imports before its first answer (issue 11: start to the first MCP answer in 3 s).

Every module imported at start-up is paid for on every start (and compiled from source when no bytecode
is kept). The launcher's path, in a fresh interpreter: Django set up, daphne's server class, the ASGI
application, then `/ready` and a first MCP session (`initialize`, `tools/list`, a `read`). Semantic search's
model stack, the review page's markdown renderer, django-ninja (the JSON API under `/api/`, with
`django.test` and `jinja2`) and `mcp_types` (~500 pydantic models; the common requests are checked by
`mcp_tools.transport.plaincheck`) are loaded where they are first used, never before a fresh server's first
answer. A request those checks do not vouch for still gets the models' answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

START = r"""
import asyncio, json, sys

import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0, skip_checks=True)  # checks would load the whole URLconf
from lensrelay.server import serve
serve._limited_server_class()
from lensrelay.asgi import application
from lensrelay.access.tokens import token_create

_, TOKEN = token_create(name="start", role="view", folders=[], expires_days=None)

async def ask(method, path, message=None, *, token=None, session=None):
    sent = []
    headers = [(b"host", b"127.0.0.1"), (b"accept", b"application/json, text/event-stream"),
               (b"content-type", b"application/json")]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    if session:
        headers += [(b"mcp-session-id", session.encode()), (b"mcp-protocol-version", b"2025-11-25")]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": headers, "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    body = iter([{"type": "http.request", "body": json.dumps(message or {}).encode(), "more_body": False}])

    async def receive():
        return next(body, None) or await asyncio.Event().wait()

    async def send(message):
        sent.append(message)

    await application(scope, receive, send)
    got = {name.lower(): value for name, value in sent[0]["headers"]}.get(b"mcp-session-id", b"").decode()
    text = b"".join(m.get("body", b"") for m in sent[1:]).decode()
    return sent[0]["status"], got, json.loads(text) if text.startswith("{") else text

def call(method, params, session, id_=1):
    message = {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}
    return asyncio.run(ask("POST", "/mcp", message, token=TOKEN, session=session))

def loaded():
    return sorted({name.split(".")[0] for name in sys.modules})

answers = {"ready": asyncio.run(ask("GET", "/ready"))[0], "mcp": asyncio.run(ask("POST", "/mcp"))[0]}
hello = {"protocolVersion": "2025-11-25", "clientInfo": {"name": "start", "version": "1"},
         "capabilities": {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {"form": {}}}}
status, session, reply = asyncio.run(ask("POST", "/mcp", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                                          "params": hello}, token=TOKEN))
answers["initialize"] = status, reply["result"]["protocolVersion"]
from mcp_tools.registry import REGISTRY

def built():
    return sorted(t.name for t in REGISTRY.values() if t.args.__pydantic_complete__)

answers["tool_models_built"] = built()
notified = {"jsonrpc": "2.0", "method": "notifications/initialized"}
answers["initialized"] = asyncio.run(ask("POST", "/mcp", notified, token=TOKEN, session=session))[0]
answers["read"] = call("tools/call", {"name": "read", "arguments": {"file_path": "None/x.md"}}, session)[2]
answers["tool_models_built_by_read"] = built()
answers["loaded"] = loaded()
# Not something the plain checks vouch for: the models answer, with their error.
answers["bad"] = call("tools/call", {"name": 7}, session)[2]
answers["tools"] = len(call("tools/list", {}, session)[2]["result"]["tools"])
answers["loaded_after_bad"] = loaded()
print(json.dumps(answers))
"""

NOT_AT_START = {
    "ninja",  # /api and its docs load it when first asked for
    "jinja2",
    "unittest",
    "torch",
    "sentence_transformers",
    "transformers",
    "numpy",
    "markdown_it",
    "boto3",
    "botocore",
}


def test_starting_the_server_imports_no_model_stack_nor_renderer(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "lensrelay.settings",
        "LENSRELAY_DATA_DIR": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
    }
    result = subprocess.run(
        [sys.executable, "-c", START], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    answers = json.loads(result.stdout.strip().splitlines()[-1])
    assert (answers["ready"], answers["mcp"]) == (200, 401)  # answered: ready, and no token
    assert answers["initialize"] == [200, "2025-11-25"]
    assert answers["initialized"] == 202
    assert answers["tools"] > 5
    assert answers["read"]["result"]["isError"] is True  # answered: no such note
    # Tool argument models are built when first used: the read built its own.
    assert (answers["tool_models_built"], answers["tool_models_built_by_read"]) == ([], ["read"])
    loaded = set(answers["loaded"])
    assert "lensrelay" in loaded and "daphne" in loaded and "pydantic" in loaded
    assert sorted(loaded & NOT_AT_START) == []
    assert "mcp_types" not in loaded
    bad = answers["bad"]["error"]
    assert bad["code"] == -32602 and bad["message"].startswith("Invalid params for tools/call: params.name")
    assert "mcp_types" in answers["loaded_after_bad"]
