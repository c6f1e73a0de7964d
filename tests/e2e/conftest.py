"""Fixtures for end-to-end tests: real servers in subprocesses, real npm Yjs clients in Node processes.

Every test under tests/e2e is marked ``e2e``. The Node packages must be installed (``npm ci`` in
tests/e2e/node, which the README's test command does); a missing install fails loudly, never skips.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import pytest

from . import liveserver
from .browser import CHROMIUM, BrowserThread
from .liveserver import LiveServer
from .relay import Relay, Template, migrated_template, new_relay_server
from .yclient import DEFAULT_TIMEOUT, NODE_DIR, NODE_MODULES, YClient

_E2E_DIR = Path(__file__).resolve().parent
_REQUIRED_PACKAGES = ("yjs", "y-websocket", "ws", "y-protocols", "lib0", "@y/websocket-server")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _E2E_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """The installed Node packages; fails (not skips) with the fix when they are missing."""
    if shutil.which("node") is None:
        pytest.fail(
            "`node` is not on PATH: the e2e tests need Node.js 20+ (see docs/testing.md).", pytrace=False
        )
    missing = [name for name in _REQUIRED_PACKAGES if not (NODE_MODULES / name / "package.json").is_file()]
    if missing:
        pytest.fail(
            f"Node packages missing in {NODE_MODULES} ({', '.join(missing)}). Run the README's test command, "
            f"which installs them, or `cd {NODE_DIR} && npm ci` and rerun.",
            pytrace=False,
        )
    return NODE_MODULES


@pytest.fixture
def reference_server(node_modules: Path, tmp_path: Path) -> Iterator[LiveServer]:
    """A running ``@y/websocket-server`` 0.1.1; use ``.ws_url`` as the provider's server URL."""
    server = liveserver.reference_server(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def relay_server(node_modules: Path, tmp_path: Path) -> Iterator[LiveServer]:
    """Our server (migrated, demo off) running under daphne with its own SQLite database."""
    server = liveserver.lensrelay_server(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


class YClientFactory(Protocol):
    async def __call__(
        self,
        server_url: str,
        room: str,
        *,
        params: Mapping[str, str] | None = None,
        awareness: Any = None,
        wait_synced: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        report_updates: bool = False,
        label: str | None = None,
    ) -> YClient: ...


@pytest.fixture
async def yclients(node_modules: Path) -> AsyncIterator[YClientFactory]:
    """``await yclients(server_url, room, params=..., awareness=...)`` starts a connected, synced client.

    All clients started through the factory are closed (and their processes killed) at teardown.
    """
    started: list[YClient] = []

    async def start(
        server_url: str,
        room: str,
        *,
        params: Mapping[str, str] | None = None,
        awareness: Any = None,
        wait_synced: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        report_updates: bool = False,
        label: str | None = None,
    ) -> YClient:
        client = await YClient.spawn(label=label or f"client{len(started) + 1}")
        started.append(client)
        await client.connect(
            server_url, room, params=params, awareness=awareness, report_updates=report_updates
        )
        if wait_synced:
            await client.wait_synced(timeout=timeout)
        return client

    try:
        yield start
    finally:
        await asyncio.gather(*(client.close() for client in started), return_exceptions=True)


# --------------------------------------------------------------------- one Lens Relay server per module


@pytest.fixture(scope="session")
def relay_db_template(node_modules: Path, tmp_path_factory: pytest.TempPathFactory) -> Template:
    """A migrated SQLite database with the base tokens, made once per session; module servers copy it."""
    return migrated_template(tmp_path_factory.mktemp("relay-template"))


@pytest.fixture(scope="module")
def relay(
    request: pytest.FixtureRequest, relay_db_template: Template, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Relay]:
    """A running Lens Relay shared by the tests of one module; ``relay.tokens`` holds the base tokens.

    A module may set ``RELAY_ENV = {...}`` to add environment variables to its server.
    """
    env: Mapping[str, str] = getattr(request.module, "RELAY_ENV", {})
    server = new_relay_server(tmp_path_factory.mktemp("relay"), template=relay_db_template, **env)
    server.start()
    try:
        yield Relay(server, relay_db_template.tokens)
    finally:
        server.stop()


# --------------------------------------------------------------------- headless Chromium, one per module


@pytest.fixture(scope="module")
def browser_thread() -> Iterator[BrowserThread]:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: install it (Debian: `apt-get install -y chromium`).",
            pytrace=False,
        )
    thread = BrowserThread()
    thread.start()
    try:
        yield thread
    finally:
        thread.close()
