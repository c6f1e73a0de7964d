"""The editor's tools in Chromium (issue 32): a pasted image is added beside the note, embedded as
`![[name.png]]` (which an npm y-websocket client sees) and shown under its line, while a reader cannot paste
and a file over the limit changes nothing; Ctrl-F finds and replaces, as a suggestion in suggesting mode;
an assistant's cursor label does not cover its suggestion's author label; every page shows each person and
assistant in one colour, no two alike, whatever order they came in; the admin's dark theme makes the editor
dark."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page

from lensrelay.sync.colours import preferred_index

from .browser import PASSWORD, BrowserThread, call, signed_in_context
from .conftest import YClientFactory
from .notify_clients import Heard, sdk_client
from .relay import Relay
from .test_suggesting_browser import _open_editor

pytestmark = pytest.mark.e2e

FOLDER = "Tools"
EDITOR, READER = "tess", "rudy"


def _alike(name: str, count: int) -> list[str]:
    """Names that prefer the colour `name` prefers: the colours must be handed out, not hashed."""
    wanted = preferred_index(name)
    return [n for n in (f"viewer{i}" for i in range(1000)) if preferred_index(n) == wanted][:count]


VIEWERS = _alike(EDITOR, 2)
NOTE = "# Tools\n\nThe cat sat. The cat ran.\n"
_MARKER = "E2E-TOOLS "
_SETUP = """
import json
from django.contrib.auth.models import Group, Permission, User
from django.core.management import call_command
call_command("import_vault", {desk!r}, folder={folder!r})
editor = User.objects.create_user({editor!r}, password={password!r}, is_staff=True)
editor.groups.add(Group.objects.get(name="Editors"))
editor.user_permissions.add(Permission.objects.get(codename="view_document"))
reader = User.objects.create_user({reader!r}, password={password!r}, is_staff=True)
reader.user_permissions.add(*Permission.objects.filter(codename__in=["view_suggestion", "view_document"]))
for name in {viewers!r}:
    viewer = User.objects.create_user(name, password={password!r}, is_staff=True)
    viewer.user_permissions.add(*Permission.objects.filter(codename__in=["view_suggestion", "view_document"]))
print({marker!r} + json.dumps("ok"))
"""
# The smallest PNG: one red pixel.
PNG_BASE64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


@pytest.fixture(scope="module")
def doc_ids(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    desk = tmp_path_factory.mktemp("tools")
    for name in ("Paste", "Find", "Assist", "Dark", "Hues"):
        (desk / f"{name}.md").write_text(NOTE, encoding="utf-8")
    script = _SETUP.format(
        desk=str(desk),
        folder=FOLDER,
        editor=EDITOR,
        reader=READER,
        viewers=VIEWERS,
        password=PASSWORD,
        marker=_MARKER,
    )
    assert any(line.startswith(_MARKER) for line in relay.manage("shell", "-c", script).splitlines())
    return asyncio.run(relay.document_paths(relay.tokens["edit"], folder=FOLDER))


@pytest.fixture(scope="module")
def contexts(
    relay: Relay, browser_thread: BrowserThread, doc_ids: dict[str, str]
) -> Iterator[dict[str, Any]]:
    people = (EDITOR, READER, *VIEWERS)
    made = {name: signed_in_context(browser_thread, relay.http_url, name) for name in people}
    yield made
    for context in made.values():
        browser_thread.call(context.close)


def _edit_url(relay: Relay, doc_ids: dict[str, str], name: str) -> str:
    return f"{relay.http_url}/admin/suggestions/suggestion/document/{doc_ids[f'{FOLDER}/{name}.md']}/edit/"


def _until(page: Page, check: Callable[[], Any], what: str) -> Any:
    # (wait_for_function evaluates a string: the admin's CSP refuses that)
    for _ in range(200):
        found = check()
        if found:
            return found
        page.wait_for_timeout(50)
    raise AssertionError(f"never: {what}")


def _text(page: Page) -> str:
    return str(page.evaluate("() => window.lensEditor.view.state.doc.toString()"))


def _status(page: Page) -> str:
    return str(page.inner_text("#lr-status"))


def _paste(page: Page, *, name: str, base64: str = "", size: int = 0, after: str = "sat.") -> None:
    """A ClipboardEvent carrying one file (the PNG, or `size` zero bytes), pasted after `after`."""
    page.evaluate(
        """([name, base64, size, after]) => {
            const view = window.lensEditor.view;
            const at = view.state.doc.toString().indexOf(after) + after.length;
            view.focus();
            view.dispatch({selection: {anchor: at}});
            const bytes = base64
                ? Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))
                : new Uint8Array(size);
            const data = new DataTransfer();
            data.items.add(new File([bytes], name, {type: "image/png"}));
            const event = new ClipboardEvent("paste", {clipboardData: data, bubbles: true, cancelable: true});
            view.contentDOM.dispatchEvent(event);
        }""",
        [name, base64, size, after],
    )


async def test_a_pasted_image_is_added_embedded_and_shown(
    relay: Relay,
    doc_ids: dict[str, str],
    browser_thread: BrowserThread,
    contexts: dict[str, BrowserContext],
    yclients: YClientFactory,
) -> None:
    doc_id = doc_ids[f"{FOLDER}/Paste.md"]
    node = await yclients(relay.doc_url(doc_id), doc_id, params={"token": relay.tokens["edit"]}, label="node")
    await node.wait_text(equals=NOTE)
    url = _edit_url(relay, doc_ids, "Paste")

    def paste() -> dict[str, Any]:
        page = contexts[EDITOR].new_page()
        _open_editor(page, url)
        _paste(page, name="image.png", base64=PNG_BASE64)
        text = _until(page, lambda: "![[" in _text(page) and _text(page), "the embed in the text")
        # The tree lists the new file; then the image shows under its line, loaded from the file route.
        image = _until(
            page,
            lambda: page.evaluate(
                "() => { const i = document.querySelector('#lr-editor .lr-embed img');"
                " return i && i.complete && i.naturalWidth ? {src: i.src, w: i.naturalWidth} : null; }"
            ),
            "the image shown",
        )
        status = _status(page)
        page.close()
        return {"text": text, "image": image, "status": status}

    seen = await browser_thread.run(paste)
    found = re.search(r"The cat sat\.!\[\[(Pasted image \d{14}\.png)\]\]", seen["text"])
    assert found, seen
    name = found.group(1)
    assert seen["image"]["w"] == 1 and "/file/" in seen["image"]["src"], seen
    assert f"Added {FOLDER}/{name}." in seen["status"]
    synced = await node.wait_text(contains=f"![[{name}]]")
    assert synced.startswith(f"# Tools\n\nThe cat sat.![[{name}]] The cat ran.")
    paths = await relay.document_paths(relay.tokens["edit"], folder=FOLDER)
    assert f"{FOLDER}/{name}" in paths

    # A reader cannot paste a file: told why, nothing sent, nothing changed.
    def read_only() -> tuple[str, str]:
        page = contexts[READER].new_page()
        _open_editor(page, url)
        before = _text(page)
        _paste(page, name="nope.png", base64=PNG_BASE64)
        status = _until(page, lambda: _status(page), "a message")
        after = _text(page)
        page.close()
        assert before == after
        return status, after

    status, after = await browser_thread.run(read_only)
    assert "Can edit documents live" in status and "nope" not in after
    # Over the limit: a clear message, nothing added.
    limit = await browser_thread.run(lambda: _limit(contexts[EDITOR], url))

    def too_big() -> tuple[str, str, str]:
        page = contexts[EDITOR].new_page()
        _open_editor(page, url)
        before = _text(page)
        _paste(page, name="huge.png", size=limit + 1)
        status = _until(page, lambda: "limit" in _status(page) and _status(page), "the limit said")
        after = _text(page)
        page.close()
        return before, after, status

    before, after, status = await browser_thread.run(too_big)
    assert before == after and "huge.png is larger than the limit" in status and "nothing was added" in status
    paths = await relay.document_paths(relay.tokens["edit"], folder=FOLDER)
    assert not any("huge" in path for path in paths)


def _limit(context: BrowserContext, url: str) -> int:
    page = context.new_page()
    page.goto(url)
    value = int(
        page.evaluate(
            "() => JSON.parse(document.getElementById('lr-editor-config').textContent).maxFileBytes"
        )
    )
    page.close()
    return value


async def test_ctrl_f_finds_and_replaces_and_in_suggesting_mode_suggests(
    relay: Relay, doc_ids: dict[str, str], browser_thread: BrowserThread, contexts: dict[str, BrowserContext]
) -> None:
    url = _edit_url(relay, doc_ids, "Find")

    def scenario() -> dict[str, Any]:
        page = contexts[EDITOR].new_page()
        _open_editor(page, url)
        page.click("#lr-editor .cm-content")
        page.keyboard.press("Control+f")
        page.wait_for_selector("#lr-editor .cm-panel.cm-search input[name=search]:focus")
        seen: dict[str, Any] = {
            "panel background": page.evaluate(
                "() => getComputedStyle(document.querySelector('#lr-editor .cm-panels')).backgroundColor"
            )
        }
        page.fill("#lr-editor .cm-search input[name=search]", "cat")
        page.fill("#lr-editor .cm-search input[name=replace]", "dog")
        page.evaluate("() => window.lensEditor.view.dispatch({selection: {anchor: 0}})")
        page.click("#lr-editor .cm-search button[name=next]")  # selects the first match
        page.click("#lr-editor .cm-search button[name=replace]")  # replaces it
        seen["replaced one"] = _until(page, lambda: "dog" in _text(page) and _text(page), "one replaced")
        # Suggesting: a replacement, and Replace all, become suggestions under the person's name.
        page.check("#lr-suggesting")
        page.fill("#lr-editor .cm-search input[name=search]", "The")
        page.fill("#lr-editor .cm-search input[name=replace]", "A")
        page.click("#lr-editor .cm-search button[name=replaceAll]")
        seen["suggested"] = _until(page, lambda: "{++" in _text(page) and _text(page), "suggestions")
        page.close()
        return seen

    seen = await browser_thread.run(scenario)
    assert seen["replaced one"] == "# Tools\n\nThe dog sat. The cat ran.\n", seen
    suggested = seen["suggested"]
    assert (
        len(
            re.findall(
                r'\{--\{"author":"tess"[^}]*\}@@The--\}\{\+\+\{"author":"tess"[^}]*\}@@A\+\+\}', suggested
            )
        )
        == 2
    )
    plain = re.sub(r"\{--\{[^}]*\}@@The--\}\{\+\+\{[^}]*\}@@A\+\+\}", "A", suggested)
    assert plain == "# Tools\n\nA dog sat. A cat ran.\n", suggested
    assert seen["panel background"] not in ("", "rgba(0, 0, 0, 0)")


async def test_an_assistants_cursor_label_does_not_cover_its_author_label(
    relay: Relay, doc_ids: dict[str, str], browser_thread: BrowserThread, contexts: dict[str, BrowserContext]
) -> None:
    url = _edit_url(relay, doc_ids, "Assist")
    page = await browser_thread.run(contexts[EDITOR].new_page)
    await browser_thread.run(lambda: _open_editor(page, url))
    async with sdk_client(relay.http_url, relay.tokens["suggest"], Heard()) as assistant:
        path = f"{FOLDER}/Assist.md"
        await call(assistant, "read", {"file_path": path})
        await call(assistant, "edit", {"file_path": path, "old_string": "cat ran", "new_string": "dog ran"})

        def boxes() -> dict[str, Any]:
            return _until(
                page,
                lambda: page.evaluate(MEASURE),
                "the assistant's cursor and its author label",
            )

        seen = await browser_thread.run(boxes)
        # The browser writes a caret's style attribute back in its own form (rgb()) once anything touches
        # the element's style: the label keeps off the author label then too.
        touched = await browser_thread.run(
            lambda: (
                page.evaluate(
                    "() => { for (const c of document.querySelectorAll('#lr-editor .cm-ySelectionCaret'))"
                    " c.style.setProperty('--touched', '1'); }"
                )
                or page.evaluate(MEASURE)
            )
        )

        # The assistant's presence ends a few seconds after its write; its caret may stay a moment longer,
        # and its label must still keep off the author label.
        def after_presence() -> Any:
            _until(
                page,
                lambda: page.evaluate(
                    "() => ![...window.lensEditor.provider.awareness.getStates().values()]"
                    ".some((s) => s.assistant)"
                ),
                "the assistant's presence gone",
            )
            return page.evaluate(MEASURE)

        later = await browser_thread.run(after_presence)
    await browser_thread.run(page.close)
    assert seen["name"] == seen["authorName"], seen
    assert touched is not None and "rgb(" in str(touched["style"]), touched
    for measured in (seen, touched, later):
        if measured is None:
            continue  # the caret went with the presence
        label, author = measured["label"], measured["author"]
        apart = (
            label["right"] <= author["left"]
            or author["right"] <= label["left"]
            or label["bottom"] <= author["top"]
            or author["bottom"] <= label["top"]
        )
        assert apart, measured
    # The assistant is not in the server's one assistant colour but in one of the page's own.
    assert seen["colour"] not in ("", "rgb(126, 87, 194)"), seen


CHIPS = """() => Object.fromEntries([...document.querySelectorAll('#lr-presence .lr-person')]
    .map((chip) => [chip.textContent.replace(' (you)', ''), chip.style.borderColor]))"""


async def test_every_page_shows_each_person_and_assistant_in_one_colour_none_alike(
    relay: Relay, doc_ids: dict[str, str], browser_thread: BrowserThread, contexts: dict[str, BrowserContext]
) -> None:
    url = _edit_url(relay, doc_ids, "Hues")
    # The editor first, then two who prefer its colour, then the reader: each page has seen the others come
    # in a different order.
    pages: dict[str, Page] = {}
    for name in (EDITOR, *VIEWERS, READER):
        pages[name] = await browser_thread.run(contexts[name].new_page)
        await browser_thread.run(lambda page=pages[name]: _open_editor(page, url))
    async with sdk_client(relay.http_url, relay.tokens["suggest"], Heard()) as assistant:
        path = f"{FOLDER}/Hues.md"
        await call(assistant, "read", {"file_path": path})
        await call(
            assistant, "edit", {"file_path": path, "old_string": "cat sat", "new_string": "cat napped"}
        )

        def everyone_agrees() -> list[dict[str, str]]:
            def seen() -> list[dict[str, str]] | None:
                maps = [page.evaluate(CHIPS) for page in pages.values()]
                complete = all(len(m) == len(pages) + 1 and "" not in m.values() for m in maps)
                return maps if complete and all(m == maps[0] for m in maps) else None

            return _until(pages[EDITOR], seen, "every page showing the same colours")  # type: ignore[no-any-return]

        maps = await browser_thread.run(everyone_agrees)
    for page in pages.values():
        await browser_thread.run(page.close)
    colours = maps[0]
    assert set(pages) < set(colours) and len(colours) == len(pages) + 1, colours  # and the assistant
    assert len(set(colours.values())) == len(colours), colours  # none alike


MEASURE = """() => {
    const label = document.querySelector('#lr-editor .cm-ySelectionInfo');
    const author = document.querySelector('#lr-editor .lr-author');
    if (!label || !author) return null;
    const box = (e) => { const r = e.getBoundingClientRect();
        return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
    const caret = label.parentElement;
    return {label: box(label), author: box(author), name: label.textContent,
            authorName: author.textContent, colour: caret.style.backgroundColor,
            style: caret.getAttribute('style')};
}"""


def _luminance(css: str) -> float:
    red, green, blue = (int(v) for v in re.findall(r"\d+", css)[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


async def test_the_editor_follows_the_admins_dark_theme(
    relay: Relay, doc_ids: dict[str, str], browser_thread: BrowserThread, contexts: dict[str, BrowserContext]
) -> None:
    url = _edit_url(relay, doc_ids, "Dark")
    colours = (
        "() => { const e = getComputedStyle(document.querySelector('#lr-editor .cm-editor'));"
        " const g = getComputedStyle(document.querySelector('#lr-editor .cm-gutters'));"
        " return {bg: e.backgroundColor, fg: e.color, gutter: g.backgroundColor,"
        " theme: document.documentElement.dataset.theme}; }"
    )

    def look(theme: str, scheme: str) -> dict[str, str]:
        page = contexts[EDITOR].new_page()
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        page.goto(f"{relay.http_url}/admin/")
        page.evaluate("(theme) => localStorage.setItem('theme', theme)", theme)
        _open_editor(page, url)
        seen: dict[str, str] = page.evaluate(colours)
        page.evaluate("() => localStorage.removeItem('theme')")
        page.close()
        return seen

    dark = await browser_thread.run(lambda: look("dark", "light"))
    auto_dark = await browser_thread.run(lambda: look("auto", "dark"))
    light = await browser_thread.run(lambda: look("light", "dark"))
    auto_light = await browser_thread.run(lambda: look("auto", "light"))
    for seen in (dark, auto_dark):
        assert _luminance(seen["bg"]) < 0.2 and _luminance(seen["fg"]) > 0.7, seen
        assert _luminance(seen["gutter"]) < 0.25, seen
    for seen in (light, auto_light):
        assert _luminance(seen["bg"]) > 0.9 and _luminance(seen["fg"]) < 0.3, seen
    assert dark["theme"] == "dark" and light["theme"] == "light"
