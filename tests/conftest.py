"""Shared fixtures: a live document store on the test's event loop, folders and tokens."""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Callable

import pytest

# Each test session gets its own data directory (secret key, demo token), never the developer's.
os.environ.setdefault("LENSRELAY_DATA_DIR", tempfile.mkdtemp(prefix="lensrelay-test-"))
# Semantic search's test model ships its weights in its package: nothing may come from a model hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


@pytest.fixture
async def store() -> AsyncIterator[object]:
    from lensrelay.docstore.store import get_store

    live = get_store()
    yield live
    await live.close()


@pytest.fixture
def make_folder(transactional_db: None) -> Callable[..., object]:
    from lensrelay.vault.folders import folder_create

    def make(name: str = "Lens") -> object:
        return folder_create(name=name)

    return make


@pytest.fixture
def make_token(transactional_db: None) -> Callable[..., str]:
    from lensrelay.access.tokens import token_create

    def make(role: str = "edit", folders: tuple[object, ...] = (), name: str = "tester") -> str:
        _, raw = token_create(name=name, role=role, folders=folders)  # type: ignore[arg-type]
        return raw

    return make
