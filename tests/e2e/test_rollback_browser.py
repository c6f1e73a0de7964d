"""Rolling an assistant back end to end: an assistant suggests over MCP (the official `mcp` client), an
editor accepts two of its suggestions in the admin (headless Chromium), a person overwrites one of them in
an npm y-websocket client, and the editor rolls the assistant back on the admin's rollback page: three
pending rejected, one accepted change reverted (the watching client sees its old text come back), the
overwritten one listed as moved on and left alone.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest
from mcp import Client
from playwright.sync_api import BrowserContext, Page

from .browser import PASSWORD, AdminPage, BrowserThread, call, mcp_client, signed_in_context
from .conftest import YClientFactory
from .relay import Relay
from .yclient import utf16_index

pytestmark = pytest.mark.e2e

FOLDER = "Rollback"
TITLE = "Garden"
PATH = f"{FOLDER}/{TITLE}.md"
TEXT = (
    "# Garden\n\n"
    "The roses are red.\n"
    "The violets are blue.\n"
    "The hedge is tall.\n"
    "The pond is deep.\n"
    "The shed is old.\n"
)
EDITOR, INTERN = "editor", "intern"
ASSISTANT = "gardener <b>bot</b>"  # a name with markup: shown escaped, never as HTML
_MARKER = "E2E-ROLLBACK "

_SETUP_SCRIPT = """
import json
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from lensrelay.access.tokens import token_create
call_command("import_vault", {vault!r}, folder={folder!r})
token, raw = token_create(name={assistant!r}, role="suggest")
apps = ["suggestions", "lensrelay"]
perms = {{p.codename: p for p in Permission.objects.filter(content_type__app_label__in=apps)}}
for username, codenames in {users!r}.items():
    user = User.objects.create_user(username, password={password!r}, is_staff=True)
    user.user_permissions.set([perms[c] for c in codenames])
print({marker!r} + json.dumps([raw, token.pk]))
"""


@dataclass(frozen=True)
class Site:
    relay: Relay
    assistant_token: str
    assistant_pk: int
    writer_token: str
    doc_id: str
    browser: BrowserThread


@pytest.fixture(scope="module")
def site(relay: Relay, browser_thread: BrowserThread, tmp_path_factory: pytest.TempPathFactory) -> Site:
    vault = tmp_path_factory.mktemp("rollback-vault")
    (vault / f"{TITLE}.md").write_text(TEXT, encoding="utf-8")
    users = {EDITOR: ["view_suggestion", "review_suggestion", "view_document"], INTERN: ["view_suggestion"]}
    script = _SETUP_SCRIPT.format(
        vault=str(vault), folder=FOLDER, assistant=ASSISTANT, users=users, password=PASSWORD, marker=_MARKER
    )
    out = relay.manage("shell", "-c", script)
    raw, pk = json.loads(next(line for line in out.splitlines() if line.startswith(_MARKER))[len(_MARKER) :])
    writer = relay.tokens["edit"]
    paths = asyncio.run(relay.document_paths(writer, folder=FOLDER))
    return Site(relay, raw, int(pk), writer, paths[PATH], browser_thread)


@pytest.fixture(scope="module")
def editor_context(site: Site) -> Iterator[BrowserContext]:
    context = signed_in_context(site.browser, site.relay.http_url, EDITOR)
    yield context
    site.browser.call(context.close)


@pytest.fixture(scope="module")
def intern_context(site: Site) -> Iterator[BrowserContext]:
    context = signed_in_context(site.browser, site.relay.http_url, INTERN)
    yield context
    site.browser.call(context.close)


@pytest.fixture
async def editor(site: Site, editor_context: BrowserContext) -> AsyncIterator[AdminPage]:
    admin = await AdminPage.open(site.browser, site.relay.http_url, editor_context)
    yield admin
    await admin.close()


@pytest.fixture
async def intern(site: Site, intern_context: BrowserContext) -> AsyncIterator[AdminPage]:
    admin = await AdminPage.open(site.browser, site.relay.http_url, intern_context)
    yield admin
    await admin.close()


async def suggest(client: Client, old: str, new: str) -> str:
    await call(client, "read", {"file_path": PATH})
    answer = await call(client, "edit", {"file_path": PATH, "old_string": old, "new_string": new})
    match = re.search(r"\(suggestion ([0-9a-f]+), pending", answer)
    assert match, answer
    return match.group(1)


def rows_of(page: Page, table: str) -> list[str]:
    return [row.strip() for row in page.locator(f"#{table} tbody tr").all_inner_texts()]


async def test_rollback_in_the_browser_rejects_three_reverts_one_and_lists_the_overwritten(
    site: Site, yclients: YClientFactory, editor: AdminPage, intern: AdminPage
) -> None:
    person = await yclients(
        site.relay.doc_url(site.doc_id), site.doc_id, params={"token": site.writer_token}, label="person"
    )
    assert await person.text() == TEXT

    async with mcp_client(site.relay.http_url, site.assistant_token) as client:
        pending = [
            await suggest(client, "The hedge is tall.", "The hedge is short."),
            await suggest(client, "The pond is deep.", "The pond is shallow."),
            await suggest(client, "The shed is old.", "The shed is new."),
        ]
        kept = await suggest(client, "The roses are red.", "The roses are white.")
        overwritten = await suggest(client, "The violets are blue.", "The violets are purple.")
        await person.wait_text(contains="purple")

        for uid in (kept, overwritten):
            await editor.open_suggestion(uid)
            await editor.decide("accept")
            assert await editor.messages("success") == [f"Accepted the edit of {PATH} ({uid})."]
        accepted = await person.wait_text(contains="The roses are white.\nThe violets are purple.\n")

        # the person writes over the second accepted change
        at = accepted.index("purple")
        await person.insert(utf16_index(accepted, at), "deep ")
        await person.wait_text(contains="The violets are deep purple.")

        # staff without the review permission cannot even open the page
        def open_rollback(page: Page) -> int:
            response = page.goto(f"{site.relay.http_url}/admin/suggestions/suggestion/rollback/")
            assert response is not None
            return response.status

        assert await intern.do(open_rollback) == 403

        def show_plan(page: Page) -> dict[str, list[str]]:
            page.goto(f"{site.relay.http_url}/admin/suggestions/suggestion/")
            with page.expect_navigation():
                page.click("#rollback-link")
            page.select_option("#id_assistant", f"token:{site.assistant_pk}")
            with page.expect_navigation():
                page.click("#rollback-show")
            return {
                "summary": [page.inner_text("#rollback-summary")],
                "pending": rows_of(page, "rollback-pending"),
                "revertible": rows_of(page, "rollback-revertible"),
                "not": rows_of(page, "rollback-not-revertible"),
                "button": [page.input_value("#confirm-rollback")],
            }

        plan = await editor.do(show_plan)
        assert plan["summary"][0].startswith(f"{ASSISTANT} (token #{site.assistant_pk}), suggestions created")
        assert [next(uid for uid in pending if uid in row) for row in plan["pending"]] == pending
        assert len(plan["revertible"]) == 1 and kept in plan["revertible"][0]
        assert "white" in plan["revertible"][0] and "red" in plan["revertible"][0]
        assert len(plan["not"]) == 1 and overwritten in plan["not"][0]
        assert "the text has moved on" in plan["not"][0]
        assert plan["button"] == ["Yes, reject 3 and revert 1"]
        assert "{++" in await person.text()  # nothing changed yet

        def confirm(page: Page) -> None:
            with page.expect_navigation():
                page.click("#confirm-rollback")

        await editor.do(confirm)
        [done] = await editor.messages("success")
        assert done.startswith(f"Rolled back {ASSISTANT} (token #{site.assistant_pk}) between ")
        assert done.endswith(
            "3 pending suggestion(s) rejected, 1 accepted change(s) reverted, "
            "1 accepted change(s) not reverted."
        )
        [warning] = await editor.messages("warning")
        assert overwritten in warning and "the text has moved on" in warning

        # the person's client sees the old text come back and the pending markup go
        expected = TEXT.replace("The violets are blue.", "The violets are deep purple.")
        assert await person.wait_text(equals=expected) == expected

        # the page now shows it as rolled back, by whom, with nothing left to do
        after = await editor.do(lambda page: (page.inner_text("#rollback-done"), page.content()))
        assert kept in after[0] and f"rolled back by {EDITOR}" in after[0]
        assert 'id="confirm-rollback"' not in after[1] and "&lt;b&gt;bot&lt;/b&gt;" in after[1]

        await editor.open_suggestion(kept)
        assert await editor.field("status") == "Rolled back"
        assert (await editor.field("rolled_back")).startswith(f"{EDITOR} rolled it back")

        told = await call(client, "list_suggestions", {"path": PATH})
        assert f"{kept} REVERTED edit {PATH}" in told and f"then rolled back by {EDITOR}" in told
        assert f"{overwritten} ACCEPTED edit {PATH}" in told
        for uid in pending:
            assert f"{uid} REJECTED edit {PATH}" in told
        assert "Rolled back by editor" in told  # the reviewer's note the assistant reads
