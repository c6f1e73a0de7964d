"""Write tools: AI edits become CriticMarkup suggestions in the live document and rows in the database."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.docstore.texts import text_cache
from lensrelay.models import Folder
from lensrelay.vault.documents import document_create
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.markup.criticmarkup import accept_all, parse, reject_all
from suggestions.models import Suggestion
from tests.mcp_tools.tools.conftest import access

pytestmark = pytest.mark.django_db(transaction=True)

ORIGINAL = (
    "# Notes 🌱\n\nThe quick brown fox jumps over the lazy dog.\n光合作用 is photosynthèse in café form 😀.\n"
)


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Notes/Fox.md", text=ORIGINAL)


async def raw(store: Any, doc_id: str) -> str:
    return await text_cache(store).get(doc_id)


async def rows() -> list[Suggestion]:
    return await sync_to_async(lambda: list(Suggestion.objects.order_by("created")))()


async def test_edit_requires_a_read_first(store: Any, note: Any, call: Any) -> None:
    text, error = await call(
        "edit", {"file_path": "Lens/Notes/Fox.md", "old_string": "quick", "new_string": "slow"}
    )
    assert error
    assert text == (
        "You must read this document before editing it. "
        'Call the read tool with file_path: "Lens/Notes/Fox.md" first.'
    )
    assert await raw(store, note.doc_id) == ORIGINAL


async def test_edit_writes_word_level_markup_and_a_row(store: Any, note: Any, call: Any) -> None:
    await call("read", {"file_path": "Lens/Notes/Fox.md"})
    text, error = await call(
        "edit",
        {
            "file_path": "Lens/Notes/Fox.md",
            "old_string": "The quick brown fox",
            "new_string": "A slow red fox",
        },
    )
    assert not error, text
    assert text.startswith("Edited Lens/Notes/Fox.md: replaced 19 characters with CriticMarkup suggestion")
    assert "1 hunk: 15 characters marked for deletion, 10 inserted" in text
    current = await raw(store, note.doc_id)
    marks = parse(current)
    assert [m.kind for m in marks] == ["deletion", "addition"]
    assert marks[0].content == "The quick brown" and marks[1].content == "A slow red"
    assert marks[0].metadata["author"] == "tester"
    assert current[marks[1].end :].startswith(" fox jumps")
    assert accept_all(current) == ORIGINAL.replace("The quick brown fox", "A slow red fox")
    assert reject_all(current) == ORIGINAL
    [row] = await rows()
    assert row.status == "pending" and row.kind == "edit" and row.tool == "edit"
    assert row.path == "Lens/Notes/Fox.md" and row.author == "tester"
    assert len(row.hunks) == 1 and row.hunks[0]["old"] == "The quick brown"
    # read shows the accepted view and a footer
    shown, _ = await call("read", {"file_path": "Lens/Notes/Fox.md"})
    assert "A slow red fox jumps" in shown and "{--" not in shown.split("[Pending suggestions]")[0]
    assert "[Pending suggestions]\nL3: {--The quick brown--}{++A slow red++} (tester)" in shown


async def test_edits_next_to_emoji_cjk_and_accents_land_exactly(store: Any, note: Any, call: Any) -> None:
    await call("read", {"file_path": "Lens/Notes/Fox.md"})
    for old, new in [("光合作用", "光合成"), ("photosynthèse", "fotosíntesis"), ("😀", "🎉"), ("🌱", "🌳")]:
        _, error = await call(
            "edit", {"file_path": "Lens/Notes/Fox.md", "old_string": old, "new_string": new}
        )
        assert not error
    expected = ORIGINAL.replace("光合作用", "光合成").replace("photosynthèse", "fotosíntesis")
    expected = expected.replace("😀", "🎉").replace("🌱", "🌳")
    current = await raw(store, note.doc_id)
    assert accept_all(current) == expected
    assert reject_all(current) == ORIGINAL


async def test_edit_errors_worded_like_claude_code(store: Any, note: Any, call: Any) -> None:
    await call("read", {"file_path": "Lens/Notes/Fox.md"})
    cases = [
        (
            {"old_string": "missing words", "new_string": "x"},
            "String to replace not found in Lens/Notes/Fox.md",
        ),
        ({"old_string": "o", "new_string": "0"}, "Found "),
        (
            {"old_string": "fox", "new_string": "fox"},
            "No changes to make: old_string and new_string are exactly the same.",
        ),
        (
            {"old_string": "fox", "new_string": "{++evil++}"},
            "the system handles suggestion wrapping automatically",
        ),
        ({"old_string": "fox--}", "new_string": "cat"}, "CriticMarkup delimiter '--}'"),
    ]
    for arguments, message in cases:
        text, error = await call("edit", {"file_path": "Lens/Notes/Fox.md", **arguments})
        assert error and message in text, text
    assert await raw(store, note.doc_id) == ORIGINAL
    assert await rows() == []


async def test_curly_quotes_match_straight_ones(store: Any, make_folder: Any, call: Any) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    doc = await document_create(
        store=store, folder=folder, path="/Q.md", text="She said \u201chello\u201d.\n"
    )
    await call("read", {"file_path": "Lens/Q.md"})
    _, error = await call(
        "edit", {"file_path": "Lens/Q.md", "old_string": 'said "hello"', "new_string": "waved"}
    )
    assert not error
    assert accept_all(await raw(store, doc.doc_id)) == "She waved.\n"


async def test_replace_all(store: Any, note: Any, call: Any) -> None:
    await call("read", {"file_path": "Lens/Notes/Fox.md"})
    occurrences = ORIGINAL.count("o")
    text, error = await call(
        "edit", {"file_path": "Lens/Notes/Fox.md", "old_string": "o", "new_string": "0", "replace_all": True}
    )
    assert not error and f"{occurrences} occurrences replaced" in text
    assert accept_all(await raw(store, note.doc_id)) == ORIGINAL.replace("o", "0")


async def test_multi_edit_is_atomic_and_dry_run_changes_nothing(store: Any, note: Any, call: Any) -> None:
    await call("read", {"file_path": "Lens/Notes/Fox.md"})
    edits = [
        {"old_string": "quick", "new_string": "slow"},
        {"old_string": "lazy", "new_string": "sleepy"},
        {"old_string": "no such text", "new_string": "x"},
    ]
    text, error = await call("multi_edit", {"file_path": "Lens/Notes/Fox.md", "edits": edits})
    assert error
    assert text.startswith("Error: Edit 3 of 3 failed: String to replace not found in Lens/Notes/Fox.md.")
    assert "\nNo edit was applied; the document is unchanged.\nRecovery: Read the document" in text
    assert await raw(store, note.doc_id) == ORIGINAL
    text, error = await call(
        "multi_edit",
        {"file_path": "Lens/Notes/Fox.md", "edits": edits[:2], "dry_run": True, "include_content": True},
    )
    assert not error
    assert text.startswith("Dry run of Lens/Notes/Fox.md: 2 edit(s) would replace 9 characters. Nothing")
    assert "- 1 of 2: 'quick' matched, 1 occurrence replaced" in text
    diff = text.split("\nDiff:\n")[1].split("\n\nResulting content (as if accepted):\n")[0]
    assert "-The quick brown fox" in diff
    assert "slow brown fox" in text.split("Resulting content (as if accepted):\n")[1]
    assert await raw(store, note.doc_id) == ORIGINAL
    assert await rows() == []
    text, error = await call("multi_edit", {"file_path": "Lens/Notes/Fox.md", "edits": edits[:2]})
    assert not error
    assert text.startswith("Edited Lens/Notes/Fox.md: replaced 9 characters with CriticMarkup suggestion")
    assert accept_all(await raw(store, note.doc_id)) == ORIGINAL.replace("quick", "slow").replace(
        "lazy", "sleepy"
    )
    [row] = await rows()
    assert row.tool == "multi_edit" and len(row.hunks) == 2


async def test_superseding_leaves_one_pending(store: Any, note: Any, call: Any) -> None:
    await call("read", {"file_path": "Lens/Notes/Fox.md"})
    await call("edit", {"file_path": "Lens/Notes/Fox.md", "old_string": "brown fox", "new_string": "red fox"})
    text, error = await call(
        "edit", {"file_path": "Lens/Notes/Fox.md", "old_string": "red fox", "new_string": "grey wolf"}
    )
    assert not error and "supersedes 1" in text
    first, second = await rows()
    assert first.status == "superseded" and second.status == "pending"
    current = await raw(store, note.doc_id)
    assert accept_all(current) == ORIGINAL.replace("brown fox", "grey wolf")
    assert reject_all(current) == ORIGINAL
    ids = {m.metadata["id"] for m in parse(current) if m.metadata}
    assert ids == {second.uid}


async def test_comment_is_attached(store: Any, note: Any, call: Any) -> None:
    await call("read", {"file_path": "Lens/Notes/Fox.md"})
    _, error = await call(
        "edit",
        {"file_path": "Lens/Notes/Fox.md", "old_string": "lazy", "new_string": "sleepy", "comment": "tone"},
    )
    assert not error
    marks = parse(await raw(store, note.doc_id))
    assert [m.kind for m in marks] == ["deletion", "addition", "comment"]
    assert marks[2].content == "tone" and marks[2].start == marks[1].end


async def test_view_and_scoped_tokens_cannot_suggest(
    store: Any, note: Any, call: Any, make_folder: Any
) -> None:
    text, error = await call(
        "edit",
        {"file_path": "Lens/Notes/Fox.md", "old_string": "fox", "new_string": "cat"},
        who=access("view"),
    )
    assert error and "read-only" in text
    other = await sync_to_async(make_folder)("Other")
    scoped = access("suggest", frozenset({other.pk}))
    text, error = await call("write", {"file_path": "Lens/New.md", "content": "hi"}, who=scoped)
    assert error and "Folder not found: Lens" in text
    text, error = await call(
        "edit", {"file_path": "Lens/Notes/Fox.md", "old_string": "fox", "new_string": "cat"}, who=scoped
    )
    assert error and "not found" in text.lower()
    assert await raw(store, note.doc_id) == ORIGINAL


async def test_write_creates_a_document_as_one_addition(store: Any, note: Any, call: Any) -> None:
    text, error = await call(
        "write", {"file_path": "Lens/Ideas/New Idea", "content": "# Idea 💡\n\nGrow 光.\n"}
    )
    assert not error, text
    listed, _ = await call("glob", {"pattern": "**/*.md"})
    assert "Lens/Ideas/New Idea.md" in listed.splitlines()
    [row] = await rows()
    assert row.kind == "create"
    current = await raw(store, row.doc_id)
    assert [m.kind for m in parse(current)] == ["addition"]
    assert accept_all(current) == "# Idea 💡\n\nGrow 光.\n"
    decision = await suggestion_decide(store=store, suggestion=row, user=None, accept=True)
    assert decision.ok
    assert await raw(store, row.doc_id) == "# Idea 💡\n\nGrow 光.\n"


async def test_write_over_existing_becomes_hunks(store: Any, note: Any, call: Any) -> None:
    await call("read", {"file_path": "Lens/Notes/Fox.md"})
    new = ORIGINAL.replace("lazy dog", "lazy cat") + "A new line.\n"
    _, error = await call("write", {"file_path": "Lens/Notes/Fox.md", "content": new})
    assert not error
    current = await raw(store, note.doc_id)
    assert accept_all(current) == new and reject_all(current) == ORIGINAL
    contents = [(m.kind, m.content) for m in parse(current)]
    assert ("deletion", "dog") in contents and ("addition", "cat") in contents
    assert ("addition", "A new line.\n") in contents


async def test_accept_reject_stale_and_list(store: Any, note: Any, call: Any) -> None:
    await call("read", {"file_path": "Lens/Notes/Fox.md"})
    await call("edit", {"file_path": "Lens/Notes/Fox.md", "old_string": "quick", "new_string": "slow"})
    await call("edit", {"file_path": "Lens/Notes/Fox.md", "old_string": "lazy", "new_string": "sleepy"})
    await call("edit", {"file_path": "Lens/Notes/Fox.md", "old_string": "café", "new_string": "bistro"})
    first, second, third = await rows()
    assert (await suggestion_decide(store=store, suggestion=first, user=None, accept=True)).ok
    rejected = await suggestion_decide(
        store=store, suggestion=second, user=None, accept=False, note="keep lazy"
    )
    assert rejected.ok
    assert await raw(store, note.doc_id) != ORIGINAL
    view = accept_all(await raw(store, note.doc_id))
    assert view == ORIGINAL.replace("quick", "slow").replace("café", "bistro")
    # A person deletes the third suggestion's markup by hand: accepting it now is refused as stale.
    room = await store.get(note.doc_id)
    from pycrdt import Text

    from lensrelay.docstore.offsets import text_replace

    ytext = room.doc.get("contents", type=Text)
    current = str(ytext)
    mark_start = current.index("{--")
    mark_end = current.index("++}", mark_start) + 3
    with room.transact():
        text_replace(ytext, current=current, start=mark_start, end=mark_end, value="café")
    await room.flushed()
    third = await sync_to_async(Suggestion.objects.get)(pk=third.pk)
    stale = await suggestion_decide(store=store, suggestion=third, user=None, accept=True)
    # Either the accept finds the markup gone, or the editor follower (0.3 s later) got there first and
    # settled the row from the edit: both refuse the accept.
    assert not stale.ok
    assert stale.reason == "suggestion no longer found in document" or stale.reason.startswith(
        "suggestion is already "
    )
    assert (await sync_to_async(Suggestion.objects.get)(pk=third.pk)).status in {"stale", "rejected"}
    listed, _ = await call("list_suggestions", {})
    assert "ACCEPTED" in listed and "REJECTED" in listed and "Reviewer's note: keep lazy" in listed


async def test_row_follows_a_decision_made_in_an_editor(store: Any, note: Any, call: Any) -> None:
    await call("read", {"file_path": "Lens/Notes/Fox.md"})
    await call("edit", {"file_path": "Lens/Notes/Fox.md", "old_string": "lazy", "new_string": "sleepy"})
    room = await store.get(note.doc_id)
    from pycrdt import Text

    from lensrelay.docstore.offsets import text_replace

    ytext = room.doc.get("contents", type=Text)
    current = str(ytext)
    start = current.index("{--")
    end = current.index("++}", start) + 3
    with room.transact():  # what an editor's "accept" does: the markup becomes the new text
        text_replace(ytext, current=current, start=start, end=end, value="sleepy")
    await room.flushed()
    for _ in range(50):
        [row] = await rows()
        if row.status != "pending":
            break
        await asyncio.sleep(0.1)
    assert row.status == "accepted"


async def test_typing_inside_a_suggestion_makes_it_stale_at_once_and_read_stops_listing_it(
    store: Any, note: Any, call: Any
) -> None:
    from pycrdt import Text

    from lensrelay.docstore.offsets import text_insert
    from suggestions.lifecycle.follow import follower_for

    await call("read", {"file_path": "Lens/Notes/Fox.md"})
    await call("edit", {"file_path": "Lens/Notes/Fox.md", "old_string": "lazy", "new_string": "sleepy"})
    shown, _ = await call("read", {"file_path": "Lens/Notes/Fox.md"})
    assert "{--lazy--}{++sleepy++} (tester)" in shown
    room = await store.get(note.doc_id)
    ytext = room.doc.get("contents", type=Text)
    current = str(ytext)
    with room.transact():  # a person types inside the proposed word
        text_insert(ytext, current=current, index=current.index("sleepy") + 3, value="-ish-")
    await room.flushed()
    await follower_for(store).settled()
    [row] = await rows()
    assert row.status == "stale"
    shown, _ = await call("read", {"file_path": "Lens/Notes/Fox.md"})
    assert "[Pending suggestions]" not in shown and "sle-ish-epy" in shown
    decision = await suggestion_decide(store=store, suggestion=row, user=None, accept=True)
    assert not decision.ok and "-ish-" in await raw(store, note.doc_id)


async def test_move_accepted_rewrites_links(store: Any, make_folder: Any, call: Any) -> None:
    folder = await sync_to_async(make_folder)("Lens")
    await document_create(store=store, folder=folder, path="/Target.md", text="target\n")
    linker = await document_create(
        store=store, folder=folder, path="/Linker.md", text="see [[Target|t]] and [[Target#H]]\n"
    )
    text, error = await call(
        "move", {"file_path": "Lens/Target.md", "new_path": "Lens/Archive/Target Old.md"}
    )
    assert not error, text
    [row] = await rows()
    decision = await suggestion_decide(store=store, suggestion=row, user=None, accept=True)
    assert decision.ok and decision.detail == "2 links rewritten"
    assert await raw(store, linker.doc_id) == "see [[Target Old|t]] and [[Target Old#H]]\n"
    listed, _ = await call("glob", {"pattern": "**/*.md"})
    assert "Lens/Archive/Target Old.md" in listed and "Lens/Target.md" not in listed.splitlines()
    lens = await sync_to_async(Folder.objects.get)(name="Lens")
    assert lens.name == "Lens"
