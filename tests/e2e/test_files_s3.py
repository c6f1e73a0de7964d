"""The same attachment scenario on S3-compatible storage: a real S3 API server (moto's) started for this
module, Lens Relay configured for it through django-storages, presigned URLs from boto3."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from . import files_scenario as scenario
from .conftest import YClientFactory
from .relay import Relay
from .s3server import S3Server, s3_server

pytestmark = pytest.mark.e2e

# The relay fixture reads this when the module's server starts; `s3` (set up first) adds its settings,
# so the S3 server's port is chosen just before it binds it, not at collection.
RELAY_ENV = {"LENSRELAY_MAX_FILE_BYTES": str(2 * 1024 * 1024)}


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    with s3_server(log=tmp_path_factory.mktemp("moto") / "moto.log") as server:
        RELAY_ENV.update(server.env())
        yield server


@pytest.fixture(scope="module")
def imported(s3: S3Server, relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Relay:
    scenario.vault_round_trip(relay, tmp_path_factory.mktemp("files-vault"))
    return relay


def test_vault_round_trip_keeps_blobs_in_the_bucket(s3: S3Server, imported: Relay) -> None:
    keys = s3.keys("files/")
    assert len(keys) == 6  # every file but the markdown and the HTML
    assert all(len(key.split("/")) == 3 and len(key.split("/")[2]) == 64 for key in keys)
    data_dir = imported.server.data_dir
    assert not (data_dir / "files").exists()  # nothing on the local disk


async def test_presigned_urls_point_at_the_bucket(s3: S3Server, imported: Relay) -> None:
    token = imported.create_token(name="s3-reader", role="view", folders=[scenario.FOLDER])
    doc_id = await imported.doc_id(token, folder=scenario.FOLDER, path="/diagram.png")
    key = s3.keys(f"files/{doc_id}/")[0]
    async with httpx.AsyncClient(base_url=imported.http_url, timeout=20) as http:
        answer = await http.get(
            f"/f/{doc_id}/download-url",
            params={"hash": key.rsplit("/", 1)[1]},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert answer.status_code == 200, answer.text
        url = answer.json()["downloadUrl"]
        assert url.startswith(s3.endpoint + "/") and "X-Amz-Signature=" in url
        assert (await http.get(url)).content == scenario.VAULT["diagram.png"]


async def test_image_uploaded_by_one_client_downloads_identical_on_another(
    s3: S3Server, imported: Relay, yclients: YClientFactory, tmp_path: Path
) -> None:
    before = set(s3.keys("files/"))
    await scenario.client_upload_and_download(imported, yclients, tmp_path)
    assert len(set(s3.keys("files/")) - before) == 1  # the client's PUT went straight to the bucket


async def test_bad_input_is_refused_and_stores_nothing(s3: S3Server, imported: Relay) -> None:
    before = s3.keys()
    await scenario.bad_input_stores_nothing(imported)
    assert s3.keys() == before
