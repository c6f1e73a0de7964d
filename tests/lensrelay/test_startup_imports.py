"""What a server start imports before its first answer (issue 11: start to the first MCP answer in 3 s).

Every module imported at start-up is paid for on every start (and compiled from source when no bytecode
is kept). The launcher's path, in a fresh interpreter: Django set up, daphne's server class, the ASGI
application, then `/ready` and a first `/mcp` request. Semantic search's model stack, the review page's
markdown renderer and django-ninja (the JSON API under `/api/`, with `django.test` and `jinja2`) are
loaded where they are first used, never before a fresh server's first answer.
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
from lensrelay import serve
serve._limited_server_class()
from lensrelay.asgi import application

async def ask(method, path):
    sent = []
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"127.0.0.1"), (b"accept", b"application/json, text/event-stream"),
                         (b"content-type", b"application/json")],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    body = iter([{"type": "http.request", "body": b"{}", "more_body": False}])

    async def receive():
        return next(body, None) or await asyncio.Event().wait()

    async def send(message):
        sent.append(message)

    await application(scope, receive, send)
    return sent[0]["status"]

print(json.dumps({
    "ready": asyncio.run(ask("GET", "/ready")),
    "mcp": asyncio.run(ask("POST", "/mcp")),
    "loaded": sorted({name.split(".")[0] for name in sys.modules}),
}))
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
    loaded = set(answers["loaded"])
    assert "lensrelay" in loaded and "daphne" in loaded and "mcp_types" in loaded
    assert sorted(loaded & NOT_AT_START) == []
