"""Fixtures of the suggestions tests: a note to suggest on (a module may define its own `fox`) and a
reviewer's admin session."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from lensrelay.vault.documents import document_create
from tests.suggestions.test_admin import ORIGINAL, client_for


@pytest.fixture
async def fox(store: Any, make_folder: Any) -> Any:
    """Lens/Fox.md holding ``ORIGINAL``."""
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Fox.md", text=ORIGINAL)


@pytest.fixture
async def reviewer(transactional_db: None) -> AsyncClient:
    """Staff who may view and review suggestions, signed in."""
    return await client_for("rita", "view_suggestion", "review_suggestion")
