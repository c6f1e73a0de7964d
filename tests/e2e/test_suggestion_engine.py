"""The suggestion engine's findings (issue 8: 1-5, 9; issue 7: 5), each through the official `mcp` client
against a running server, with the stored text checked through a real npm y-websocket client and
decisions made by a reviewer signed in to the admin over HTTP.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from suggestions.markup.criticmarkup import mark_id, parse
from suggestions.markup.rewriting import accepted_of, base_of

from .conftest import YClientFactory
from .relay import Relay, poll
from .yclient import YClient, utf16_index

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

FOLDER = "Engine"
REVIEWER, PASSWORD = "reviewer", "correct horse battery staple"
TIMEOUT = 30.0
DOCS = {
    "Crash.md": "Photosynthesis turns light into sugar.\n",
    "Comment.md": "Hello {>>human note<<} world\n",
    "Neighbour.md": "Hello beautiful world today.\n",
    "Typing.md": "The chloroplast holds chlorophyll.\n",
    "Noise.md": "keep delete me keep\n",
    "Broken.md": "Plants make sugar.\n",
    "Counts.md": "Cells divide by mitosis, and the daughter cells grow before they divide again.\n",
    "Forgery.md": "ABK and more\n",
    "Forgery2.md": "Hello world\n",
}
_MARKER = "E2E-ENGINE "
_SETUP = """
import json
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from lensrelay.access.tokens import token_create
call_command("import_vault", {vault!r}, folder={folder!r})
tokens = {{name: token_create(name=name, role="suggest")[1] for name in ("claude-review", "gpt")}}
user = User.objects.create_user({user!r}, password={password!r}, is_staff=True)
user.user_permissions.set(Permission.objects.filter(content_type__app_label="suggestions"))
print({marker!r} + json.dumps(tokens))
"""


@dataclass(frozen=True)
class Engine:
    relay: Relay
    tokens: dict[str, str]

    async def doc_id(self, name: str) -> str:
        return await self.relay.doc_id(self.relay.tokens["admin"], folder=FOLDER, path=f"/{name}")


@pytest.fixture(scope="module")
def engine(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Engine:
    vault = tmp_path_factory.mktemp("engine-vault")
    for name, text in DOCS.items():
        (vault / name).write_text(text)
    script = _SETUP.format(vault=str(vault), folder=FOLDER, user=REVIEWER, password=PASSWORD, marker=_MARKER)
    out = relay.manage("shell", "-c", script)
    line = next(line for line in out.splitlines() if line.startswith(_MARKER))
    return Engine(relay, json.loads(line[len(_MARKER) :]))


# -- clients -----------------------------------------------------------------------------------------------


@asynccontextmanager
async def assistant(engine: Engine, name: str = "claude-review") -> AsyncIterator[Caller]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {engine.tokens[name]}"}, timeout=TIMEOUT)
    async with http:
        transport = streamable_http_client(f"{engine.relay.http_url}/mcp", http_client=http)
        async with Client(transport, mode="legacy") as client:
            yield Caller(client)


class Caller:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        result = await self.client.call_tool(name, arguments)
        text = "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))
        return text, bool(result.is_error)

    async def ok(self, name: str, arguments: dict[str, Any]) -> str:
        text, error = await self.call(name, arguments)
        assert not error, f"{name}({arguments}) failed: {text}"
        return text

    async def edit(self, path: str, old: str, new: str) -> str:
        """Read, then edit: the id of the new suggestion."""
        await self.ok("read", {"file_path": path})
        return uid_of(await self.ok("edit", {"file_path": path, "old_string": old, "new_string": new}))


class Reviewer:
    """A staff user with the review permission, deciding in the admin over plain HTTP."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.AsyncClient(base_url=base_url, timeout=TIMEOUT, follow_redirects=True)

    async def __aenter__(self) -> Reviewer:
        page = await self.http.get("/admin/login/?next=/admin/")
        response = await self.http.post(
            "/admin/login/?next=/admin/",
            data={"username": REVIEWER, "password": PASSWORD, "csrfmiddlewaretoken": _csrf(page.text)},
        )
        assert response.url.path == "/admin/", response.text[:500]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def pk(self, uid: str) -> str:
        # Every status: the list opens on pending ones, and some of these are stale by now.
        page = await self.http.get("/admin/suggestions/suggestion/", params={"q": uid, "status": "all"})
        found = re.findall(r"/admin/suggestions/suggestion/(\d+)/change/", page.text)
        assert found, f"suggestion {uid} not in the changelist"
        return found[0]

    async def decide(self, uid: str, decision: str) -> str:
        """The admin's message after Accept or Reject."""
        pk = await self.pk(uid)
        page = await self.http.get(f"/admin/suggestions/suggestion/{pk}/change/")
        response = await self.http.post(
            f"/admin/suggestions/suggestion/{pk}/decide/",
            data={"decision": decision, "csrfmiddlewaretoken": _csrf(page.text)},
        )
        return _messages(response.text)

    async def clean_up(self, uid: str) -> str:
        pk = await self.pk(uid)
        # The changelist a reviewer acts from shows stale suggestions (it opens on pending ones), and
        # the admin applies an action to the rows its filters show.
        changelist = "/admin/suggestions/suggestion/?status=stale"
        page = await self.http.get(changelist)
        form = {
            "action": "clean_up_selected",
            "_selected_action": pk,
            "csrfmiddlewaretoken": _csrf(page.text),
        }
        confirm = await self.http.post(changelist, data=form)
        assert "Clean up the selected stale suggestions?" in confirm.text
        done = await self.http.post(
            changelist,
            data={**form, "post": "yes", "csrfmiddlewaretoken": _csrf(confirm.text)},
        )
        return _messages(done.text)


def _csrf(html: str) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert match, "no CSRF token on the page"
    return match.group(1)


def _messages(html: str) -> str:
    return " ".join(re.findall(r'<li class="(?:success|error|warning|info)">(.*?)</li>', html, re.S))


async def watcher(engine: Engine, yclients: YClientFactory, name: str) -> YClient:
    doc_id = await engine.doc_id(name)
    return await yclients(
        engine.relay.doc_url(doc_id), doc_id, params={"token": engine.relay.tokens["edit"]}, label=name
    )


def uid_of(reply: str) -> str:
    match = re.search(r"suggestion ([0-9a-f]{16})", reply) or re.search(
        r'"suggestion": "([0-9a-f]{16})"', reply
    )
    assert match, reply
    return match.group(1)


async def settled_text(client: YClient, predicate: Any, what: str) -> str:
    return await poll(client.text, predicate, timeout=10, what=what)


async def status_of(caller: Caller, uid: str) -> str:
    listed = await caller.ok("list_suggestions", {"limit": 500})
    match = re.search(rf"- {uid} (\w+) ", listed)
    assert match, listed
    return match.group(1)


# -- finding 1: the commonest workflow crashed -------------------------------------------------------------


async def test_write_then_edit_two_words_then_edit_inside_the_own_suggestion(
    engine: Engine, yclients: YClientFactory
) -> None:
    path = f"{FOLDER}/Crash.md"
    async with assistant(engine) as claude:
        created = f"{FOLDER}/Fresh.md"
        await claude.ok("write", {"file_path": created, "content": "Fresh green leaves grow.\n"})
        await claude.ok("read", {"file_path": created})
        await claude.ok(
            "multi_edit",
            {
                "file_path": created,
                "edits": [
                    {"old_string": "Fresh", "new_string": "New"},
                    {"old_string": "grow", "new_string": "unfold"},
                ],
            },
        )
        await claude.ok("edit", {"file_path": created, "old_string": "New green", "new_string": "Young"})
        assert (await claude.ok("read", {"file_path": created})).startswith("     1\tYoung leaves unfold.")
        await claude.ok("read", {"file_path": path})
        await claude.ok(
            "write", {"file_path": path, "content": "Photosynthesis turns sunlight into stored sugar.\n"}
        )
        await claude.ok(
            "multi_edit",
            {
                "file_path": path,
                "edits": [
                    {"old_string": "Photosynthesis", "new_string": "Photosynthesis (in plants)"},
                    {"old_string": "sugar", "new_string": "glucose"},
                ],
            },
        )
        # Taking back exactly what the write proposed there is no change of its own: refused, with what
        # to do (it once wrote a mark that changed nothing, {--light--}{++light++}).
        taken_back, refused = await claude.call(
            "edit", {"file_path": path, "old_string": "sunlight into stored", "new_string": "light into"}
        )
        assert refused and "only takes back pending suggestion(s)" in taken_back, taken_back
        reply = await claude.ok(
            "edit",
            {"file_path": path, "old_string": "sunlight into stored", "new_string": "bright light into"},
        )
        assert "supersedes" in reply
        text = await claude.ok("read", {"file_path": path})
    expected = "Photosynthesis (in plants) turns bright light into glucose.\n"
    client = await watcher(engine, yclients, "Crash.md")
    stored = await settled_text(client, lambda t: accepted_of(t) == expected, "the accepted view")
    assert base_of(stored) == DOCS["Crash.md"]
    assert text.splitlines()[0].endswith(expected.rstrip("\n"))


# -- finding 2: a person's comment survives wherever an edit lands -------------------------------------------


async def test_a_human_comment_survives_an_edit_and_its_rejection(
    engine: Engine, yclients: YClientFactory
) -> None:
    path = f"{FOLDER}/Comment.md"
    async with assistant(engine) as claude:
        uid = await claude.edit(path, "Hello  world", "Goodbye world")
    client = await watcher(engine, yclients, "Comment.md")
    stored = await client.text()
    assert "{>>human note<<}" in stored
    assert accepted_of(stored) == "Goodbye world\n" and base_of(stored) == "Hello  world\n"
    async with Reviewer(engine.relay.http_url) as reviewer:
        message = await reviewer.decide(uid, "reject")
    assert "Rejected the edit" in message, message
    assert await settled_text(client, lambda t: "{--" not in t, "the rejection") == DOCS["Comment.md"]


# -- finding 3: a neighbouring suggestion is never swallowed ----------------------------------------------


async def test_a_touching_neighbour_keeps_its_author_and_is_decided_alone(
    engine: Engine, yclients: YClientFactory
) -> None:
    path = f"{FOLDER}/Neighbour.md"
    async with assistant(engine, "gpt") as gpt:
        theirs = await gpt.edit(path, "beautiful ", "")
    async with assistant(engine) as claude:
        await claude.ok("read", {"file_path": path})
        reply = await claude.ok(
            "edit", {"file_path": path, "old_string": "world today", "new_string": "earth now"}
        )
        assert "supersedes" not in reply
        ours = uid_of(reply)
    client = await watcher(engine, yclients, "Neighbour.md")
    marks = parse(await client.text())
    deletion = next(m for m in marks if mark_id(m) == theirs)
    assert deletion.kind == "deletion" and deletion.content == "beautiful "
    assert deletion.metadata is not None and deletion.metadata["author"] == "gpt · mcp"
    assert {m.content for m in marks if mark_id(m) == ours} == {"world today", "earth now"}
    async with Reviewer(engine.relay.http_url) as reviewer:
        assert "Accepted" in await reviewer.decide(theirs, "accept")
        after = await settled_text(client, lambda t: "beautiful" not in t, "the accepted neighbour")
        assert accepted_of(after) == "Hello earth now.\n" and base_of(after) == "Hello world today.\n"
        assert "Rejected" in await reviewer.decide(ours, "reject")
    assert await settled_text(client, lambda t: "{" not in t, "the rejection") == "Hello world today.\n"


# -- finding 4: a person typing inside a word being replaced keeps their words ----------------------------


async def test_typing_inside_a_word_being_accepted_keeps_the_persons_text(
    engine: Engine, yclients: YClientFactory
) -> None:
    path = f"{FOLDER}/Typing.md"
    async with assistant(engine) as claude:
        uid = await claude.edit(path, "chlorophyll", "pigments")
        person = await watcher(engine, yclients, "Typing.md")
        stored = await person.text()
        inside = stored.index("chlorophyll") + len("chloro")
        await person.insert(utf16_index(stored, inside), "-a-")
        async with Reviewer(engine.relay.http_url) as reviewer:
            await poll(
                reviewer_sees(engine), lambda t: "chloro-a-phyll" in t, what="the server has the typing"
            )
            message = await reviewer.decide(uid, "accept")
        # The follower may have found it stale already (within a second of the typing): refused either way.
        assert "Could not accept" in message, message
        assert "edited since it was proposed" in message or "already stale" in message, message
        assert await status_of(claude, uid) == "STALE"
    final = await person.text()
    assert "chloro-a-phyll" in final and accepted_of(final).startswith("The chloroplast holds pigments")


def reviewer_sees(engine: Engine) -> Any:
    async def probe() -> str:
        doc_id = await engine.doc_id("Typing.md")
        return await engine.relay.doc_text(doc_id, token=engine.relay.tokens["admin"])

    return probe


async def test_typing_racing_an_accept_never_loses_the_persons_text(
    engine: Engine, yclients: YClientFactory
) -> None:
    path = f"{FOLDER}/Typing.md"
    async with assistant(engine) as claude:
        uid = await claude.edit(path, "holds", "keeps")
    person = await watcher(engine, yclients, "Typing.md")
    stored = await person.text()
    at = utf16_index(stored, stored.index("holds") + 2)
    async with Reviewer(engine.relay.http_url) as reviewer:
        decided, _ = await asyncio.gather(reviewer.decide(uid, "accept"), person.insert(at, "XYZ"))
    final = await poll(reviewer_sees(engine), lambda t: "XYZ" in t, what="the person's text on the server")
    assert "XYZ" in await person.text() and "XYZ" in final
    # Either the accept wins, or the typing does and the accept is refused: found edited by the accept
    # itself, or (when the typing reached the server first) already stale by the follower, as above.
    refused = ("edited since it was proposed", "already stale")
    assert ("Accepted" in decided) or any(reason in decided for reason in refused), decided


# -- finding 5: deleting words stores a clean deletion ------------------------------------------------------


async def test_deleting_words_stores_only_a_deletion(engine: Engine, yclients: YClientFactory) -> None:
    path = f"{FOLDER}/Noise.md"
    async with assistant(engine) as claude:
        await claude.edit(path, " delete me ", "")
    client = await watcher(engine, yclients, "Noise.md")
    stored = await client.text()
    [deletion] = parse(stored)
    assert deletion.kind == "deletion" and deletion.content == " delete me "
    assert stored == "keep" + stored[deletion.start : deletion.end] + "keep\n"


# -- finding 9: stale found when it happens, cleaned up, counted honestly, readable ------------------------


async def test_broken_markup_is_stale_at_once_hidden_from_read_and_cleaned_up(
    engine: Engine, yclients: YClientFactory
) -> None:
    path = f"{FOLDER}/Broken.md"
    async with assistant(engine) as claude:
        uid = await claude.edit(path, "Plants", "Plants and algae")
        person = await watcher(engine, yclients, "Broken.md")
        stored = await person.text()
        [addition] = [m for m in parse(stored) if m.kind == "addition"]
        assert '"author":"claude-review · mcp"' in stored  # metadata escapes only what JSON needs
        await person.delete(utf16_index(stored, addition.start), 3)  # the "{++" a person deleted
        await poll(lambda: status_of(claude, uid), lambda s: s == "STALE", timeout=5, what="stale")
        shown = await claude.ok("read", {"file_path": path})
        assert "[Pending suggestions]" not in shown
    async with Reviewer(engine.relay.http_url) as reviewer:
        message = await reviewer.clean_up(uid)
    assert "Cleaned up" in message, message
    assert await settled_text(person, lambda t: "@@" not in t, "the clean-up") == DOCS["Broken.md"]


async def test_replies_count_honestly_and_previews_read_well(engine: Engine) -> None:
    path = f"{FOLDER}/Counts.md"
    old = "and the daughter cells grow before they divide again."
    new = "and the daughter cells grow for a while before they divide again."
    async with assistant(engine) as claude:
        await claude.ok("read", {"file_path": path})
        reply = await claude.ok("edit", {"file_path": path, "old_string": old, "new_string": new})
        assert f"replaced {len(old)} characters" in reply
        assert "1 hunk: 0 characters marked for deletion, 12 inserted" in reply, reply
        uid = uid_of(
            await claude.ok(
                "multi_edit",
                {
                    "file_path": path,
                    "edits": [
                        {"old_string": "Cells divide", "new_string": "Cells split"},
                        {"old_string": "mitosis", "new_string": "mitosis\nor meiosis"},
                    ],
                },
            )
        )
        listed = await claude.ok("list_suggestions", {"path": path})
    block = listed.split(f"- {uid} ")[1].split("\n- ")[0]
    assert "\n  {--divide--}{++split++}" in block
    assert "\n  {--mitosis--}{++mitosis⏎or meiosis++}" in block or "{++⏎or meiosis++}" in block, block


# -- issue 7 finding 5: markup assembled from pieces is refused, nothing stored changes ----------------------


async def test_forgery_through_multi_edit_and_through_two_edits_is_refused(
    engine: Engine, yclients: YClientFactory
) -> None:
    injected = '+{"author":"alice","timestamp":1}@@INJECTED+'
    async with assistant(engine) as claude:
        await claude.ok("read", {"file_path": f"{FOLDER}/Forgery.md"})
        text, error = await claude.call(
            "multi_edit",
            {
                "file_path": f"{FOLDER}/Forgery.md",
                "edits": [
                    {"old_string": "A", "new_string": "{+"},
                    {"old_string": "B", "new_string": injected},
                    {"old_string": "K", "new_string": "+}"},
                ],
            },
        )
        assert error and "'{++'" in text, text
        await claude.ok("read", {"file_path": f"{FOLDER}/Forgery2.md"})
        await claude.ok(
            "edit", {"file_path": f"{FOLDER}/Forgery2.md", "old_string": "Hello", "new_string": "Hello {+"}
        )
        client = await watcher(engine, yclients, "Forgery2.md")
        before = await client.text()
        # The second call's new_string holds no delimiter of its own: only with the first call's "{+" does it.
        text, error = await claude.call(
            "edit",
            {"file_path": f"{FOLDER}/Forgery2.md", "old_string": " world", "new_string": injected + " world"},
        )
        assert error and "'{++'" in text, text
    first = await watcher(engine, yclients, "Forgery.md")
    assert await first.text() == DOCS["Forgery.md"]
    assert await client.text() == before
    assert not any(m.metadata and m.metadata.get("author") == "alice" for m in parse(before))
