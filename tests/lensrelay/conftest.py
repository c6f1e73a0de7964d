"""Fixtures shared by the lensrelay tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import AsyncClient


@pytest.fixture
async def staff_client(transactional_db: None) -> AsyncClient:
    """An async test client signed in as a superuser, for admin pages used beside a live store."""
    user = await sync_to_async(User.objects.create_superuser)("ada", "ada@example.org", "pw")
    client = AsyncClient()
    await client.aforce_login(user)
    return client


@pytest.fixture
def own_blob_dir(settings: Any, tmp_path: Path) -> Path:
    """Blobs stored in this test's own directory, so nothing leaks between tests."""
    root = tmp_path / "blobs"
    settings.STORAGES = {
        **settings.STORAGES,
        "lensrelay_files": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(root), "allow_overwrite": True},
        },
    }
    return root
