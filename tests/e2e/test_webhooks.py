"""Webhooks end to end: a server started by the launcher (its derive process delivers), real writers (the
official MCP SDK client, the admin over HTTP, a y-websocket Node client) and real local receivers that
verify every request with `standardwebhooks`. Events arrive for each kind of change; a receiver that was
down gets every event exactly as recorded once it is up; SIGKILL of the delivering process mid-delivery
loses none; a folder-scoped endpoint sees nothing of other folders."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import Page

from tests.lensrelay.webhooks.receiver import Received, Receiver

from .browser import BrowserThread, signed_in_context
from .conftest import YClientFactory
from .relay import Relay, poll
from .test_derive_process import alive, derive_children

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

TIMEOUT = 2.0
RELAY_ENV = {
    "LENSRELAY_DERIVED_WORK": "process",
    "LENSRELAY_WEBHOOK_ALLOW_PRIVATE": "true",
    "LENSRELAY_WEBHOOK_TIMEOUT_SECONDS": str(TIMEOUT),
    "LENSRELAY_WEBHOOK_RETRY_BASE_SECONDS": "0.3",
    "LENSRELAY_WEBHOOK_RETRY_MAX_SECONDS": "1",
    "LENSRELAY_WEBHOOK_DEBOUNCE_SECONDS": "0.3",
    "LENSRELAY_DERIVE_RESTART_SECONDS": "1",
}
PASSWORD = "webhooks-admin-pw"
NOTES = ("Note", "Live", "Down0", "Down1", "Down2", "Kill", "Scoped")
SETUP = """
from django.contrib.auth.models import User
from lensrelay.models import Folder
from lensrelay.webhooks.endpoints import endpoint_create
User.objects.create_superuser("ada", "ada@example.org", {password!r})
everything = endpoint_create(name="everything", url={all_url!r}, all_folders=True)
scoped = endpoint_create(name="hooks only", url={scoped_url!r}, folders=[Folder.objects.get(name="Hooks")])
print("SECRETS", everything.secret, scoped.secret)
"""


class Site:
    def __init__(self, relay: Relay, everything: Receiver, scoped: Receiver) -> None:
        self.relay = relay
        self.everything = everything
        self.scoped = scoped
        self.db = relay.server.data_dir / "db.sqlite3"

    def rows(self, sql: str, *params: Any) -> list[Any]:
        with sqlite3.connect(self.db, timeout=30) as conn:
            return conn.execute(sql, params).fetchall()

    async def arows(self, sql: str, *params: Any) -> list[Any]:
        return await asyncio.to_thread(self.rows, sql, *params)

    async def doc_id(self, user_path: str) -> str:
        folder, path = user_path.split("/", 1)
        return await self.relay.doc_id(self.relay.tokens["edit"], folder=folder, path=f"/{path}")

    def recorded(self, msg_id: str) -> tuple[str, dict[str, Any]]:
        ((type, data),) = self.rows("SELECT type, data FROM lensrelay_webhookevent WHERE msg_id = ?", msg_id)
        return type, json.loads(data)


@pytest.fixture(scope="module")
def site(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("webhooks-vault")
    for folder in ("Hooks", "Other"):
        (root / folder).mkdir()
        for name in NOTES:
            (root / folder / f"{name}.md").write_text(f"{name} alpha beta gamma\n", encoding="utf-8")
    relay.setup(imports=[(root / "Hooks", "Hooks"), (root / "Other", "Other")])
    everything, scoped = Receiver().start(), Receiver(path="/scoped").start()
    out = relay.manage(
        "shell", "-c", SETUP.format(password=PASSWORD, all_url=everything.url, scoped_url=scoped.url)
    )
    everything.secret, scoped.secret = out.split("SECRETS ", 1)[1].split()[:2]
    try:
        yield Site(relay, everything, scoped)
    finally:
        everything.stop()
        scoped.stop()


async def mcp_edit(site: Site, file_path: str, old: str, new: str) -> None:
    headers = {"Authorization": f"Bearer {site.relay.tokens['edit']}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as transport:
        stream = streamable_http_client(f"{site.relay.http_url}/mcp", http_client=transport)
        info = types.Implementation(name="Webhook Test Client", version="1.0")
        async with Client(stream, mode="legacy", client_info=info) as mcp:
            assert not (await mcp.call_tool("read", {"file_path": file_path})).is_error
            edited = await mcp.call_tool(
                "edit", {"file_path": file_path, "old_string": old, "new_string": new}
            )
            assert not edited.is_error, edited.content


class Admin:
    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=30)
        self.http.get("/admin/login/")
        response = self.post("/admin/login/", {"username": "ada", "password": PASSWORD, "next": "/admin/"})
        assert response.status_code == 302, response.text[:500]

    def post(self, path: str, data: dict[str, Any]) -> httpx.Response:
        return self.http.post(path, data={**data, "csrfmiddlewaretoken": self.http.cookies["csrftoken"]})


async def wait_received(
    receiver: Receiver, check: Any, *, timeout: float = 30.0, what: str
) -> list[Received]:
    return await asyncio.to_thread(receiver.wait_for, check, timeout=timeout, what=what)


def as_recorded(site: Site, received: Received) -> None:
    """What arrived is exactly what the outbox recorded: same id, type and data, signature verified."""
    type, data = site.recorded(received.msg_id)
    assert (received.type, received.data) == (type, data)
    assert json.loads(received.body)["data"] == data


def suggestions_of(received: list[Received], type: str, path: str) -> list[Received]:
    return [r for r in received if r.type == type and r.data["suggestion"]["path"] == path]


def one(received: list[Received]) -> Received:
    """The one event among these (delivered at least once: a repeat has the same id and body)."""
    by_id = {r.msg_id: r for r in received}
    assert len(by_id) == 1, [(r.type, r.msg_id) for r in received]
    (only,) = by_id.values()
    assert all(r.body == only.body for r in received)
    return only


async def test_mcp_admin_and_yjs_changes_arrive_signed(site: Site, yclients: YClientFactory) -> None:
    # An MCP edit through the official SDK: suggestion.created.
    await mcp_edit(site, "Hooks/Note.md", "beta", "BETA")
    got = await wait_received(
        site.everything,
        lambda got: suggestions_of(got, "suggestion.created", "Hooks/Note.md"),
        what="suggestion.created",
    )
    created = one(suggestions_of(got, "suggestion.created", "Hooks/Note.md"))
    suggestion = created.data["suggestion"]
    assert (suggestion["kind"], suggestion["old_text"], suggestion["new_text"]) == ("edit", "beta", "BETA")
    assert suggestion["client_name"] == "Webhook Test Client" and suggestion["status"] == "pending"
    await asyncio.to_thread(as_recorded, site, created)

    # Accepted in the admin with a note: suggestion.decided with the reviewer and the note.
    ((pk,),) = await site.arows("SELECT id FROM suggestions_suggestion WHERE uid = ?", suggestion["id"])
    admin = await asyncio.to_thread(Admin, site.relay.http_url)
    decided = await asyncio.to_thread(
        admin.post,
        f"/admin/suggestions/suggestion/{pk}/decide/",
        {"decision": "accept", "note": "Clearer, thanks"},
    )
    assert decided.status_code == 302, decided.text[:500]
    got = await wait_received(
        site.everything,
        lambda got: suggestions_of(got, "suggestion.decided", "Hooks/Note.md"),
        what="suggestion.decided",
    )
    decision = one(suggestions_of(got, "suggestion.decided", "Hooks/Note.md"))
    assert decision.data["decision"]["reviewer"]["username"] == "ada"
    assert decision.data["decision"]["note"] == "Clearer, thanks"
    assert decision.data["decision"]["status"] == "accepted"
    await asyncio.to_thread(as_recorded, site, decision)

    # A y-websocket Node client's edit: document.changed.
    live = await site.doc_id("Hooks/Live.md")
    client = await yclients(site.relay.doc_url(live), live, params={"token": site.relay.tokens["edit"]})
    await client.insert(0, "typed live ")

    # The note's import may be told first, when the derive process reads it late (seen in CI): the live
    # edit's event is the one naming the token.
    def typed(r: Any) -> bool:
        authors = r.data.get("authors", [])
        return (
            r.type == "document.changed"
            and r.data["doc_id"] == live
            and any(a.startswith("edit") for a in authors)
        )

    got = await wait_received(
        site.everything, lambda got: any(typed(r) for r in got), what="document.changed"
    )
    changed = one([r for r in got if typed(r)])
    assert changed.data["user_path"] == "Hooks/Live.md" and changed.data["folder"] == "Hooks"
    assert any(author.startswith("edit") for author in changed.data["authors"]), changed.data
    await asyncio.to_thread(as_recorded, site, changed)
    assert site.everything.refused == [] and site.scoped.refused == []


async def test_a_receiver_down_for_a_while_gets_every_event_as_recorded(
    site: Site, yclients: YClientFactory
) -> None:
    receiver = site.everything
    receiver.stop()
    try:
        ids = [await site.doc_id(f"Hooks/Down{i}.md") for i in range(3)]
        for doc_id in ids:
            client = await yclients(
                site.relay.doc_url(doc_id), doc_id, params={"token": site.relay.tokens["edit"]}
            )
            await client.insert(0, "while down ")
        await mcp_edit(site, "Hooks/Down0.md", "gamma", "GAMMA")
        # Every one of them was tried, and failed, while the receiver was down.
        sql = """SELECT e.msg_id, e.type, d.attempts FROM lensrelay_webhookdelivery d
                 JOIN lensrelay_webhookevent e ON e.id = d.event_id
                 JOIN lensrelay_webhookendpoint p ON p.id = d.endpoint_id
                 WHERE p.name = 'everything' AND d.status = 'pending'"""

        def all_failing(rows: list[Any]) -> bool:
            kinds = [type for _, type, _ in rows]
            return (
                kinds.count("document.changed") >= 3
                and "suggestion.created" in kinds
                and all(attempts >= 2 for _, _, attempts in rows)
            )

        pending = await poll(
            lambda: site.arows(sql),
            all_failing,
            timeout=30,
            what="the events failing, retried, while the receiver is down",
        )
        waiting = {msg_id for msg_id, _, _ in pending}
    finally:
        receiver.start()
    got = await wait_received(receiver, lambda got: waiting <= {r.msg_id for r in got}, what="the backlog")
    for received in got:
        if received.msg_id in waiting:
            await asyncio.to_thread(as_recorded, site, received)
    types_ = sorted(r.type for r in got if r.msg_id in waiting)
    assert types_.count("document.changed") >= 3 and "suggestion.created" in types_
    await poll(
        lambda: site.arows(sql),
        lambda rows: not waiting & {msg_id for msg_id, _, _ in rows},
        what="nothing of the backlog pending",
    )


async def test_sigkill_of_the_delivering_process_mid_delivery_loses_nothing(site: Site) -> None:
    receiver = site.everything
    server_pid = site.relay.server.pid
    assert server_pid is not None
    (old,) = await poll(
        lambda: asyncio.to_thread(derive_children, server_pid), lambda pids: len(pids) == 1, what="derive"
    )
    receiver.drop_held = True
    receiver.hold.set()
    try:
        await mcp_edit(site, "Hooks/Kill.md", "alpha", "ALPHA")
        # The delivery is in flight: the receiver holds the request, unanswered.
        assert await asyncio.to_thread(receiver.holding.wait, 30), "no delivery reached the receiver"
        os.kill(old, signal.SIGKILL)
        await poll(lambda: asyncio.to_thread(alive, old), lambda up: not up, what="the derive process gone")
    finally:
        receiver.hold.clear()
    await asyncio.sleep(0.2)  # the held requests are let go, and dropped
    receiver.drop_held = False
    ((msg_id,),) = await site.arows(
        "SELECT e.msg_id FROM lensrelay_webhookevent e WHERE e.type = 'suggestion.created' AND e.doc_id = ?",
        await site.doc_id("Hooks/Kill.md"),
    )
    assert msg_id not in receiver.ids()  # the killed attempt never counted
    (new,) = await poll(
        lambda: asyncio.to_thread(derive_children, server_pid),
        lambda pids: len(pids) == 1,
        timeout=15,
        what="the derive process started again",
    )
    assert new != old
    # Its claim runs out (timeout + margin), the new process sends it again: same id, same body.
    got = await wait_received(
        receiver, lambda got: msg_id in {r.msg_id for r in got}, timeout=40, what="the retry"
    )
    arrived = one([r for r in got if r.msg_id == msg_id])
    await asyncio.to_thread(as_recorded, site, arrived)
    status = """SELECT d.status FROM lensrelay_webhookdelivery d
                JOIN lensrelay_webhookevent e ON e.id = d.event_id
                JOIN lensrelay_webhookendpoint p ON p.id = d.endpoint_id
                WHERE e.msg_id = ? AND p.name = 'everything'"""
    await poll(lambda: site.arows(status, msg_id), lambda rows: rows == [("delivered",)], what="delivered")


async def test_a_folder_scoped_endpoint_sees_nothing_of_other_folders(
    site: Site, yclients: YClientFactory
) -> None:
    other = await site.doc_id("Other/Scoped.md")
    mine = await site.doc_id("Hooks/Scoped.md")
    token = site.relay.tokens["edit"]
    for doc_id in (other, mine):
        client = await yclients(site.relay.doc_url(doc_id), doc_id, params={"token": token})
        await client.insert(0, "scope test ")
    await mcp_edit(site, "Other/Scoped.md", "beta", "SECRET")
    await mcp_edit(site, "Hooks/Scoped.md", "beta", "MINE")

    def has(got: list[Received], doc_id: str, type: str) -> bool:
        return any(
            r.type == type and (r.data.get("doc_id") or r.data.get("suggestion", {}).get("doc_id")) == doc_id
            for r in got
        )

    await wait_received(
        site.everything,
        lambda got: all(
            has(got, d, t) for d in (other, mine) for t in ("document.changed", "suggestion.created")
        ),
        what="both folders' events at the all-folders endpoint",
    )
    await wait_received(
        site.scoped,
        lambda got: has(got, mine, "document.changed") and has(got, mine, "suggestion.created"),
        what="its own folder's events at the scoped endpoint",
    )
    await asyncio.sleep(1.0)
    leaked = [r for r in site.scoped.received if "Other" in r.body.decode() or other in r.body.decode()]
    assert leaked == []
    # Nothing of Other was ever queued for it, not only not yet delivered.
    queued = await site.arows(
        """SELECT COUNT(*) FROM lensrelay_webhookdelivery d
           JOIN lensrelay_webhookevent e ON e.id = d.event_id
           JOIN lensrelay_webhookendpoint p ON p.id = d.endpoint_id
           WHERE p.name = 'hooks only' AND (e.folder_id = ? OR e.other_folder_id = ?)""",
        *[(await site.arows("SELECT id FROM lensrelay_folder WHERE name = 'Other'"))[0][0]] * 2,
    )
    assert queued == [(0,)]
    assert site.scoped.refused == []


async def test_staff_add_an_endpoint_and_send_it_a_test_event_in_chromium(
    site: Site, browser_thread: BrowserThread
) -> None:
    """In the admin, in a real browser: a hostile URL is refused, an endpoint is created, its secret is
    shown to the superuser, and the confirmed "send test event" action reaches the receiver, signed."""
    receiver = Receiver(path="/browser").start()
    base = site.relay.http_url
    context = await asyncio.to_thread(signed_in_context, browser_thread, base, "ada", PASSWORD)
    page = await browser_thread.run(context.new_page)
    only = "document.moved"

    def fill(page: Page, url: str) -> None:
        page.goto(f"{base}/admin/lensrelay/webhookendpoint/add/")
        page.fill("#id_name", "from the browser")
        page.fill("#id_url", url)
        for box in page.locator("input[name=event_types]").all():
            if box.get_attribute("value") != only:
                box.uncheck()
        page.check("#id_all_folders")
        with page.expect_navigation():
            page.click("input[name=_save]")

    try:
        # Refused whatever LENSRELAY_WEBHOOK_ALLOW_PRIVATE says (this module allows private addresses).
        await browser_thread.run(lambda: fill(page, "http://user:secret@127.0.0.1/hook"))
        error = await browser_thread.run(lambda: page.locator(".errorlist").first.inner_text())
        assert "may not carry credentials" in error
        assert await site.arows("SELECT COUNT(*) FROM lensrelay_webhookendpoint") == [(2,)]
        # The receiver's own loopback URL is allowed here (LENSRELAY_WEBHOOK_ALLOW_PRIVATE in this module).
        await browser_thread.run(lambda: fill(page, receiver.url))
        ((pk, types_json),) = await site.arows(
            "SELECT id, event_types FROM lensrelay_webhookendpoint WHERE name = 'from the browser'"
        )
        assert json.loads(types_json) == [only]

        def secret(page: Page) -> str:
            page.goto(f"{base}/admin/lensrelay/webhookendpoint/{pk}/change/")
            return page.locator("#webhook-secret").inner_text().strip()

        receiver.secret = await browser_thread.run(lambda: secret(page))
        assert receiver.secret.startswith("whsec_")

        def send_test(page: Page) -> str:
            page.goto(f"{base}/admin/lensrelay/webhookendpoint/")
            page.check(f"input.action-select[value='{pk}']")
            page.select_option("select[name=action]", "send_test_event")
            with page.expect_navigation():
                page.click("button[name=index]")
            assert page.locator("#will-send").inner_text().startswith("from the browser")
            with page.expect_navigation():
                page.click("#confirm-send-test")
            return page.locator("ul.messagelist").inner_text()

        told = await browser_thread.run(lambda: send_test(page))
        assert "Queued a test event for 1 endpoint" in told
        got = await wait_received(receiver, lambda got: len(got) >= 1, what="the test event")
        assert [r.type for r in got] == ["webhook.test"]
        assert got[0].data == {"endpoint": "from the browser", "requested_by": "ada"}
        assert receiver.refused == []
    finally:
        await browser_thread.run(page.close)
        await browser_thread.run(context.close)
        receiver.stop()
