"""Version history with real clients: a y-websocket client's edits become versions (compaction after every
update here), `GET /d/<id>/versions` lists them, and restoring an old one through the admin reaches the
connected client as a new change. A token limited to another folder sees no versions (404)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import YClientFactory
from .relay import HTTP_TIMEOUT, Relay, TokenSpec, poll
from .yclient import utf16_len

pytestmark = pytest.mark.e2e

RELAY_ENV = {"LENSRELAY_COMPACT_AFTER_UPDATES": "1"}
ORIGINAL = "# Plan\n\nThe first draft 😀.\n"
EDITOR, PASSWORD = "hilda", "versions-admin-pw"
SUPERUSER = f"""
from django.contrib.auth.models import User
User.objects.create_superuser({EDITOR!r}, "hilda@example.org", {PASSWORD!r})
print("done")
"""


@dataclass(frozen=True)
class Site:
    relay: Relay
    token: str
    other_token: str


@pytest.fixture(scope="module")
def site(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Site:
    history: Path = tmp_path_factory.mktemp("history-vault")
    (history / "Plan.md").write_text(ORIGINAL, encoding="utf-8")
    other: Path = tmp_path_factory.mktemp("other-vault")
    (other / "Elsewhere.md").write_text("elsewhere\n", encoding="utf-8")
    tokens = relay.setup(
        imports=[(history, "History"), (other, "Other")], tokens={"other": TokenSpec("edit", ("Other",))}
    )
    relay.manage("shell", "-c", SUPERUSER)
    return Site(relay=relay, token=relay.tokens["edit"], other_token=tokens["other"])


async def versions(site: Site, doc_id: str) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = await site.relay.get_json(f"/d/{doc_id}/versions", token=site.token)
    return listed


async def signed_in(site: Site) -> httpx.AsyncClient:
    client = httpx.AsyncClient(base_url=site.relay.http_url, timeout=HTTP_TIMEOUT)
    page = await client.get("/admin/login/")
    token = csrf(page.text)
    answer = await client.post(
        "/admin/login/",
        data={"username": EDITOR, "password": PASSWORD, "csrfmiddlewaretoken": token, "next": "/admin/"},
        headers={"Referer": f"{site.relay.http_url}/admin/login/"},
    )
    assert answer.status_code == 302, answer.text[:500]
    return client


def csrf(html: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert found, html[:500]
    return found.group(1)


async def test_edits_become_versions_and_restoring_one_reaches_the_connected_client(
    site: Site, yclients: YClientFactory
) -> None:
    relay = site.relay
    doc_id = await relay.doc_id(site.token, folder="History", path="/Plan.md")
    client = await yclients(relay.doc_url(doc_id), doc_id, params={"token": site.token}, label="writer")
    expected = ORIGINAL
    for line in ("Second thoughts.\n", "Third, with 中文.\n", "Fourth.\n"):
        await client.insert(utf16_len(await client.text()), line)
        expected += line
        # Compaction after every update: each edit is a version once the server has folded it.
        size = len(expected.encode())
        await poll(
            lambda: versions(site, doc_id),
            lambda listed, size=size: bool(listed) and listed[0]["size"] == size,  # type: ignore[misc]
            what=f"a version of {size} bytes",
        )
    listed = await versions(site, doc_id)
    assert [v["size"] for v in listed][:4] == sorted((v["size"] for v in listed[:4]), reverse=True)
    assert listed[0]["isLatest"] is True and not any(v["isLatest"] for v in listed[1:])
    assert {"versionId", "createdAt", "isLatest", "size", "author"} <= set(listed[0])
    assert listed[0]["author"].startswith("edit (token #")  # the writer's edits are its token's
    original = next(v for v in listed if v["size"] == len(ORIGINAL.encode()))
    one = await relay.get_json(f"/d/{doc_id}/versions/{original['versionId']}", token=site.token)
    assert one["text"] == ORIGINAL

    admin = await signed_in(site)
    try:
        pk = await _document_pk(admin, doc_id)
        history = await admin.get(f"/admin/lensrelay/document/{pk}/versions/")
        assert history.status_code == 200 and history.text.count('class="version"') == len(listed)
        shown = await admin.get(f"/admin/lensrelay/document/{pk}/versions/{original['versionId']}/")
        assert "The first draft 😀." in shown.text and "Fourth." in shown.text  # text and diff to now
        confirm_url = f"/admin/lensrelay/document/{pk}/versions/{original['versionId']}/restore/"
        confirm = await admin.get(confirm_url)
        assert confirm.status_code == 200 and "Yes, restore version" in confirm.text
        assert await client.text() == expected  # confirming is not acting
        done = await admin.post(
            confirm_url,
            data={"post": "yes", "csrfmiddlewaretoken": csrf(confirm.text)},
            headers={"Referer": f"{relay.http_url}{confirm_url}"},
        )
        assert done.status_code == 302, done.text[:500]
        await client.wait_text(equals=ORIGINAL)
        landing = await admin.get(done.headers["location"])
        assert "as a new change" in landing.text
    finally:
        await admin.aclose()
    # The restore is itself the latest version; the text it replaced is still kept.
    after = await versions(site, doc_id)
    assert after[0]["size"] == len(ORIGINAL.encode()) and "restored version" in after[0]["author"]
    kept = [await relay.get_json(f"/d/{doc_id}/versions/{v['versionId']}", token=site.token) for v in after]
    assert expected in [v["text"] for v in kept]
    assert await relay.doc_text(doc_id, token=site.token) == ORIGINAL


async def test_a_token_for_another_folder_sees_no_versions(site: Site) -> None:
    relay = site.relay
    doc_id = await relay.doc_id(site.token, folder="History", path="/Plan.md")
    for path in (f"/d/{doc_id}/versions", f"/d/{doc_id}/versions/1"):
        outside = await relay.request("GET", path, token=site.other_token)
        assert outside.status_code == 404 and outside.json() == {"error": f"Document not found: {doc_id}"}
    assert (await relay.request("GET", f"/d/{doc_id}/versions")).status_code == 401
    own = await relay.doc_id(site.other_token, folder="Other", path="/Elsewhere.md")
    answer = await relay.request("GET", f"/d/{own}/versions", token=site.other_token)
    assert answer.status_code == 200 and isinstance(answer.json(), list)


async def _document_pk(admin: httpx.AsyncClient, doc_id: str) -> int:
    page = await admin.get("/admin/lensrelay/document/", params={"q": doc_id})
    found = re.search(r'href="/admin/lensrelay/document/(\d+)/change/', page.text)
    assert found, page.text[:1000]
    return int(found.group(1))
