"""Who wrote what, as any Yjs client sees it (issue 31): each assistant writes its suggestions under a Yjs
client id of its own, registered in the note's `users` map (Yjs's PermanentUserData, as Relay.md clients
keep it), beside a person's client that registered itself; an npm y-websocket client attributes every run
of the text; accepting keeps the assistant's authorship of the text it proposed; nothing an assistant did
not write is attributed to it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from .browser import mcp_client
from .conftest import YClientFactory
from .relay import Relay
from .test_review_page_browser import suggest
from .test_undo_http import _SETUP, PASSWORD, Staff, rows

pytestmark = pytest.mark.e2e

FOLDER = "Authors"
NOTE = "# Plan\n\nThe quick fox jumps.\nBirds sing.\n"
_MARKER = "E2E-UNDO "


@pytest.fixture(scope="module")
def doc_id(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> str:
    vault: Path = tmp_path_factory.mktemp("authors")
    (vault / "Plan.md").write_text(NOTE, encoding="utf-8")
    relay.import_vault(vault, folder=FOLDER)
    assert _MARKER + "ok" in relay.manage("shell", "-c", _SETUP.format(password=PASSWORD, marker=_MARKER))
    return asyncio.run(relay.doc_id(relay.tokens["edit"], folder=FOLDER, path="/Plan.md"))


def by_user(runs: list[dict[str, Any]]) -> dict[str | None, str]:
    found: dict[str | None, str] = {}
    for run in runs:
        found[run["user"]] = found.get(run["user"], "") + run["text"]
    return found


async def test_each_assistant_and_person_is_named_for_the_text_they_wrote_and_accepting_keeps_it(
    relay: Relay, doc_id: str, yclients: YClientFactory
) -> None:
    params = {"token": relay.tokens["edit"]}
    ana = await yclients(relay.doc_url(doc_id), doc_id, params=params, label="ana")
    ana_id = await ana.register_user("ana")
    await ana.insert(len(NOTE), "Ana adds a line.\n")

    async with mcp_client(relay.http_url, relay.tokens["suggest"]) as first:
        uid = await suggest(first, f"{FOLDER}/Plan.md", "quick", "swift")
    async with mcp_client(relay.http_url, relay.tokens["admin"]) as second:
        await suggest(second, f"{FOLDER}/Plan.md", "Birds sing.", "Birds sing loudly.")
    await ana.wait_text(contains="loudly")

    runs = await ana.authorship()
    users = by_user(runs)
    assert (
        "Ana adds a line." in users["ana"] and next(r["client"] for r in runs if r["user"] == "ana") == ana_id
    )
    # its markup and its words are its own; the words it marks for deletion stay their writer's
    assert "@@swift++}" in users["suggest · mcp"] and "quick" not in users["suggest · mcp"], runs
    assert "quick" in users[None]
    assert "loudly" in users["admin · mcp"] and "swift" not in users["admin · mcp"], runs
    # the two assistants write under different client ids, neither the imported text's nor ana's
    assistants = {r["client"] for r in runs if r["user"] in ("suggest · mcp", "admin · mcp")}
    assert len(assistants) == 2 and ana_id not in assistants
    assert "swift" not in users[None]  # the imported text: no one registered its client
    users_map = await ana.get_map("users")
    assert set(users_map) == {"ana", "suggest · mcp", "admin · mcp"}  # no one who wrote nothing

    # The reviewer accepts: the delimiters go, the proposed text stays the assistant's.
    rita = await Staff.sign_in(relay.http_url, "rita")
    pk = rows(relay, [uid])[uid]["pk"]
    decided = await rita.post(f"/admin/suggestions/suggestion/{pk}/decide/", {"decision": "accept"})
    assert decided.status_code == 302
    await ana.wait_text(contains="The swift fox")
    runs = await ana.authorship()
    after = by_user(runs)
    assert "swift" in after["suggest · mcp"] and "{++" not in after["suggest · mcp"], after
    assert "quick" not in "".join(after.values())
    # and Yjs's PermanentUserData says who removed the marks around it: the reviewer accepted it
    [swift] = [r for r in runs if r["user"] == "suggest · mcp" and "swift" in r["text"]]
    assert swift["removedBefore"] == swift["removedAfter"] == "rita", swift
    assert "rita" in await ana.get_map("users")
