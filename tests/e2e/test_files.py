"""Attachments on the default filesystem store, driven by real clients (see files_scenario)."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import files_scenario as scenario
from .conftest import YClientFactory
from .relay import Relay

pytestmark = pytest.mark.e2e

RELAY_ENV = {"LENSRELAY_MAX_FILE_BYTES": str(2 * 1024 * 1024)}


@pytest.fixture(scope="module")
def imported(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Relay:
    scenario.vault_round_trip(relay, tmp_path_factory.mktemp("files-vault"))
    return relay


def test_vault_round_trip_is_byte_identical(imported: Relay) -> None:
    data_dir = imported.server.data_dir
    assert data_dir is not None
    blobs = [p for p in (data_dir / "files").rglob("*") if p.is_file()]
    assert len(blobs) == 6  # every file but the markdown and the HTML, each under files/<doc id>/<sha256>


async def test_image_uploaded_by_one_client_downloads_identical_on_another(
    imported: Relay, yclients: YClientFactory, tmp_path: Path
) -> None:
    await scenario.client_upload_and_download(imported, yclients, tmp_path)


async def test_bad_input_is_refused_and_stores_nothing(imported: Relay) -> None:
    await scenario.bad_input_stores_nothing(imported)
