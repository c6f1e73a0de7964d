"""Helpers for driving a live Lens Relay server from e2e tests: tokens, vault import/export, HTTP reads.

A :class:`Relay` wraps a running :class:`~tests.e2e.liveserver.LiveServer` (daphne + SQLite). Management
commands run in separate processes (as an operator would run them); the ``a``-prefixed methods run them in
a thread so the test's event loop keeps serving its Yjs clients meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
from pycrdt import Doc, Map, Text

from .liveserver import LiveServer, lensrelay_server

T = TypeVar("T")

HTTP_TIMEOUT = 10.0
_TOKENS_MARKER = "E2E-TOKENS "
_DB_FILES = ("db.sqlite3", "db.sqlite3-wal", "db.sqlite3-shm")

# Several set-up steps in one Django start-up (each `manage.py` run costs a second or two of CPU):
# optionally migrate, import vaults through the import_vault command, then create tokens.
_SETUP_SCRIPT = """
import json
from django.core.management import call_command
from lensrelay.models import Folder
from lensrelay.access.tokens import token_create
plan = json.loads({plan!r})
if plan["migrate"]:
    call_command("migrate", interactive=False, verbosity=0)
for path, folder in plan["imports"]:
    call_command("import_vault", path, folder=folder)
raw = {{}}
for name, spec in plan["tokens"].items():
    folders = [Folder.objects.get(name=folder) for folder in spec["folders"]]
    _, raw[name] = token_create(name=name, role=spec["role"], folders=folders)
print({marker!r} + json.dumps(raw))
"""

_BACKLOG_MARKER = "E2E-BACKLOG "
_BACKLOG_SCRIPT = """
from lensrelay.docstore.derived import derive_backlog
print({marker!r} + str(int(derive_backlog() or 0)))
"""

_DISABLE_TOKENS_SCRIPT = """
from datetime import timedelta
from django.utils import timezone
from lensrelay.models import ApiToken
from lensrelay.access.tokens import token_revoke
for raw in {revoke!r}:
    token_revoke(token=ApiToken.objects.get(token_hash=ApiToken.hash_token(raw)))
for raw in {expire!r}:
    token = ApiToken.objects.get(token_hash=ApiToken.hash_token(raw))
    token.expires_at = timezone.now() - timedelta(minutes=1)
    token.save(update_fields=["expires_at"])
print("done")
"""


@dataclass(frozen=True)
class TokenSpec:
    role: str
    folders: tuple[str, ...] = ()


# Tokens for every folder, made once in the template database, so modules need not start Django for them.
# "to-revoke" and "to-expire" are spares a module may disable in its own copy of the database.
BASE_TOKENS: dict[str, TokenSpec] = {
    "edit": TokenSpec("edit"),
    "admin": TokenSpec("admin"),
    "view": TokenSpec("view"),
    "suggest": TokenSpec("suggest"),
    "to-revoke": TokenSpec("edit"),
    "to-expire": TokenSpec("edit"),
}


@dataclass(frozen=True)
class Template:
    """A migrated database (``data_dir``) holding :data:`BASE_TOKENS` (name -> raw ``tokens``)."""

    data_dir: Path
    tokens: dict[str, str]


def migrated_template(directory: Path) -> Template:
    """Migrate a fresh SQLite database once and add the base tokens; servers copy it instead."""
    server = lensrelay_server(directory)
    tokens = Relay(server).setup(migrate=True, tokens=BASE_TOKENS)
    return Template(data_dir=server.data_dir, tokens=tokens)


def new_relay_server(base: Path, *, template: Template | None = None, **env: str) -> LiveServer:
    """An unstarted server in ``base``; with ``template`` its database starts as a copy (no migrate)."""
    server = lensrelay_server(base, **env)
    if template is not None:
        for name in _DB_FILES:
            if (template.data_dir / name).exists():
                shutil.copyfile(template.data_dir / name, server.data_dir / name)
        server.setup = []
    return server


def read_text(update: bytes, name: str = "contents") -> str:
    """The text ``name`` of a document given as one binary Yjs update."""
    doc: Doc = Doc()
    if update:
        doc.apply_update(update)
    return str(doc.get(name, type=Text))


def read_map(update: bytes, name: str) -> dict[str, Any]:
    doc: Doc = Doc()
    if update:
        doc.apply_update(update)
    return dict(doc.get(name, type=Map).to_py() or {})


def bearer(token: str | None) -> dict[str, str]:
    return {} if token is None else {"Authorization": f"Bearer {token}"}


async def poll(
    probe: Callable[[], Awaitable[T]],
    done: Callable[[T], bool],
    *,
    timeout: float = 10.0,
    interval: float = 0.1,
    what: str = "condition",
) -> T:
    """Call ``probe`` until ``done(result)``; fail with the last result after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = await probe()
        if done(result):
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} not reached within {timeout} s; last value: {result!r}")
        await asyncio.sleep(interval)


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and directory (None) under ``root``, keyed by POSIX relative path."""
    found: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        key = path.relative_to(root).as_posix()
        found[key] = None if path.is_dir() else path.read_bytes()
    return found


@dataclass(frozen=True)
class RelayTokens:
    """A module's relay with the raw tokens of its own set-up (base tokens included), by name."""

    relay: Relay
    tokens: dict[str, str]

    def __getitem__(self, name: str) -> str:
        return self.tokens[name]


class Relay:
    """A running Lens Relay server plus the operator's tools (management commands, HTTP).

    ``tokens`` maps names to raw tokens known to its database (see :data:`BASE_TOKENS`).
    """

    def __init__(self, server: LiveServer, tokens: Mapping[str, str] | None = None) -> None:
        self.server = server
        self.tokens = dict(tokens or {})

    # ---------------------------------------------------------------- addresses

    @property
    def http_url(self) -> str:
        return self.server.http_url

    def doc_url(self, doc_id: str) -> str:
        """The y-websocket server URL of a document (room = ``doc_id``)."""
        return self.server.doc_server_url(doc_id)

    # ---------------------------------------------------------------- management commands

    def manage(self, *args: str) -> str:
        return self.server.manage(*args).stdout

    def command(self, name: str, *args: str) -> str:
        """A management command as an operator runs it, minus the system checks (about a second of CPU
        each time; the server's own start-up is where a broken configuration would show)."""
        return self.manage(name, "--skip-checks", *args)

    def create_token(
        self, *, name: str, role: str, folders: Iterable[str] = (), expires_days: int | None = None
    ) -> str:
        """Through `create_token`, which prints the raw token alone on its last line."""
        args = ["--name", name, "--role", role]
        for folder in folders:
            args += ["--folder", folder]
        if expires_days is not None:
            args += ["--expires-days", str(expires_days)]
        return self.command("create_token", *args).strip().splitlines()[-1].strip()

    def setup(
        self,
        *,
        migrate: bool = False,
        imports: Iterable[tuple[Path, str]] = (),
        tokens: Mapping[str, TokenSpec] | None = None,
    ) -> dict[str, str]:
        """In one process: migrate, run `import_vault` for each (path, folder), create tokens.

        Returns token name -> raw token.
        """
        plan = {
            "migrate": migrate,
            "imports": [[str(path), folder] for path, folder in imports],
            "tokens": {
                name: {"role": t.role, "folders": list(t.folders)} for name, t in (tokens or {}).items()
            },
        }
        out = self.manage("shell", "-c", _SETUP_SCRIPT.format(plan=json.dumps(plan), marker=_TOKENS_MARKER))
        line = next(line for line in out.splitlines() if line.startswith(_TOKENS_MARKER))
        created: dict[str, str] = json.loads(line[len(_TOKENS_MARKER) :])
        return created

    async def adisable_tokens(self, *, revoke: Iterable[str] = (), expire: Iterable[str] = ()) -> None:
        await asyncio.to_thread(self.disable_tokens, revoke=revoke, expire=expire)

    def disable_tokens(self, *, revoke: Iterable[str] = (), expire: Iterable[str] = ()) -> None:
        """Revoke some raw tokens (as the admin does) and make others expired, in one process."""
        script = _DISABLE_TOKENS_SCRIPT.format(revoke=list(revoke), expire=list(expire))
        self.manage("shell", "-c", script)

    def import_vault(self, path: Path, *, folder: str) -> str:
        return self.command("import_vault", str(path), "--folder", folder)

    async def aimport_vault(self, path: Path, *, folder: str) -> str:
        return await asyncio.to_thread(self.import_vault, path, folder=folder)

    def export_vault(self, *, folder: str, path: Path) -> str:
        return self.command("export_vault", "--folder", folder, str(path))

    async def aexport_vault(self, *, folder: str, path: Path) -> str:
        return await asyncio.to_thread(self.export_vault, folder=folder, path=path)

    async def aderived(self, *, timeout: float = 60.0) -> None:
        """Wait until the derive process has read the whole update log. What it reads later is told then:
        a note imported before a test subscribes or registers a hook would be told after it, beside the
        test's own edit."""

        async def backlog() -> str:
            return await asyncio.to_thread(
                self.manage, "shell", "-c", _BACKLOG_SCRIPT.format(marker=_BACKLOG_MARKER)
            )

        await poll(
            backlog, lambda out: f"{_BACKLOG_MARKER}0" in out.splitlines(), timeout=timeout, what="derived"
        )

    # ---------------------------------------------------------------- HTTP

    async def request(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        params: Mapping[str, str] | None = None,
        content: bytes | None = None,
        json_body: Any = None,
    ) -> httpx.Response:
        async with httpx.AsyncClient(base_url=self.http_url, timeout=HTTP_TIMEOUT) as client:
            return await client.request(
                method, path, headers=bearer(token), params=params, content=content, json=json_body
            )

    async def get_json(self, path: str, *, token: str | None, params: Mapping[str, str] | None = None) -> Any:
        response = await self.request("GET", path, token=token, params=params)
        assert response.status_code == 200, f"GET {path} -> {response.status_code}: {response.text}"
        return response.json()

    async def folders(self, token: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = await self.get_json("/api/folders", token=token)
        return result

    async def documents(self, token: str, **params: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = await self.get_json("/api/documents", token=token, params=params)
        return result

    async def document_paths(self, token: str, *, folder: str) -> dict[str, str]:
        """User-facing path -> doc id of every document in ``folder``."""
        return {d["path"]: d["doc_id"] for d in await self.documents(token, folder=folder)}

    async def doc_id(self, token: str, *, folder: str, path: str) -> str:
        """The doc id of ``path`` (folder-relative, leading slash) in ``folder``, via /api/documents."""
        found = await self.documents(token, folder=folder, path=path)
        assert len(found) == 1, f"{folder}{path}: expected one document, /api/documents gave {found}"
        doc_id: str = found[0]["doc_id"]
        return doc_id

    async def folder_doc_id(self, token: str, *, folder: str) -> str:
        for entry in await self.folders(token):
            if entry["name"] == folder:
                doc_id: str = entry["doc_id"]
                return doc_id
        raise AssertionError(f"folder {folder!r} not in /api/folders")

    async def as_update(self, doc_id: str, *, token: str) -> bytes:
        response = await self.request("GET", f"/d/{doc_id}/as-update", token=token)
        assert response.status_code == 200, f"as-update {doc_id} -> {response.status_code}: {response.text}"
        return response.content

    async def doc_text(self, doc_id: str, *, token: str, name: str = "contents") -> str:
        """The server's text of a document, decoded with pycrdt from ``/d/<id>/as-update``."""
        return read_text(await self.as_update(doc_id, token=token), name)

    async def doc_map(self, doc_id: str, *, token: str, name: str) -> dict[str, Any]:
        return read_map(await self.as_update(doc_id, token=token), name)
