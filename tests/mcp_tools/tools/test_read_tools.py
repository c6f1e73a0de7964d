from __future__ import annotations

import json
import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.docstore.store import get_store
from lensrelay.models import Folder
from lensrelay.vault.documents import document_create
from lensrelay.vault.importexport import replace_text
from mcp_tools.kb import open_kb
from tests.mcp_tools.tools.conftest import access
from tests.timing import wall_bound

pytestmark = pytest.mark.django_db(transaction=True)


async def test_read_is_cat_n_and_records_the_read(demo: Any, call: Any) -> None:
    text, error = await call("read", {"file_path": "Lens/Welcome.md"})
    assert not error
    first = text.splitlines()[0]
    assert first.startswith("     1\t")
    assert len(call.log.read) == 1


async def test_read_without_md_suffix_and_with_offset(demo: Any, call: Any) -> None:
    text, error = await call("read", {"file_path": "Lens/Notes/Ideas", "offset": 2, "limit": 1})
    assert not error
    assert text.splitlines()[0].startswith("     2\t")


async def test_read_missing_and_traversal_are_not_found(demo: Any, call: Any) -> None:
    for path in [
        "Lens/Nope.md",
        "../etc/passwd",
        "/etc/passwd",
        "Lens/../Lens/Welcome.md",
        "Lens//Welcome.md",
    ]:
        text, error = await call("read", {"file_path": path})
        assert error and "not found" in text.lower(), path


async def test_read_wrong_argument_types(demo: Any, call: Any) -> None:
    from mcp_tools.registry import REGISTRY, ToolError

    with pytest.raises(ToolError, match="file_path"):
        REGISTRY["read"].parse({"file_path": 42})
    with pytest.raises(ToolError, match="unknown argument 'bogus'"):
        REGISTRY["read"].parse({"file_path": "x", "bogus": 1})


async def test_glob_all_and_scoped(demo: Any, call: Any) -> None:
    text, error = await call("glob", {"pattern": "**/*.md"})
    assert not error
    paths = text.splitlines()
    assert "Lens/Welcome.md" in paths and "Lens/Notes/Archive/Old Syllabus.md" in paths
    assert len(paths) == 14
    text, _ = await call("glob", {"pattern": "*.md", "path": "Lens/Notes"})
    assert sorted(text.splitlines()) == [
        "Lens/Notes/Ideas.md",
        "Lens/Notes/Lab Journal.md",
        "Lens/Notes/Questions.md",
    ]
    text, _ = await call("glob", {"pattern": "**/*.canvas"})
    assert text == "No files found"


async def test_grep_modes(demo: Any, call: Any) -> None:
    text, error = await call("grep", {"pattern": "chloroplast", "-i": True})
    assert not error and "Lens/Chloroplast.md" in text.splitlines()
    text, _ = await call("grep", {"pattern": "光合作用", "output_mode": "content"})
    line = text.splitlines()[0]
    path, number, rest = line.split(":", 2)
    assert path == "Lens/Über Photosynthese.md" and "光合作用" in rest
    read, _ = await call("read", {"file_path": path, "offset": int(number), "limit": 1})
    assert read.splitlines()[0].split("\t", 1)[1] == rest
    text, _ = await call("grep", {"pattern": "zzzz-no-such"})
    assert text == "No matches found."


async def test_grep_catastrophic_pattern_times_out(demo: Any, call: Any) -> None:
    lens = await sync_to_async(Folder.objects.get)(name="Lens")
    await document_create(store=demo, folder=lens, path="/Trap.md", text="a" * 40 + "!\n")
    started = time.monotonic()
    text, error = await call("grep", {"pattern": "(a|aa)+$", "path": "Lens/Trap.md"})
    assert error and "longer than" in text, text
    assert time.monotonic() - started < wall_bound(15)  # 2 s of search CPU; see tests/timing.py
    text, error = await call("grep", {"pattern": "(unclosed"})
    assert error and "regular expression" in text.lower()


async def test_get_links_sections(demo: Any, call: Any) -> None:
    text, error = await call("get_links", {"file_path": "Lens/Photosynthesis.md"})
    assert not error
    assert "Backlinks (documents linking to this):" in text
    assert "Forward links (documents this links to):" in text
    backlinks = text.split("Forward links")[0]
    assert "- Lens/Welcome.md" in backlinks
    assert "Unresolved links" in text and "[[Calvin Cycle]]" in text
    assert "Lab Data" not in text  # the link inside a code block is not a link


async def test_read_metadata_and_property_search(demo: Any, call: Any) -> None:
    text, error = await call("read_metadata", {"file_path": "Lens/Study Plan.md"})
    assert not error
    data = json.loads(text)
    assert data["frontmatter"]["hours_per_week"] == 6
    assert data["stats"]["backlinks"] >= 1
    text, _ = await call("property_search", {"properties": {"tags": ["exam"]}})
    paths = {m["path"] for m in json.loads(text)["matches"]}
    assert {"Lens/Photosynthesis.md", "Lens/Study Plan.md"} <= paths
    text, error = await call("property_search", {"properties": {}})
    assert error


async def test_scoped_token_sees_nothing_elsewhere(demo: Any, call: Any, make_folder: Any) -> None:
    other = await sync_to_async(make_folder)("Private")
    who = access(folder_ids=frozenset({other.pk}))
    text, error = await call("read", {"file_path": "Lens/Welcome.md"}, who=who)
    assert error and "not found" in text.lower()
    text, _ = await call("glob", {"pattern": "**/*.md"}, who=who)
    assert text == "No files found"
    text, error = await call("grep", {"pattern": "Photosynthesis", "path": "Lens"}, who=who)
    assert error and "not found" in text.lower()
    text, _ = await call("grep", {"pattern": "Photosynthesis"}, who=who)
    assert text == "No matches found."
    lens = await sync_to_async(Folder.objects.get)(name="Lens")
    text, _ = await call("info", {}, who=access(folder_ids=frozenset({lens.pk})))
    assert "Lens/ (14 documents)" in text and "Private" not in text


async def test_read_returns_a_paragraph_of_any_length_whole_and_edit_can_reach_its_end(
    store: Any, make_folder: Any, call: Any
) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    paragraph = "Photosynthèse 光合作用 😀 " * 400 + "the very last words."  # ~8,800 characters, one line
    await document_create(store=store, folder=folder, path="/Long.md", text=f"# Long\n\n{paragraph}\nEnd.\n")
    text, error = await call("read", {"file_path": "Lens/Long.md"})
    assert not error
    assert text.splitlines() == ["     1\t# Long", "     2\t", f"     3\t{paragraph}", "     4\tEnd."]
    text, error = await call(
        "edit", {"file_path": "Lens/Long.md", "old_string": "the very last words.", "new_string": "the end."}
    )
    assert not error, text


async def test_grep_sees_a_live_edit_made_after_it_kept_its_documents(demo: Any, call: Any) -> None:
    text, _ = await call("grep", {"pattern": "Xylophonic"})
    assert text == "No matches found."
    entry = (await open_kb()).index.resolve(access(), "Lens/Welcome.md")
    assert entry is not None
    room = await get_store().get(entry.doc_id)
    assert room is not None
    before = (await call("read", {"file_path": "Lens/Welcome.md"}))[0]
    assert replace_text(
        room.doc, "Xylophonic morning.\n" + "\n".join(line.split("\t", 1)[1] for line in before.splitlines())
    )
    await room.flushed()
    text, _ = await call("grep", {"pattern": "Xylophonic"})
    assert text.splitlines() == ["Lens/Welcome.md"]
