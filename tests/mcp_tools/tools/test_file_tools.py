"""Tools on files that are not notes: glob lists them, read shows text files and describes binaries, grep
searches text files, and write/edit of a text file is a whole-file suggestion applied only on accept."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.docstore import folderdoc
from lensrelay.models import Document
from lensrelay.vault.attachments import attachment_bytes, attachment_write
from lensrelay.vault.documents import document_create
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.models import Suggestion
from tests.mcp_tools.tools.conftest import access

pytestmark = pytest.mark.django_db(transaction=True)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
CONFIG = '{\n  "name": "lens",\n  "version": 1\n}\n'
CANVAS = '{"nodes":[{"id":"a","type":"text","text":"Photosynthesis board"}],"edges":[]}'
HTML = "<h1>About</h1>\n<p>Hello {++not markup++} there</p>\n"


@pytest.fixture(autouse=True)
def blob_dir(settings: Any, tmp_path: Any) -> Any:
    settings.STORAGES = {
        **settings.STORAGES,
        "lensrelay_files": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "blobs"), "allow_overwrite": True},
        },
    }
    return tmp_path / "blobs"


@pytest.fixture
async def vault(store: Any, make_folder: Any) -> dict[str, Any]:
    lens = await sync_to_async(make_folder)("Lens")
    other = await sync_to_async(make_folder)("Other")
    return {
        "lens": lens,
        "other": other,
        "png": await attachment_write(store=store, folder=lens, path="/Assets/diagram.png", data=PNG),
        "json": await attachment_write(
            store=store, folder=lens, path="/Data/config.json", data=CONFIG.encode()
        ),
        "canvas": await attachment_write(
            store=store, folder=lens, path="/Boards/plan.canvas", data=CANVAS.encode()
        ),
        "html": await attachment_write(
            store=store, folder=lens, path="/Pages/about.html", data=HTML.encode()
        ),
        "figures": await document_create(
            store=store,
            folder=lens,
            path="/Figures.md",
            text="See ![[diagram.png|300]] and [[plan.canvas]].\n",
        ),
        "secret": await attachment_write(
            store=store, folder=other, path="/secret.json", data=b'{"secret": "Photosynthesis board"}'
        ),
    }


async def content_of(doc_id: str) -> bytes:
    row = await Document.objects.aget(doc_id=doc_id)
    return await sync_to_async(attachment_bytes)(document=row)


async def only_row() -> Suggestion:
    rows = await sync_to_async(lambda: list(Suggestion.objects.all()))()
    assert len(rows) == 1
    return rows[0]


async def test_glob_lists_every_file_not_only_notes(vault: Any, call: Any) -> None:
    text, error = await call("glob", {"pattern": "Lens/**"})
    assert not error
    assert set(text.splitlines()) == {
        "Lens/Assets/diagram.png",
        "Lens/Data/config.json",
        "Lens/Boards/plan.canvas",
        "Lens/Pages/about.html",
        "Lens/Figures.md",
    }
    assert (await call("glob", {"pattern": "**/*.{png,json}"}))[0].splitlines() == sorted(
        ["Lens/Assets/diagram.png", "Lens/Data/config.json", "Other/secret.json"],
        key=["Other/secret.json", "Lens/Data/config.json", "Lens/Assets/diagram.png"].index,
    )


async def test_read_describes_a_binary_with_the_notes_linking_to_it(vault: Any, call: Any) -> None:
    text, error = await call("read", {"file_path": "Lens/Assets/diagram.png"})
    assert not error
    assert text == (
        "Lens/Assets/diagram.png is a binary file; its content is not shown.\n"
        "Type: image (image/png)\n"
        f"Size: {len(PNG):,} bytes\n"
        f"SHA-256: {hashlib.sha256(PNG).hexdigest()}\n"
        "Linked from:\n"
        "- Lens/Figures.md"
    )
    links, _ = await call("get_links", {"file_path": "Lens/Figures.md"})
    assert "- Lens/Assets/diagram.png" in links and "- Lens/Boards/plan.canvas" in links
    assert "Unresolved" not in links
    backlinks, _ = await call("get_links", {"file_path": "Lens/Boards/plan.canvas"})
    assert backlinks.startswith("Backlinks (documents linking to this):\n- Lens/Figures.md")


async def test_read_numbers_the_lines_of_text_files(vault: Any, call: Any) -> None:
    text, error = await call("read", {"file_path": "Lens/Data/config.json"})
    assert (text, error) == ('     1\t{\n     2\t  "name": "lens",\n     3\t  "version": 1\n     4\t}', False)
    text, _ = await call("read", {"file_path": "Lens/Pages/about.html", "offset": 2})
    assert text == "     2\t<p>Hello {++not markup++} there</p>"  # raw HTML: braces are not markup


async def test_grep_searches_text_files_and_skips_binaries(vault: Any, call: Any) -> None:
    text, _ = await call("grep", {"pattern": "Photosynthesis board", "output_mode": "content"})
    assert text.splitlines() == [
        f"Lens/Boards/plan.canvas:1:{CANVAS}",
        'Other/secret.json:1:{"secret": "Photosynthesis board"}',
    ]
    assert (await call("grep", {"pattern": "version", "type": "json"}))[0] == "Lens/Data/config.json"
    assert (await call("grep", {"pattern": "Photo", "type": "canvas"}))[0] == "Lens/Boards/plan.canvas"
    assert (await call("grep", {"pattern": "Photo", "type": "md"}))[0] == "No matches found."
    assert (await call("grep", {"pattern": "name", "glob": "*.json", "path": "Lens"}))[
        0
    ] == "Lens/Data/config.json"
    assert (await call("grep", {"pattern": "PNG"}))[0] == "No matches found."  # binaries are skipped
    text, error = await call("grep", {"pattern": "x", "type": "nonsense"})
    assert error and text.startswith("Error: unrecognized file type: nonsense")


async def test_edit_of_json_is_a_suggestion_applied_only_on_accept(store: Any, vault: Any, call: Any) -> None:
    path = "Lens/Data/config.json"
    await call("read", {"file_path": path})
    text, error = await call(
        "edit", {"file_path": path, "old_string": '"version": 1', "new_string": '"version": 2'}
    )
    assert not error, text
    row = await only_row()
    assert text.startswith(
        f"Edited {path}: replaced 12 characters as a suggested new version for human review (no CriticMarkup"
    )
    assert (row.kind, row.status, row.old_text, row.base_hash) == (
        "replace",
        "pending",
        CONFIG,
        hashlib.sha256(CONFIG.encode()).hexdigest(),
    )
    assert row.new_text == CONFIG.replace('"version": 1', '"version": 2') and row.markup == ""
    assert await content_of(vault["json"].doc_id) == CONFIG.encode()  # unchanged until accepted
    # read shows the file as if the suggestion were accepted, and says it is pending
    shown, _ = await call("read", {"file_path": path})
    assert (
        '     3\t  "version": 2' in shown and f"[Pending suggestions]\n{row.uid}: replaces the file" in shown
    )

    decision = await suggestion_decide(store=store, suggestion=row, user=None, accept=True)
    assert decision.ok, decision.reason
    assert await content_of(vault["json"].doc_id) == row.new_text.encode()
    room = await store.get(vault["lens"].doc_id)
    meta = folderdoc.entry_meta(room.doc, path="/Data/config.json")
    assert meta["hash"] == hashlib.sha256(row.new_text.encode()).hexdigest() and meta["type"] == "file"
    shown, _ = await call("read", {"file_path": path})
    assert shown == '     1\t{\n     2\t  "name": "lens",\n     3\t  "version": 2\n     4\t}'
    again = await suggestion_decide(store=store, suggestion=row, user=None, accept=False)
    assert not again.ok and "already accepted" in again.reason


async def test_reject_leaves_the_file_and_a_race_has_one_winner(store: Any, vault: Any, call: Any) -> None:
    path = "Lens/Boards/plan.canvas"
    await call("read", {"file_path": path})
    await call("edit", {"file_path": path, "old_string": "board", "new_string": "map"})
    row = await only_row()
    decision = await suggestion_decide(store=store, suggestion=row, user=None, accept=False)
    assert decision.ok and await content_of(vault["canvas"].doc_id) == CANVAS.encode()
    await call("edit", {"file_path": path, "old_string": "board", "new_string": "chart"})
    second = await sync_to_async(Suggestion.objects.get)(status="pending")
    decisions = await asyncio.gather(
        *(
            suggestion_decide(store=store, suggestion=second, user=None, accept=accept)
            for accept in (True, False)
        )
    )
    assert sorted(d.ok for d in decisions) == [False, True]
    winner = next(d for d in decisions if d.ok)
    expected = CANVAS.replace("board", "chart") if winner.suggestion.status == "accepted" else CANVAS
    assert await content_of(vault["canvas"].doc_id) == expected.encode()


async def test_a_second_edit_builds_on_the_pending_one_and_supersedes_it(
    store: Any, vault: Any, call: Any
) -> None:
    path = "Lens/Data/config.json"
    await call("read", {"file_path": path})
    await call("edit", {"file_path": path, "old_string": '"lens"', "new_string": '"Lens"'})
    text, _ = await call(
        "edit", {"file_path": path, "old_string": '"version": 1', "new_string": '"version": 3'}
    )
    assert "supersedes 1 earlier pending suggestion" in text
    rows = await sync_to_async(lambda: list(Suggestion.objects.order_by("created")))()
    assert [r.status for r in rows] == ["superseded", "pending"]
    assert json.loads(rows[1].new_text) == {"name": "Lens", "version": 3} and rows[1].old_text == CONFIG
    assert (await suggestion_decide(store=store, suggestion=rows[1], user=None, accept=True)).ok
    assert json.loads(await content_of(vault["json"].doc_id)) == {"name": "Lens", "version": 3}


async def test_html_is_raw_text_replaced_on_accept(store: Any, vault: Any, call: Any) -> None:
    path = "Lens/Pages/about.html"
    await call("read", {"file_path": path})
    text, error = await call("write", {"file_path": path, "content": "<h1>About us</h1>\n"})
    assert not error, text
    row = await only_row()
    assert (await content_of(vault["html"].doc_id)) == HTML.encode()
    assert (await suggestion_decide(store=store, suggestion=row, user=None, accept=True)).ok
    assert (await content_of(vault["html"].doc_id)) == b"<h1>About us</h1>\n"


async def test_a_file_changed_after_the_suggestion_makes_it_stale(store: Any, vault: Any, call: Any) -> None:
    path = "Lens/Data/config.json"
    await call("read", {"file_path": path})
    await call("edit", {"file_path": path, "old_string": '"version": 1', "new_string": '"version": 2'})
    row = await only_row()
    changed = b'{"name": "changed by a person"}'
    await attachment_write(store=store, folder=vault["lens"], path="/Data/config.json", data=changed)
    decision = await suggestion_decide(store=store, suggestion=row, user=None, accept=True)
    assert (decision.ok, decision.reason, decision.suggestion.status) == (
        False,
        "the file changed since the suggestion was made",
        "stale",
    )
    assert await content_of(vault["json"].doc_id) == changed  # the person's change is kept


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        (
            "edit",
            {
                "file_path": "Lens/Data/config.json",
                "old_string": '"version": 1',
                "new_string": '"version": 1,',
            },
            "Error: the change would make Lens/Data/config.json invalid JSON (",
        ),
        (
            "write",
            {"file_path": "Lens/Boards/plan.canvas", "content": '{"nodes": ['},
            "Error: the change would make Lens/Boards/plan.canvas invalid JSON (",
        ),
        (
            "edit",
            {"file_path": "Lens/Assets/diagram.png", "old_string": "PNG", "new_string": "JPG"},
            "Error: Lens/Assets/diagram.png is a binary file (image); it cannot be edited as text.",
        ),
        (
            "edit",
            {"file_path": "Lens/Data/config.json", "old_string": "nothing like this", "new_string": "x"},
            "Error: String to replace not found in Lens/Data/config.json.",
        ),
        (
            "write",
            {"file_path": "Lens/Data/new.png", "content": "{}"},
            "Error: Lens/Data/new.png does not exist, and write creates only markdown notes, HTML, JSON and",
        ),
    ],
)
async def test_refused_changes_record_nothing(
    store: Any, vault: Any, call: Any, tool: str, arguments: dict[str, Any], message: str
) -> None:
    await call("read", {"file_path": "Lens/Boards/plan.canvas"})
    await call("read", {"file_path": "Lens/Data/config.json"})
    text, error = await call(tool, arguments)
    assert error and text.startswith(message), text
    assert await sync_to_async(Suggestion.objects.count)() == 0
    assert await content_of(vault["json"].doc_id) == CONFIG.encode()
    assert await content_of(vault["canvas"].doc_id) == CANVAS.encode()
    assert not await Document.objects.filter(path__in=["/Data/new.png", "/Data/new.png.md"]).aexists()


async def test_a_folder_scoped_token_sees_no_other_folders_files(vault: Any, call: Any) -> None:
    lens_only = access(role="suggest", folder_ids=frozenset({vault["lens"].pk}))
    glob, _ = await call("glob", {"pattern": "**/*.json"}, who=lens_only)
    assert glob == "Lens/Data/config.json"
    for name, arguments in [
        ("read", {"file_path": "Other/secret.json"}),
        ("get_links", {"file_path": "Other/secret.json"}),
        ("edit", {"file_path": "Other/secret.json", "old_string": "secret", "new_string": "x"}),
        ("write", {"file_path": "Other/secret.json", "content": "{}"}),
    ]:
        text, error = await call(name, arguments, who=lens_only)
        assert error and "secret" not in text.replace("Other/secret.json", ""), (name, text)
    grep, _ = await call("grep", {"pattern": "Photosynthesis board"}, who=lens_only)
    assert grep == "Lens/Boards/plan.canvas"
    text, error = await call("grep", {"pattern": "secret", "path": "Other"}, who=lens_only)
    assert error and text == "Error: Folder not found: Other"
    assert await sync_to_async(Suggestion.objects.count)() == 0


async def test_multi_edit_of_a_json_file_dry_run_and_for_real(vault: Any, call: Any) -> None:
    path = "Lens/Data/config.json"
    await call("read", {"file_path": path})
    edits = [
        {"old_string": '"lens"', "new_string": '"Lens"'},
        {"old_string": '"version": 1', "new_string": '"version": 4'},
    ]
    text, error = await call("multi_edit", {"file_path": path, "edits": edits, "dry_run": True})
    assert not error and text.startswith(f"Dry run of {path}: 2 edit(s) would replace")
    assert '-  "version": 1\n+  "name": "Lens",\n+  "version": 4' in text.split("\nDiff:\n")[1]
    assert await sync_to_async(Suggestion.objects.count)() == 0
    text, error = await call("multi_edit", {"file_path": path, "edits": edits, "include_content": True})
    row = await only_row()
    assert (
        not error
        and text.startswith(f"Edited {path}: replaced")
        and f"(suggestion {row.uid}, pending)" in text
    )
    assert row.kind == "replace" and "- 2 of 2: '\"version\": 1' matched, 1 occurrence replaced" in text
    final = text.split("Resulting content (as if accepted):\n")[1]
    assert json.loads(final) == {"name": "Lens", "version": 4} == json.loads(row.new_text)
    assert await content_of(vault["json"].doc_id) == CONFIG.encode()
