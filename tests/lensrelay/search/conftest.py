"""Search tests run on the configured database; PostgreSQL-only tests (marked `scaled`) run only when
DATABASE_URL points at PostgreSQL, and are deselected (not skipped) otherwise."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def on_postgres() -> bool:
    return os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if on_postgres():
        return
    # This hook sees every collected item: only this directory's scaled tests are ours to deselect.
    ours = [item for item in items if item.get_closest_marker("scaled") and HERE in item.path.parents]
    if ours:
        config.hook.pytest_deselected(items=ours)
        items[:] = [item for item in items if item not in ours]


@pytest.fixture(autouse=True)
def _search_follows_folders(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.lensrelay.search.helpers import hook_folder_mirroring

    hook_folder_mirroring(monkeypatch)
