"""`get_url`: a link into the browser editor for a document the caller can see, at a line when asked; paths
outside the caller's folders answer exactly like missing ones."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.urls import reverse

from lensrelay.vault.attachments import attachment_write
from lensrelay.vault.documents import document_create
from mcp_tools.kb import open_kb
from mcp_tools.registry import REGISTRY, ToolContext, ToolError, ToolResult
from tests.mcp_tools.tools.conftest import access

pytestmark = pytest.mark.django_db(transaction=True)

NOTE = "# Plan\n\nFirst {--old--}{++new\nadded line++} text.\nSecond line.\nThird line.\n"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


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
        "plan": await document_create(store=store, folder=lens, path="/Notes/Plan.md", text=NOTE),
        "empty": await document_create(store=store, folder=lens, path="/Empty.md", text=""),
        "json": await attachment_write(
            store=store, folder=lens, path="/Data/config.json", data=b'{\n  "a": 1\n}\n'
        ),
        "png": await attachment_write(store=store, folder=lens, path="/diagram.png", data=PNG),
        "secret": await document_create(store=store, folder=other, path="/Secret.md", text="secret\n"),
    }


def lens_only(vault: dict[str, Any]) -> Any:
    return access(role="view", folder_ids=frozenset({vault["lens"].pk}))


def editor(doc: Any) -> str:
    return reverse("admin:suggestions_suggestion_editor", args=[doc.doc_id])


async def test_a_link_to_the_editor_from_the_configured_address(vault: Any, call: Any, settings: Any) -> None:
    settings.LENSRELAY_PUBLIC_URL = "https://relay.example.org/"
    text, error = await call("get_url", {"file_path": "Lens/Notes/Plan.md"})
    assert not error, text
    url = text.splitlines()[0]
    assert url == f"https://relay.example.org{editor(vault['plan'])}"
    assert url.endswith(f"/admin/suggestions/suggestion/document/{vault['plan'].doc_id}/edit/")
    assert "Lens/Notes/Plan.md" in text
    data = call.answers[-1].structured
    assert data == {"url": url, "file_path": "Lens/Notes/Plan.md", "line": None, "absolute": True}


async def test_the_request_address_wins_when_the_context_carries_it(vault: Any, settings: Any) -> None:
    import mcp_tools.tools  # noqa: F401

    settings.LENSRELAY_PUBLIC_URL = "https://configured.example.org"
    tool = REGISTRY["get_url"]
    ctx = ToolContext(access=access(), session_key="s", public_base="http://testserver:8000/")
    answer = await tool.handler(ctx, tool.parse({"file_path": "Lens/Notes/Plan"}))
    assert isinstance(answer, ToolResult)
    assert answer.text.splitlines()[0] == f"http://testserver:8000{editor(vault['plan'])}"
    # Anything but an http(s) address is ignored.
    ctx.public_base = "javascript:alert(1)//"
    answer = await tool.handler(ctx, tool.parse({"file_path": "Lens/Notes/Plan"}))
    assert isinstance(answer, ToolResult)
    assert answer.text.startswith("https://configured.example.org/admin/")


async def test_without_an_address_the_link_is_a_path_and_says_so(
    vault: Any, call: Any, settings: Any
) -> None:
    settings.LENSRELAY_PUBLIC_URL = ""
    text, error = await call("get_url", {"file_path": "Lens/Notes/Plan.md"})
    assert not error
    assert text.splitlines()[0] == editor(vault["plan"])
    assert "LENSRELAY_PUBLIC_URL" in text
    assert call.answers[-1].structured["absolute"] is False


async def test_a_line_as_read_numbers_it_points_at_the_editors_line(
    vault: Any, call: Any, settings: Any
) -> None:
    settings.LENSRELAY_PUBLIC_URL = "https://relay.example.org"
    read, _ = await call("read", {"file_path": "Lens/Notes/Plan.md"})
    numbered = dict(line.split("\t", 1) for line in read.split("\n\n[Pending")[0].splitlines())
    assert numbered["     5"] == "Second line."
    text, error = await call("get_url", {"file_path": "Lens/Notes/Plan.md", "line": 5})
    assert not error, text
    # The editor shows the stored text, markup included: "Second line." is its line 5 too here...
    raw_lines = NOTE.split("\n")
    url = text.splitlines()[0]
    assert raw_lines[int(url.rsplit("#L", 1)[1]) - 1] == "Second line."
    # ... and the first line of the note is the first everywhere.
    text, _ = await call("get_url", {"file_path": "Lens/Notes/Plan.md", "line": 1})
    assert text.splitlines()[0].endswith("/edit/#L1")
    assert call.answers[-1].structured["line"] == 1


async def test_lines_shift_when_a_pending_deletion_spans_lines(
    vault: Any, call: Any, store: Any, settings: Any
) -> None:
    settings.LENSRELAY_PUBLIC_URL = "https://relay.example.org"
    await document_create(
        store=store,
        folder=vault["lens"],
        path="/Shift.md",
        text="one\n{--gone\ngone too\n--}two\nthree\n",
    )
    read, _ = await call("read", {"file_path": "Lens/Shift.md"})
    assert "     2\ttwo" in read
    text, error = await call("get_url", {"file_path": "Lens/Shift.md", "line": 2})
    assert not error
    assert text.splitlines()[0].endswith("#L4")
    assert "line 4 of its text" in text
    text, _ = await call("get_url", {"file_path": "Lens/Shift.md", "line": 3})
    assert text.splitlines()[0].endswith("#L5")


async def test_a_line_past_the_end_names_the_line_count(vault: Any, call: Any) -> None:
    text, error = await call("get_url", {"file_path": "Lens/Notes/Plan.md", "line": 99})
    assert error
    assert text.startswith("Error: line 99 is past the end of Lens/Notes/Plan.md")
    assert "has 6 lines" in text and "1 to 6" in text
    text, error = await call("get_url", {"file_path": "Lens/Empty.md", "line": 1})
    assert error and "is empty" in text


@pytest.mark.parametrize("line", [0, -3, "two", 1.5])
async def test_a_line_must_be_a_positive_whole_number(vault: Any, call: Any, line: Any) -> None:
    text, error = await call("get_url", {"file_path": "Lens/Notes/Plan.md", "line": line})
    assert error and "'line'" in text


async def test_files_link_too_text_files_by_line_binaries_without(vault: Any, call: Any) -> None:
    text, error = await call("get_url", {"file_path": "Lens/Data/config.json", "line": 3})
    assert not error, text
    assert text.splitlines()[0].endswith(f"{editor(vault['json'])}#L3")
    text, error = await call("get_url", {"file_path": "Lens/Data/config.json", "line": 4})
    assert error and "has 3 lines" in text
    text, error = await call("get_url", {"file_path": "Lens/diagram.png"})
    assert not error and editor(vault["png"]) in text
    text, error = await call("get_url", {"file_path": "Lens/diagram.png", "line": 1})
    assert error and "binary" in text and "without line" in text


async def test_another_folder_answers_like_a_missing_note(vault: Any, call: Any) -> None:
    who = lens_only(vault)
    hidden, error = await call("get_url", {"file_path": "Other/Secret.md"}, who=who)
    assert error
    missing, _ = await call("get_url", {"file_path": "Other/Nothing.md"}, who=who)
    assert hidden == "Error: Document not found: Other/Secret.md"
    assert missing == "Error: Document not found: Other/Nothing.md"
    # With a line, too: nothing about the hidden note's length leaks.
    hidden, _ = await call("get_url", {"file_path": "Other/Secret.md", "line": 99}, who=who)
    assert hidden == "Error: Document not found: Other/Secret.md"
    assert vault["secret"].doc_id not in hidden
    # The same token sees its own folder.
    text, error = await call("get_url", {"file_path": "Lens/Notes/Plan.md"}, who=who)
    assert not error and vault["plan"].doc_id in text


@pytest.mark.parametrize(
    "path",
    [
        "Lens/../Other/Secret.md",
        "../Other/Secret.md",
        "Lens/Notes/../../Other/Secret.md",
        "/Other/Secret.md",
        "Other//Secret.md",
        "Lens/Notes/./Plan.md",
        "Lens/%2e%2e/Other/Secret.md",
        "Lens\\..\\Other\\Secret.md",
        "",
        "x" * 5000,
    ],
)
async def test_traversal_finds_nothing(vault: Any, call: Any, path: str) -> None:
    text, error = await call("get_url", {"file_path": path}, who=lens_only(vault))
    assert error and text.startswith("Error: Document not found")
    assert vault["secret"].doc_id not in text


async def test_the_link_opens_the_editor_for_a_signed_in_person(vault: Any, call: Any, settings: Any) -> None:
    from django.contrib.auth.models import User

    settings.LENSRELAY_PUBLIC_URL = ""
    text, _ = await call("get_url", {"file_path": "Lens/Notes/Plan.md", "line": 2})
    path = text.splitlines()[0].split("#", 1)[0]
    alice = await sync_to_async(User.objects.create_superuser)("alice", password="pw")

    def open_page() -> Any:
        browser = Client()
        browser.force_login(alice)
        return browser.get(path)

    page = await sync_to_async(open_page)()
    assert page.status_code == 200
    assert "Lens/Notes/Plan.md" in page.content.decode()


async def test_the_tool_is_read_only_and_offered_to_viewers() -> None:
    import mcp_tools.tools  # noqa: F401

    tool = REGISTRY["get_url"]
    assert tool.read_only and not tool.destructive
    assert tool.available_to(access(role="view"))
    schema = tool.input_schema()
    assert schema["required"] == ["file_path"]
    assert schema["properties"]["line"]["anyOf"][0]["minimum"] == 1


async def test_the_index_does_not_know_hidden_paths_by_doc_id(vault: Any) -> None:
    # What the answers above rely on: the index resolves only within the caller's folders.
    kb = await open_kb()
    ctx = ToolContext(access=lens_only(vault), session_key="s")
    with pytest.raises(ToolError):
        kb.resolve(ctx, "Other/Secret.md")
