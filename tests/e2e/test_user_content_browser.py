"""The stored-XSS takeover of issue 18, attempted for real: an `edit` token scoped to folder Public uploads
hostile HTML and SVG (and HTML named `.png`), adds their entries as a Relay client does, asks for download
links and sends them to a staff member. A signed-in superuser opens each link in headless Chromium.

Each payload, if it ran in the admin's origin, would mark the origin (`localStorage`) and use the admin's
session to create an admin token for every folder through the token form, then read it. The test checks
that no script ran (no marker, page and origin alike) and that no token was created.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from playwright.sync_api import BrowserContext, Error, Page

from .browser import PASSWORD, BrowserThread, signed_in_context
from .conftest import YClientFactory
from .relay import Relay, bearer

pytestmark = pytest.mark.e2e

PUBLIC = "Public"
BOSS = "boss"
_MARKER = "E2E-USER-CONTENT "

# Runs with the opener's session if the bytes are ever active in the admin's origin.
TAKEOVER_JS = """
window.__pwned = 1;
try { localStorage.setItem("pwned", "1"); } catch (e) {}
(async function () {
  const add = "/admin/lensrelay/apitoken/add/";
  const form = await (await fetch(add, {credentials: "same-origin"})).text();
  const csrf = form.match(/name="csrfmiddlewaretoken" value="([^"]+)"/)[1];
  const body = new URLSearchParams({csrfmiddlewaretoken: csrf, name: "pwned", role: "admin", _save: "Save"});
  const created = await (await fetch(add, {method: "POST", body, credentials: "same-origin"})).text();
  try { localStorage.setItem("stolen", created.slice(0, 2000)); } catch (e) {}
})();
"""
HTML = f"<html><body><h1>Quarterly report</h1><script>{TAKEOVER_JS}</script></body></html>".encode()
SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script><![CDATA['
    + TAKEOVER_JS
    + "]]></script></svg>"
).encode()

_SETUP_SCRIPT = """
import json
from django.contrib.auth.models import User
from django.core.management import call_command
call_command("import_vault", {vault!r}, folder={folder!r})
User.objects.create_superuser({boss!r}, "boss@example.org", {password!r})
print({marker!r} + json.dumps("ok"))
"""
_COUNT_SCRIPT = """
from lensrelay.models import ApiToken
print({marker!r} + str(ApiToken.objects.count()) + " " + str(ApiToken.objects.filter(name="pwned").count()))
"""


@dataclass(frozen=True)
class Site:
    relay: Relay
    browser: BrowserThread
    attacker: str

    @property
    def url(self) -> str:
        return self.relay.http_url

    def token_counts(self) -> tuple[int, int]:
        out = self.relay.manage("shell", "-c", _COUNT_SCRIPT.format(marker=_MARKER))
        line = next(line for line in out.splitlines() if line.startswith(_MARKER))
        total, pwned = line[len(_MARKER) :].split()
        return int(total), int(pwned)


@pytest.fixture(scope="module")
def site(relay: Relay, browser_thread: BrowserThread, tmp_path_factory: pytest.TempPathFactory) -> Site:
    vault = tmp_path_factory.mktemp("public")
    (vault / "Readme.md").write_text("# Public\n", encoding="utf-8")
    script = _SETUP_SCRIPT.format(
        vault=str(vault), folder=PUBLIC, boss=BOSS, password=PASSWORD, marker=_MARKER
    )
    assert any(line.startswith(_MARKER) for line in relay.manage("shell", "-c", script).splitlines())
    attacker = relay.create_token(name="public-editor", role="edit", folders=[PUBLIC])
    return Site(relay, browser_thread, attacker)


@pytest.fixture(scope="module")
def boss_context(site: Site) -> Iterator[BrowserContext]:
    context = signed_in_context(site.browser, site.url, BOSS)
    yield context
    site.browser.call(context.close)


async def plant(site: Site, yclients: YClientFactory, files: dict[str, bytes]) -> dict[str, str]:
    """What the attacker's token can do: upload each file, add its entry, ask for a download link."""
    relay = site.relay
    folder_doc = await relay.folder_doc_id(site.attacker, folder=PUBLIC)
    links: dict[str, str] = {}
    ops = []
    async with httpx.AsyncClient(base_url=relay.http_url, timeout=20) as http:
        for path, data in files.items():
            digest = hashlib.sha256(data).hexdigest()
            file_uuid = str(uuid.uuid4())
            doc_id = f"{folder_doc[:36]}-{file_uuid}"
            answer = await http.post(
                f"/f/{doc_id}/upload-url", params={"hash": digest}, headers=bearer(site.attacker)
            )
            assert answer.status_code == 200, answer.text
            put = await http.put(answer.json()["uploadUrl"], content=data)
            assert put.status_code == 200, put.text
            meta = {
                "id": file_uuid,
                "type": "file",
                "version": 0,
                "hash": digest,
                "mimetype": "text/html",
                "synctime": int(time.time() * 1000),
            }
            ops.append({"op": "mapSet", "name": "filemeta_v0", "key": path, "value": meta})
            links[path] = doc_id
        client = await yclients(
            relay.doc_url(folder_doc), folder_doc, params={"token": site.attacker}, label="attacker"
        )
        await client.transact(ops)
        # Once the server has mirrored the entries, the links carry each file's own type.
        deadline = time.monotonic() + 15
        while True:
            listed = {d["path"] for d in await relay.documents(site.attacker, folder=PUBLIC)}
            if all(f"{PUBLIC}{path}" in listed for path in files):
                break
            assert time.monotonic() < deadline, listed
            await asyncio.sleep(0.1)
        for path, doc_id in links.items():
            digest = hashlib.sha256(files[path]).hexdigest()
            answer = await http.get(
                f"/f/{doc_id}/download-url", params={"hash": digest}, headers=bearer(site.attacker)
            )
            assert answer.status_code == 200, answer.text
            links[path] = answer.json()["downloadUrl"]
    return links


def open_as_admin(context: BrowserContext, url: str, base_url: str) -> dict[str, object]:
    """Open the link as the staff member would, wait for any script, and report what ran."""
    page: Page = context.new_page()
    try:
        try:
            page.goto(url)
            page.wait_for_timeout(1500)
            in_page = page.evaluate("() => ({pwned: window.__pwned === 1})")
        except Error as exc:  # an attachment: the navigation becomes a download and never renders
            assert "Download is starting" in str(exc) or "ERR_ABORTED" in str(exc), str(exc)
            in_page = {"pwned": False, "downloaded": True}
        page.goto(f"{base_url}/admin/")
        stored = page.evaluate("() => [localStorage.getItem('pwned'), localStorage.getItem('stolen')]")
        return {**in_page, "origin_marked": stored[0] is not None, "stolen": stored[1]}
    finally:
        page.close()


async def test_hostile_uploads_opened_by_an_admin_run_nothing_and_create_nothing(
    site: Site, boss_context: BrowserContext, yclients: YClientFactory
) -> None:
    before = site.token_counts()
    links = await plant(
        site, yclients, {"/page.html": HTML, "/pic.svg": SVG, "/photo.png": HTML, "/data.xml": SVG}
    )
    for path, url in links.items():
        assert url.startswith(site.url), url
        seen = await site.browser.run(lambda url=url: open_as_admin(boss_context, url, site.url))
        assert seen["pwned"] is False, (path, seen)
        assert seen["origin_marked"] is False and seen["stolen"] is None, (path, seen)
    assert site.token_counts() == before
    assert before[1] == 0


async def test_the_download_headers_the_browser_saw(site: Site, yclients: YClientFactory) -> None:
    links = await plant(site, yclients, {"/again.html": HTML + b" ", "/again.png": HTML + b"  "})
    async with httpx.AsyncClient(timeout=20) as http:
        html = await http.get(links["/again.html"])
        png = await http.get(links["/again.png"])
    for response, disposition in ((html, "attachment"), (png, "inline")):
        assert response.status_code == 200
        assert response.headers["content-disposition"].startswith(disposition)
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["content-security-policy"] == "sandbox; default-src 'none'"
    assert json.dumps(html.headers["content-type"]).startswith('"text/html')
