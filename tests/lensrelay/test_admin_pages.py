"""Staff pages that work: token creation with folders, form errors instead of 500s, the landing page,
offline API docs (``/api/documents`` without ``.md`` is checked against a live server in tests/e2e)."""

from __future__ import annotations

import html
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.staticfiles import finders
from django.test import AsyncClient
from django.utils import timezone

from lensrelay.access.auth import authenticate_token
from lensrelay.access.tokens import token_create
from lensrelay.models import ApiToken, Folder

pytestmark = pytest.mark.django_db(transaction=True)

ADD_TOKEN = "/admin/lensrelay/apitoken/add/"


async def test_a_token_limited_to_a_folder_is_created_and_shown_once(
    staff_client: AsyncClient, make_folder: Any
) -> None:
    lens = await sync_to_async(make_folder)("Lens")
    await sync_to_async(make_folder)("Other")
    form = (await staff_client.get(ADD_TOKEN)).content.decode()
    assert "Folders (none selected: all folders)" in form

    response = await staff_client.post(ADD_TOKEN, {"name": "claude", "role": "suggest", "folders": [lens.pk]})
    assert response.status_code == 200, response.content[:500]
    page = response.content.decode()
    token = await ApiToken.objects.aget(name="claude")
    raw = page.split('id="raw-token" readonly value="')[1].split('"')[0]
    assert raw.startswith("lr_") and ApiToken.hash_token(raw) == token.token_hash
    command = html.unescape(page.split('<textarea id="mcp-command" readonly>')[1].split("</textarea>")[0])
    header = f'"Authorization: Bearer {raw}"'
    assert command == f"claude mcp add --transport http lens http://testserver/mcp --header {header}"
    assert 'id="token-scope">Lens<' in page and "no-store" in response["Cache-Control"]
    access = await sync_to_async(authenticate_token)(raw)
    assert access is not None and access.folder_ids == frozenset({lens.pk}) and access.role == "suggest"

    # shown once: the token's page never shows it again, nor does any message
    again = (await staff_client.get(f"/admin/lensrelay/apitoken/{token.pk}/change/")).content.decode()
    assert raw not in again
    listing = (await staff_client.get("/admin/lensrelay/apitoken/")).content.decode()
    assert raw not in listing and "Lens" in listing


async def test_an_existing_token_saves_its_changes_even_once_expired(
    staff_client: AsyncClient, make_folder: Any
) -> None:
    lens = await sync_to_async(make_folder)("Lens")
    token, _ = await sync_to_async(token_create)(name="old", role="view")
    await ApiToken.objects.filter(pk=token.pk).aupdate(expires_at=timezone.now() - timedelta(days=1))
    expired = await ApiToken.objects.aget(pk=token.pk)
    assert expired.expires_at is not None
    local = timezone.localtime(expired.expires_at)
    response = await staff_client.post(
        f"/admin/lensrelay/apitoken/{token.pk}/change/",
        {
            "name": "renamed",
            "role": "view",
            "folders": [lens.pk],
            "expires_at_0": local.strftime("%Y-%m-%d"),
            "expires_at_1": local.strftime("%H:%M:%S"),
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    saved = await ApiToken.objects.aget(pk=token.pk)
    assert saved.name == "renamed"
    assert [f.pk async for f in saved.folders.all()] == [lens.pk]


async def test_a_token_for_all_folders_says_so(staff_client: AsyncClient, transactional_db: None) -> None:
    response = await staff_client.post(ADD_TOKEN, {"name": "everything", "role": "view"})
    assert 'id="token-scope">all folders<' in response.content.decode()
    listing = (await staff_client.get("/admin/lensrelay/apitoken/")).content.decode()
    assert "all folders" in listing


async def test_bad_token_and_folder_input_is_a_form_error_and_changes_nothing(
    staff_client: AsyncClient, make_folder: Any
) -> None:
    await sync_to_async(make_folder)("Lens")
    past = await staff_client.post(
        ADD_TOKEN, {"name": "old", "role": "view", "expires_at_0": "2001-01-01", "expires_at_1": "00:00"}
    )
    assert past.status_code == 200 and "The expiry must be in the future." in past.content.decode()
    unknown = await staff_client.post(ADD_TOKEN, {"name": "x", "role": "root"})
    assert unknown.status_code == 200 and "errorlist" in unknown.content.decode()
    assert await ApiToken.objects.acount() == 0

    slash = await staff_client.post("/admin/lensrelay/folder/add/", {"name": "a/b"})
    assert slash.status_code == 200 and "contains &#x27;/&#x27;" in slash.content.decode()
    duplicate = await staff_client.post("/admin/lensrelay/folder/add/", {"name": "Lens"})
    assert duplicate.status_code == 200 and "errorlist" in duplicate.content.decode()
    assert await Folder.objects.acount() == 1
    created = await staff_client.post("/admin/lensrelay/folder/add/", {"name": "Notes"})
    assert created.status_code == 302 and await Folder.objects.filter(name="Notes").aexists()


async def test_the_landing_page_says_what_this_is_and_how_to_connect(transactional_db: None) -> None:
    page = (await AsyncClient().get("/")).content.decode()
    assert "<title>Lens Relay</title>" in page
    assert 'href="/admin/"' in page and 'href="/api/docs"' in page
    assert "claude mcp add --transport http lens http://testserver/mcp" in page
    assert "demo-token" in page


async def test_api_docs_load_their_assets_from_this_server(transactional_db: None) -> None:
    page = (await AsyncClient().get("/api/docs")).content.decode()
    assert "cdn" not in page.lower() and "https://" not in page.split("<body")[0]
    assets = [part.split('"')[0] for part in page.split('src="')[1:]] + [
        part.split('"')[0] for part in page.split('href="')[1:] if part.startswith("/static/")
    ]
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets), assets
    for asset in assets:
        if asset.startswith("/static/"):
            # served by the ASGI static handler (the e2e tests load the page in Chromium, offline)
            assert finders.find(asset.removeprefix("/static/")) is not None, asset


async def test_every_page_is_titled_lens_relay_and_has_its_icon(
    staff_client: AsyncClient, transactional_db: None
) -> None:
    icon = '<link rel="icon" href="/static/lensrelay/favicon.svg" type="image/svg+xml">'
    assert finders.find("lensrelay/favicon.svg") is not None
    assert icon in (await AsyncClient().get("/")).content.decode()
    for path in ("/admin/", "/admin/login/", "/admin/lensrelay/folder/"):
        client = staff_client if path != "/admin/login/" else AsyncClient()
        page = (await client.get(path)).content.decode()
        assert icon in page and "Django administration" not in page and "Django site admin" not in page, path
        assert '<div id="site-name"><a href="/admin/">Lens Relay</a></div>' in page, path
    # browsers ask for /favicon.ico whatever the page names
    answer = await AsyncClient().get("/favicon.ico")
    assert (answer.status_code, answer["Location"]) == (301, "/static/lensrelay/favicon.svg")
