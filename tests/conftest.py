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
async def store(request: pytest.FixtureRequest) -> AsyncIterator[object]:
    from lensrelay.docstore.store import get_store

    # The test database first, whatever order a test names its fixtures in, so that it is emptied only after
    # the store has closed: on PostgreSQL the flush's TRUNCATE deadlocked once with a read of the store's
    # threads still running (`demo(store, transactional_db)` set the store up first, so tore it down last).
    if {"db", "transactional_db"} & set(request.fixturenames):
        request.getfixturevalue("_django_db_helper")
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


# ------------------------------------------------------------------ which tests are "database-level"
#
# ./scripts/test runs the suite on SQLite, then again on PostgreSQL with `-m "db_level and not e2e"`:
# only the tests whose outcome can depend on the database backend. A test is database-level when
#   - it uses the test database: a `django_db` mark, or a database fixture anywhere in its fixture closure
#     (`db`, `transactional_db`, ...; so also `store`-with-`make_folder`, `staff_client`, `demo`, ...).
#     pytest-django refuses database access to every other test, so the rest cannot see the backend;
#   - or it is marked `scaled` (PostgreSQL-only tests, deselected on SQLite);
#   - or its module lives in one of DB_LEVEL_PACKAGES (the search backends, the document store's
#     persistence: every test there, even the pure ones, runs on both);
#   - or it is marked `db_level` by hand (a test reading the backend without the test database).
# Pure in-memory tests (CriticMarkup, diff, paths, tool formatting, grep engines, ...) run once.
DB_LEVEL_FIXTURES = frozenset(
    {
        "db",
        "transactional_db",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
        "live_server",
        "_django_db_helper",
    }
)
# Dotted module prefixes; update them with the packages if the tests move.
DB_LEVEL_PACKAGES = ("tests.lensrelay.search.", "tests.lensrelay.docstore.")


def is_db_level(item: pytest.Item) -> bool:
    if any(item.get_closest_marker(name) for name in ("django_db", "scaled", "db_level")):
        return True
    if DB_LEVEL_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True
    module = getattr(item, "module", None)
    return module is not None and module.__name__.startswith(DB_LEVEL_PACKAGES)


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if is_db_level(item) and not item.get_closest_marker("db_level"):
            item.add_marker(pytest.mark.db_level)


# ------------------------------------------------------------------ pytest-xdist: the longest files first
#
# ./scripts/test runs `-n 2 --dist loadfile --no-loadscope-reorder`: whole files go to the workers in
# collection order. The end-to-end files are the long ones (the scaled-out clusters longest), so under
# xdist they are handed out first and the many short files even out the workers at the end.


class _LongestFilesFirst:
    @pytest.hookimpl(trylast=True)  # after pytest-django's own ordering, which it keeps within each rank
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        def rank(item: pytest.Item) -> int:
            if item.get_closest_marker("scaled") and item.get_closest_marker("e2e"):
                return 0
            return 1 if item.get_closest_marker("e2e") else 2

        items.sort(key=rank)


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        config.pluginmanager.register(_LongestFilesFirst(), "lensrelay-longest-files-first")
