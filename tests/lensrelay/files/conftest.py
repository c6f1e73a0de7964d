"""Every files test stores its blobs in its own directory, so nothing leaks between tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def blob_dir(own_blob_dir: Path) -> Path:
    return own_blob_dir
