"""Shared fixtures: a live document store on the test's event loop, folders and tokens."""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Callable

import pytest

# Each test session gets its own data directory (secret key, demo token), never the developer's.
os.environ.setdefault("LENSRELAY_DATA_DIR", tempfile.mkdtemp(prefix="lensrelay-test-"))
# Derived work (backlinks, search rows) runs in the process of each change, as the tests expect it right
# after; tests of the derive process set "process" themselves (tests/lensrelay/docstore/test_derived.py,
# tests/e2e/test_derive_process.py). Servers the e2e tests start inherit it.
os.environ.setdefault("LENSRELAY_DERIVED_WORK", "inline")
# Semantic search's test model ships its weights in its package: nothing may come from a model hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


@pytest.fixture(autouse=True, scope="session")
def _derived_work_mode() -> None:
    # pytest-django reads the settings before this module runs: the mode chosen above is applied here.
    from django.conf import settings

    settings.LENSRELAY_DERIVED_WORK = os.environ["LENSRELAY_DERIVED_WORK"]


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
