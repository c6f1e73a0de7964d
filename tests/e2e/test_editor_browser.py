"""The live editor page end to end with real clients: two staff users in two Chromium contexts, the
official `mcp` client as the assistant and an npm y-websocket client as a third person, on one server.

The page is CodeMirror bound to the document over /d/<id>/ws with the session cookie; suggestions show
as tracked changes with Accept / Reject inline; the file tree acts through the vault's services.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from mcp import Client
from playwright.sync_api import BrowserContext, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from .browser import PASSWORD, AdminPage, BrowserThread, call, mcp_client, signed_in_context
from .conftest import YClientFactory
from .relay import Relay
from .yclient import YClient, utf16_index, utf16_len

pytestmark = pytest.mark.e2e

FOLDER = "Editor"
DOCUMENTS = (
    "Together",
    "Converge-1",
    "Converge-2",
    "Converge-3",
    "Viewer",
    "Keys",
    "Hostile",
    "Linked",
    "Stale",
    "Undo",
    "Notes",
    "Inbox",
)
BASE = "# {title}\n\nThe quick brown fox jumps over the lazy dog.\nAnother line here.\nA third line.\n"
ANN, BOB, VIC = "ann", "bob", "vic"
ASSISTANT = "claude"
# A token session's suggestions are authored as the token and the client (the SDK calls itself "mcp").
AUTHOR = f"{ASSISTANT} · mcp"
_MARKER = "E2E-EDITOR "

_SETUP_SCRIPT = """
import json
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from lensrelay.access.tokens import token_create
call_command("import_vault", {vault!r}, folder={folder!r})
_, raw = token_create(name={assistant!r}, role="suggest")
for username, names in {users!r}.items():
    user = User.objects.create_user(username, password={password!r}, is_staff=True)
    perms = [Permission.objects.get(content_type__app_label=n.split(".")[0], codename=n.split(".")[1])
             for n in names]
    user.user_permissions.set(perms)
print({marker!r} + json.dumps(raw))
"""

EDITOR_PERMS = [
    "suggestions.view_suggestion",
    "suggestions.review_suggestion",
    "lensrelay.view_document",
    "lensrelay.edit_live",
]
# Staff who may see suggestions but not documents: no socket, no editor page.
NOR = "nor"


def text_of(title: str) -> str:
    return BASE.format(title=title)


@dataclass(frozen=True)
class Setup:
    relay: Relay
    assistant_token: str
    writer_token: str
    doc_ids: dict[str, str]
    browser: BrowserThread

    def editor_url(self, title: str) -> str:
        return f"{self.relay.http_url}/admin/suggestions/suggestion/document/{self.doc_ids[title]}/edit/"


@pytest.fixture(scope="module")
def setup(relay: Relay, browser_thread: BrowserThread, tmp_path_factory: pytest.TempPathFactory) -> Setup:
    vault = tmp_path_factory.mktemp("editor-vault")
    for title in DOCUMENTS:
        (vault / f"{title}.md").write_text(text_of(title), encoding="utf-8")
    users = {
        ANN: EDITOR_PERMS,
        BOB: EDITOR_PERMS,
        VIC: ["suggestions.view_suggestion", "lensrelay.view_document"],
        NOR: ["suggestions.view_suggestion"],
    }
    script = _SETUP_SCRIPT.format(
        vault=str(vault), folder=FOLDER, assistant=ASSISTANT, users=users, password=PASSWORD, marker=_MARKER
    )
    out = relay.manage("shell", "-c", script)
    token = json.loads(next(line for line in out.splitlines() if line.startswith(_MARKER))[len(_MARKER) :])
    writer = relay.tokens["edit"]
    paths = asyncio.run(relay.document_paths(writer, folder=FOLDER))
    doc_ids = {title: paths[f"{FOLDER}/{title}.md"] for title in DOCUMENTS}
    return Setup(relay, token, writer, doc_ids, browser_thread)


def _context(setup: Setup, user: str) -> Iterator[BrowserContext]:
    context = signed_in_context(setup.browser, setup.relay.http_url, user)
    yield context
    setup.browser.call(context.close)


@pytest.fixture(scope="module")
def ann_context(setup: Setup) -> Iterator[BrowserContext]:
    yield from _context(setup, ANN)


@pytest.fixture(scope="module")
def bob_context(setup: Setup) -> Iterator[BrowserContext]:
    yield from _context(setup, BOB)


@pytest.fixture(scope="module")
def vic_context(setup: Setup) -> Iterator[BrowserContext]:
    yield from _context(setup, VIC)


@pytest.fixture(scope="module")
def nor_context(setup: Setup) -> Iterator[BrowserContext]:
    yield from _context(setup, NOR)


class EditorPage(AdminPage):
    """The editor page of one document in a signed-in context."""

    _dialogs: Any = None

    async def answer_dialogs(self, answers: list[str]) -> None:
        """Prompts get the next of ``answers``; confirmations are accepted."""

        def handle(dialog: Any) -> None:
            dialog.accept(answers.pop(0)) if dialog.type == "prompt" else dialog.accept()

        def install(page: Page) -> None:
            page.remove_listener("dialog", self._dialogs) if self._dialogs else None
            page.on("dialog", handle)
            self._dialogs = handle

        await self.do(install)

    async def open_editor(self, url: str) -> None:
        def go(page: Page) -> None:
            page.goto(url)
            page.wait_for_selector("#lr-editor[data-synced=true]")
            page.wait_for_selector("#lr-editor .cm-content")

        await self.do(go)

    async def text(self) -> str:
        return await self.do(lambda page: page.evaluate("window.lensEditor.ytext.toString()"))

    async def shown(self) -> str:
        return await self.do(lambda page: page.evaluate("window.lensEditor.view.state.doc.toString()"))

    async def wait_text(self, *, equals: str | None = None, contains: str | None = None) -> str:
        def check(page: Page) -> str:
            try:
                page.wait_for_function(
                    """([equals, contains]) => {
                        const t = window.lensEditor.view.state.doc.toString();
                        return (equals === null || t === equals)
                            && (contains === null || t.includes(contains));
                    }""",
                    arg=[equals, contains],
                )
            except PlaywrightTimeoutError as exc:
                # Say why: a connection the server closed reads "The server closed the connection: ...".
                raise AssertionError(
                    f"the editor's text {page.evaluate('window.lensEditor.view.state.doc.toString()')!r} "
                    f"never matched; connection {page.inner_text('#lr-connection')!r}, "
                    f"status {page.inner_text('#lr-status')!r}"
                ) from exc
            return str(page.evaluate("window.lensEditor.view.state.doc.toString()"))

        return await self.do(check)


@pytest.fixture
async def ann(setup: Setup, ann_context: BrowserContext) -> AsyncIterator[EditorPage]:
    page = EditorPage(setup.browser, setup.relay.http_url, await setup.browser.run(ann_context.new_page))
    yield page
    await page.close()


@pytest.fixture
async def bob(setup: Setup, bob_context: BrowserContext) -> AsyncIterator[EditorPage]:
    page = EditorPage(setup.browser, setup.relay.http_url, await setup.browser.run(bob_context.new_page))
    yield page
    await page.close()


@pytest.fixture
async def vic(setup: Setup, vic_context: BrowserContext) -> AsyncIterator[EditorPage]:
    page = EditorPage(setup.browser, setup.relay.http_url, await setup.browser.run(vic_context.new_page))
    yield page
    await page.close()


def assistant(setup: Setup) -> Client:  # type: ignore[valid-type]
    return mcp_client(setup.relay.http_url, setup.assistant_token)  # type: ignore[return-value]


async def suggest(client: Client, title: str, old: str, new: str) -> str:
    path = f"{FOLDER}/{title}.md"
    await call(client, "read", {"file_path": path})
    answer = await call(client, "edit", {"file_path": path, "old_string": old, "new_string": new})
    match = re.search(r"\(suggestion ([0-9a-f]+), pending", answer)
    assert match, answer
    return match.group(1)


async def node_client(setup: Setup, yclients: YClientFactory, title: str) -> YClient:
    doc_id = setup.doc_ids[title]
    client = await yclients(
        setup.relay.doc_url(doc_id), doc_id, params={"token": setup.writer_token}, label=title
    )
    return client


def tracked(page: Page) -> dict[str, list[str]]:
    page.wait_for_selector(".lr-ins")
    return {
        "ins": page.locator(".lr-ins").all_inner_texts(),
        "del": page.locator(".lr-del").all_inner_texts(),
        "author": page.locator(".lr-author").all_inner_texts(),
    }


# -- the tests ---------------------------------------------------------------------------------------------


async def test_an_assistants_edit_shows_as_a_tracked_change_and_an_inline_accept_settles_it_everywhere(
    setup: Setup, yclients: YClientFactory, ann: EditorPage, bob: EditorPage
) -> None:
    person = await node_client(setup, yclients, "Together")
    await ann.open_editor(setup.editor_url("Together"))
    await bob.open_editor(setup.editor_url("Together"))
    assert await ann.shown() == text_of("Together")
    async with assistant(setup) as client:
        uid = await suggest(client, "Together", "quick brown", "slow red")
        for page in (ann, bob):
            seen = await page.do(tracked)
            assert seen == {"ins": ["slow red"], "del": ["quick brown"], "author": [AUTHOR]}, seen
            # the metadata is hidden, the raw text is there
            assert f'"id":"{uid}"' in await page.shown()
            visible = await page.do(lambda p: p.inner_text("#lr-editor .cm-content"))
            assert "timestamp" not in visible and "{++" not in visible
        # presence: each page shows both people
        for page in (ann, bob):
            await page.do(
                lambda p: p.wait_for_function(
                    "() => document.querySelector('#lr-presence').textContent.includes('ann') && "
                    "document.querySelector('#lr-presence').textContent.includes('bob')"
                )
            )

        await ann.do(lambda p: p.click(f"button.lr-accept[data-suggestion='{uid}']"))
        expected = text_of("Together").replace("quick brown", "slow red")
        assert await bob.wait_text(equals=expected) == expected
        assert await person.wait_text(equals=expected) == expected
        assert await ann.wait_text(equals=expected) == expected
        # the settled text may arrive over the socket before the decision's HTTP answer
        await ann.do(
            lambda p: p.wait_for_function(
                "() => document.querySelector('#lr-status').textContent.startsWith('Accepted the edit')"
            )
        )
        assert await bob.do(lambda p: p.locator(".lr-ins").count()) == 0
        told = await call(client, "list_suggestions", {"path": f"{FOLDER}/Together.md"})
        assert f"{uid} ACCEPTED" in told and f"decided by {ANN}" in told
        assert await setup.relay.doc_text(setup.doc_ids["Together"], token=setup.writer_token) == expected


# The cursor placed and the piece typed in one step, as one CodeMirror input transaction: between two
# Playwright calls a remote change can arrive, and a piece typed through the DOM (`insert_text`) after it
# was once read back as two changes, splitting an emoji's surrogate pair (CI, 2026-11-28): a problem of
# DOM input under concurrency, noted in issue 32, not of convergence, which is what this test checks.
TYPE_AT_CODE_POINT = """([at, piece]) => {
    const view = window.lensEditor.view;
    const doc = view.state.doc.toString();
    const high = at > 0 && doc.charCodeAt(at - 1) >= 0xd800 && doc.charCodeAt(at - 1) < 0xdc00;
    const from = high ? at - 1 : at;
    view.dispatch({
        changes: {from, insert: piece},
        selection: {anchor: from + piece.length},
        userEvent: "input.type",
    });
}"""
PIECES = ("a", "b", "ç", "語", "文字", "😀", "👩‍💻", " ", "\n", "x y")


async def _type_randomly(page: EditorPage, seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    typed = [f"<{seed}:{i}:{rng.choice(PIECES)}>" for i in range(count)]

    def type_all(p: Page) -> None:
        p.click("#lr-editor .cm-content")
        for piece in typed:
            length = p.evaluate("window.lensEditor.view.state.doc.length")
            # a random place, never between the two halves of a surrogate pair
            p.evaluate(TYPE_AT_CODE_POINT, [rng.randint(0, length), piece])

    await page.do(type_all)
    return typed


async def _node_types(client: YClient, seed: int, count: int) -> list[str]:
    rng = random.Random(seed * 7919)
    typed = []
    for i in range(count):
        piece = f"<n{seed}:{i}:{rng.choice(PIECES)}>"
        # A place in the text as read; the client finds it in the text as it is when the insert arrives,
        # which others may have typed into meanwhile (a UTF-16 index from the read once split an emoji).
        text = await client.text()
        await client.insert_at_code_point(rng.randint(0, len(text)), piece)
        typed.append(piece)
    return typed


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_typing_at_once_in_two_browsers_and_a_node_client_converges_with_nothing_lost(
    setup: Setup, yclients: YClientFactory, ann: EditorPage, bob: EditorPage, seed: int
) -> None:
    title = f"Converge-{seed}"
    person = await node_client(setup, yclients, title)
    await ann.open_editor(setup.editor_url(title))
    await bob.open_editor(setup.editor_url(title))
    typed = await asyncio.gather(
        _type_randomly(ann, seed, 25), _type_randomly(bob, seed + 100, 25), _node_types(person, seed, 25)
    )
    # everyone settles on the same text, holding every character anyone typed exactly once: pieces land
    # inside each other, so compare what the text is made of, code point by code point
    expected = Counter(text_of(title))
    for pieces in typed:
        for piece in pieces:
            expected.update(piece)
    deadline = asyncio.get_running_loop().time() + 15
    while True:
        texts = [await ann.shown(), await bob.shown(), await person.text()]
        if len(set(texts)) == 1 and Counter(texts[0]) == expected:
            break
        assert asyncio.get_running_loop().time() < deadline, (texts, expected - Counter(texts[0]))
        await asyncio.sleep(0.2)
    final = texts[0]
    assert "\ufffd" not in final
    # each writer's own pieces that no one typed inside are found whole
    assert sum(piece in final for pieces in typed for piece in pieces) > len(typed[0])
    stored = await setup.relay.doc_text(setup.doc_ids[title], token=setup.writer_token)
    assert stored == final


async def test_staff_without_the_live_edit_permission_see_the_text_and_cannot_change_it(
    setup: Setup, yclients: YClientFactory, vic: EditorPage
) -> None:
    person = await node_client(setup, yclients, "Viewer")
    await vic.open_editor(setup.editor_url("Viewer"))
    notice = await vic.do(lambda p: p.inner_text("#lr-readonly"))
    assert notice.startswith("Read only") and "Can edit documents live" in notice
    assert await vic.shown() == text_of("Viewer")
    # the editor takes no typing
    await vic.do(lambda p: (p.click("#lr-editor .cm-content"), p.keyboard.type("typed by vic")))
    assert "typed by vic" not in await vic.shown()
    # and a change forced into the page's own Y.Text is refused by the server
    await vic.do(lambda p: p.evaluate("window.lensEditor.ytext.insert(0, 'forced by vic ')"))
    await person.insert(0, "from the node client ")
    await person.wait_text(contains="from the node client")
    await asyncio.sleep(0.5)
    assert "forced by vic" not in await person.text()
    stored = await setup.relay.doc_text(setup.doc_ids["Viewer"], token=setup.writer_token)
    assert "forced by vic" not in stored and stored.startswith("from the node client ")
    # the live text reached the read-only page
    assert "from the node client" in await vic.wait_text(contains="from the node client")
    # no decision buttons, and the tree offers no changes
    assert await vic.do(lambda p: p.locator("[data-tree=note]").count()) == 0


def test_staff_who_may_not_view_documents_get_no_socket_and_no_editor(
    setup: Setup, nor_context: BrowserContext
) -> None:
    """The sixth finding of the third trust round: two frames on the editor's socket read any note."""
    doc_id = setup.doc_ids["Viewer"]

    def attack() -> dict[str, Any]:
        page = nor_context.new_page()
        try:
            editor = page.goto(setup.editor_url("Viewer"))
            assert editor is not None
            # From a page of the admin's own origin, with the session cookie, as the editor's code would.
            page.goto(f"{setup.relay.http_url}/admin/")
            outcome: dict[str, Any] = page.evaluate(
                """(url) => new Promise((resolve) => {
                    const socket = new WebSocket(url);
                    socket.binaryType = "arraybuffer";
                    const frames = [];
                    socket.onopen = () => {
                        socket.send(new Uint8Array([0, 0, 1, 0]));  // sync step 1, empty state vector
                        socket.send(new Uint8Array([3]));  // query awareness
                    };
                    socket.onmessage = (event) => frames.push(Array.from(new Uint8Array(event.data)));
                    socket.onclose = (event) => resolve({code: event.code, reason: event.reason, frames});
                    setTimeout(() => resolve({code: 0, reason: "still open", frames}), 5000);
                })""",
                setup.relay.server.ws_url + f"/d/{doc_id}/ws/{doc_id}",
            )
            outcome["editor_status"] = editor.status
            return outcome
        finally:
            page.close()

    outcome = setup.browser.call(attack)
    assert outcome["editor_status"] == 403
    assert outcome["code"] == 4401 and "view documents" in outcome["reason"], outcome
    received = bytes(byte for frame in outcome["frames"] for byte in frame)
    assert b"quick brown fox" not in received and not outcome["frames"], outcome


async def test_keyboard_only_review_of_a_note_with_three_suggestions(
    setup: Setup, yclients: YClientFactory, ann: EditorPage
) -> None:
    person = await node_client(setup, yclients, "Keys")
    async with assistant(setup) as client:
        first = await suggest(client, "Keys", "quick brown", "slow red")
        second = await suggest(client, "Keys", "Another line", "One more line")
        third = await suggest(client, "Keys", "A third line", "The last line")
    await ann.open_editor(setup.editor_url("Keys"))
    assert await ann.do(
        lambda p: (
            p.wait_for_function("() => document.querySelectorAll('.lr-actions').length === 3"),
            p.locator(".lr-ins").all_inner_texts(),
        )[1]
    ) == ["slow red", "One more", "The last"]

    def key(combo: str, status: str) -> Any:
        def press(p: Page) -> str:
            p.keyboard.press(combo)
            p.wait_for_function(
                "s => document.querySelector('#lr-status').textContent.startsWith(s)", arg=status
            )
            return p.inner_text("#lr-status")

        return press

    await ann.do(lambda p: p.focus("#lr-editor .cm-content"))
    told = await ann.do(key("Alt+n", "Suggestion 1 of 3"))
    assert "delete “quick brown”, insert “slow red”" in told
    await ann.do(key("Alt+a", "Accepted"))
    await ann.do(lambda p: p.wait_for_function("() => document.querySelectorAll('.lr-actions').length === 2"))
    told = await ann.do(key("Alt+n", "Suggestion"))
    assert "One more" in told, told
    await ann.do(key("Alt+r", "Rejected"))
    await ann.do(lambda p: p.wait_for_function("() => document.querySelectorAll('.lr-actions').length === 1"))
    await ann.do(key("Alt+p", "Suggestion 1 of 1"))
    await ann.do(key("Alt+a", "Accepted"))
    expected = text_of("Keys").replace("quick brown", "slow red").replace("A third line", "The last line")
    assert await person.wait_text(equals=expected) == expected
    async with assistant(setup) as client:
        accepted = await call(client, "list_suggestions", {"path": f"{FOLDER}/Keys.md", "status": "accepted"})
        rejected = await call(client, "list_suggestions", {"path": f"{FOLDER}/Keys.md", "status": "rejected"})
    assert f"{first} ACCEPTED" in accepted and f"{third} ACCEPTED" in accepted
    assert f"{second} REJECTED" in rejected


HOSTILE = (
    "# Hostile\n\n<script>window.pwned = 'script'</script>\n"
    "<img src=x onerror=\"window.pwned = 'img'\">\n"
    "Bidi: \u202eevil\u202c end\nThe quick brown fox.{>>a <i>note</i> from a person<<}\n"
)


async def test_hostile_text_and_markup_stay_inert(
    setup: Setup, yclients: YClientFactory, ann: EditorPage
) -> None:
    person = await node_client(setup, yclients, "Hostile")
    await person.delete(0, utf16_len(await person.text()))
    await person.insert(0, HOSTILE)
    async with assistant(setup) as client:
        await suggest(
            client,
            "Hostile",
            "quick brown",
            "<b onmouseover=\"window.pwned='b'\">bold</b><script>window.pwned='s2'</script>",
        )
    await ann.open_editor(setup.editor_url("Hostile"))
    await ann.do(lambda p: p.wait_for_selector(".lr-ins"))
    content = "#lr-editor .cm-content"
    # (CodeMirror's own empty `img.cm-widgetBuffer` elements sit beside its widgets)
    for tag in ("script", "img:not(.cm-widgetBuffer)", "b", "[onerror]", "[onmouseover]"):
        assert await ann.do(lambda p, tag=tag: p.locator(f"{content} {tag}").count()) == 0, tag
    shown = await ann.do(lambda p: p.inner_text(content))
    assert "<script>window.pwned = 'script'</script>" in shown
    assert (await ann.do(lambda p: p.inner_text(".lr-ins"))).startswith("<b onmouseover")
    await ann.do(lambda p: p.hover(".lr-ins"))
    assert await ann.do(lambda p: p.evaluate("window.pwned === undefined"))
    # the bidi override is shown as a visible special character, not applied
    assert await ann.do(lambda p: p.locator(f"{content} .cm-specialChar").count()) >= 1
    # a comment is a margin note, its HTML as text
    assert await ann.do(lambda p: p.inner_text(".lr-comment")) == "a <i>note</i> from a person"
    assert await ann.do(lambda p: p.locator(".lr-comment i").count()) == 0
    # the three views: as if all accepted, without suggestions (both read-only), back with suggestions
    await ann.do(lambda p: p.check("input[name=lr-view][value=accepted]"))
    accepted = await ann.do(lambda p: p.inner_text(content))
    assert "bold</b>" in accepted and "quick brown" not in accepted and "note</i>" not in accepted
    assert await ann.do(lambda p: p.locator(".lr-actions").count()) == 0
    await ann.do(lambda p: p.check("input[name=lr-view][value=original]"))
    original = await ann.do(lambda p: p.inner_text(content))
    assert "quick brown" in original and "bold</b>" not in original
    await ann.do(lambda p: (p.click(content), p.keyboard.type("zzz")))
    assert "zzz" not in await ann.shown()
    await ann.do(lambda p: p.check("input[name=lr-view][value=suggestions]"))
    assert await ann.do(lambda p: p.locator(".lr-actions").count()) == 1


async def test_the_file_tree_creates_renames_and_trashes_and_a_node_client_follows(
    setup: Setup, yclients: YClientFactory, ann: EditorPage
) -> None:
    folder_doc = await setup.relay.folder_doc_id(setup.writer_token, folder=FOLDER)
    watcher = await yclients(
        setup.relay.doc_url(folder_doc), folder_doc, params={"token": setup.writer_token}, label="folder"
    )
    await ann.open_editor(setup.editor_url("Linked"))
    await ann.do(lambda p: p.wait_for_selector("#lr-tree li[data-path='/Linked.md']"))
    await ann.answer_dialogs(["/Tree", "/Tree/Fresh", "/Tree/Renamed.md"])

    await ann.do(lambda p: p.click("[data-tree=folder]"))
    assert (await watcher.wait_map("filemeta_v0", "/Tree"))["/Tree"]["type"] == "folder"
    await ann.do(lambda p: p.click("[data-tree=note]"))
    created = await watcher.wait_map("filemeta_v0", "/Tree/Fresh.md")
    assert created["/Tree/Fresh.md"]["type"] == "markdown"
    await ann.do(lambda p: p.wait_for_selector("#lr-tree li[data-path='/Tree/Fresh.md']"))

    await ann.do(lambda p: p.click("button[aria-label='Rename or move /Tree/Fresh.md']"))
    moved = await watcher.wait_map("filemeta_v0", "/Tree/Renamed.md")
    assert moved["/Tree/Renamed.md"]["id"] == created["/Tree/Fresh.md"]["id"]
    await watcher.wait_map("filemeta_v0", "/Tree/Fresh.md", present=False)

    await ann.do(lambda p: p.wait_for_selector("#lr-tree li[data-path='/Tree/Renamed.md']"))
    await ann.do(lambda p: p.click("button[aria-label='Move to trash /Tree/Renamed.md']"))
    await watcher.wait_map("filemeta_v0", "/Tree/Renamed.md", present=False)
    await ann.do(
        lambda p: p.wait_for_function(
            "() => document.querySelector('#lr-status').textContent === 'Moved 1 entry to the trash.'"
        )
    )
    # a refused action says why and changes nothing
    await ann.answer_dialogs(["/Linked.md"])
    await ann.do(lambda p: p.click("[data-tree=note]"))
    await ann.do(
        lambda p: p.wait_for_function("() => document.querySelector('#lr-status').dataset.level === 'error'")
    )
    assert "already exists" in await ann.do(lambda p: p.inner_text("#lr-status"))


async def test_a_suggestion_a_person_typed_inside_shows_as_stale_with_its_choices(
    setup: Setup, yclients: YClientFactory, ann: EditorPage
) -> None:
    person = await node_client(setup, yclients, "Stale")
    async with assistant(setup) as client:
        uid = await suggest(client, "Stale", "lazy dog", "sleepy cat")
    await ann.open_editor(setup.editor_url("Stale"))
    await ann.do(lambda p: p.wait_for_selector(f".lr-actions[data-suggestion='{uid}']"))
    assert await ann.do(lambda p: p.locator(".lr-stale").count()) == 0
    text = await person.text()
    await person.insert(utf16_len(text[: text.index("sleepy cat") + len("sleepy")]), " old")
    await ann.do(lambda p: p.wait_for_selector(f".lr-actions[data-suggestion='{uid}'] .lr-stale"))
    assert await ann.do(lambda p: p.locator(".lr-ins.lr-is-stale").inner_text()) == "sleepy old cat"
    # its choices stay; the server says why it cannot apply it as proposed
    await ann.do(lambda p: p.click(f"button.lr-accept[data-suggestion='{uid}']"))
    await ann.do(
        lambda p: p.wait_for_function("() => document.querySelector('#lr-status').dataset.level === 'error'")
    )
    status = await ann.do(lambda p: p.inner_text("#lr-status"))
    # Either the accept finds the person's words inside it, or the follower has already marked it stale.
    assert "edited" in status or "already stale" in status, status
    # still shown as stale (the row is stale now); the person typed inside the insertion, so cleaning up
    # takes it as they left it and the text it replaced goes (rule 1 of suggestions.lifecycle.cleaning)
    await ann.do(lambda p: p.click(f"button.lr-clean_up[data-suggestion='{uid}']"))
    expected = text_of("Stale").replace("lazy dog", "sleepy old cat")
    assert await person.wait_text(equals=expected) == expected
    assert await ann.wait_text(equals=expected) == expected
    assert await ann.do(lambda p: p.locator(".lr-actions").count()) == 0


async def test_undo_from_the_editor_brings_the_markup_back_everywhere_and_the_row_is_pending(
    setup: Setup, yclients: YClientFactory, ann: EditorPage, bob: EditorPage
) -> None:
    person = await node_client(setup, yclients, "Undo")
    await ann.open_editor(setup.editor_url("Undo"))
    await bob.open_editor(setup.editor_url("Undo"))
    async with assistant(setup) as client:
        uid = await suggest(client, "Undo", "quick brown", "slow red")
        marked = await person.wait_text(contains="slow red++}")
        await ann.do(lambda p: p.wait_for_selector(f"button.lr-accept[data-suggestion='{uid}']"))
        await ann.do(lambda p: p.click(f"button.lr-accept[data-suggestion='{uid}']"))
        settled = text_of("Undo").replace("quick brown", "slow red")
        assert await person.wait_text(equals=settled) == settled
        await ann.do(lambda p: p.click("#lr-undo"))
        assert await person.wait_text(equals=marked) == marked
        assert await bob.wait_text(equals=marked) == marked
        for page in (ann, bob):
            seen = await page.do(tracked)
            assert seen["ins"] == ["slow red"] and seen["del"] == ["quick brown"], seen
        pending = await call(client, "list_suggestions", {"path": f"{FOLDER}/Undo.md"})
        assert f"{uid} PENDING" in pending, pending


async def test_a_note_typed_inline_reaches_the_row_and_the_assistant_with_either_decision(
    setup: Setup, ann: EditorPage
) -> None:
    async with assistant(setup) as client:
        first = await suggest(client, "Notes", "quick brown", "slow red")
        second = await suggest(client, "Notes", "A third line", "The last line")
    await ann.open_editor(setup.editor_url("Notes"))
    await ann.do(
        lambda p: p.wait_for_function("() => document.querySelectorAll('input.lr-note').length === 2")
    )
    accept_note = "Good catch 🦊, keep <b>this</b>"
    reject_note = "No: the third line stays"

    def tab_into_note_and_type(note: str) -> Any:
        def act(p: Page) -> str:
            # Keyboard only: from the text, Tab reaches the first suggestion's note field.
            p.focus("#lr-editor .cm-content")
            p.keyboard.press("Tab")
            p.keyboard.type(note)
            return str(p.evaluate("document.activeElement.dataset.suggestion"))

        return act

    assert await ann.do(tab_into_note_and_type(accept_note)) == first

    def accept_with_the_keyboard(p: Page) -> None:
        p.keyboard.press("Tab")
        assert p.evaluate("document.activeElement.dataset.decision") == "accept"
        p.keyboard.press("Enter")
        p.wait_for_function("() => document.querySelectorAll('input.lr-note').length === 1")

    await ann.do(accept_with_the_keyboard)
    assert await ann.do(tab_into_note_and_type(reject_note)) == second
    await ann.do(lambda p: p.keyboard.press("Alt+r"))
    await ann.do(
        lambda p: p.wait_for_function("() => document.querySelectorAll('input.lr-note').length === 0")
    )
    notes = setup.relay.manage(
        "shell",
        "-c",
        "import json; from suggestions.models import Suggestion as S; "
        f"print({_MARKER!r} + json.dumps({{s.uid: [s.status, s.note] for s in S.objects.filter("
        f"uid__in={[first, second]!r})}}))",
    )
    rows = json.loads(next(line for line in notes.splitlines() if line.startswith(_MARKER))[len(_MARKER) :])
    assert rows == {first: ["accepted", accept_note], second: ["rejected", reject_note]}, rows
    async with assistant(setup) as client:
        accepted = await call(
            client, "list_suggestions", {"path": f"{FOLDER}/Notes.md", "status": "accepted"}
        )
        rejected = await call(
            client, "list_suggestions", {"path": f"{FOLDER}/Notes.md", "status": "rejected"}
        )
    assert f"Reviewer's note: {accept_note}" in accepted, accepted
    assert f"Reviewer's note: {reject_note}" in rejected, rejected


async def test_the_inbox_lists_what_waits_and_opens_the_editor_at_the_suggestion(
    setup: Setup, ann: EditorPage, vic: EditorPage
) -> None:
    async with assistant(setup) as client:
        uid = await suggest(client, "Inbox", "A third line.", "A third line, changed.")

    def from_the_inbox(page: Page) -> tuple[str, str, int]:
        page.goto(f"{setup.relay.http_url}/admin/")
        count = page.inner_text("#inbox-link")
        with page.expect_navigation():
            page.click("#inbox-link")
        listed = page.inner_text(f"#inbox-{uid}")
        with page.expect_navigation():
            page.click(f"#inbox-{uid} a")
        page.wait_for_function("() => document.querySelector('#lr-status').textContent.startsWith('At ')")
        head = page.evaluate("window.lensEditor.view.state.selection.main.head")
        return count, listed, head

    count, listed, head = await ann.do(from_the_inbox)
    assert re.fullmatch(r"inbox \(\d+\)", count.lower()), count  # the header is upper-cased by CSS
    assert f"by {AUTHOR}" in listed and "changed" in listed
    assert await ann.do(lambda p: p.inner_text("#lr-status")) == f"At {AUTHOR}'s suggestion."
    text = await ann.shown()
    assert head == utf16_index(text, text.index("{++"))  # where the suggestion's mark starts

    # staff who may not review have no inbox in the header, and the page says why
    def without_review(page: Page) -> tuple[int, str]:
        page.goto(f"{setup.relay.http_url}/admin/suggestions/suggestion/inbox/")
        return page.locator("#inbox-link").count(), page.inner_text("#inbox")

    links, said = await vic.do(without_review)
    assert links == 0 and "Can review" in said and uid not in said
