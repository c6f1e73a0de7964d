"""What the review page shows of a change: the lines around it (as the note reads with every pending change
accepted), the deleted and the inserted text, bounded, and only this suggestion's changes."""

from __future__ import annotations

import json

from mcp_tools.reviewing.shown import CONTEXT_MAX_CHARS, shown_changes


def mark(uid: str, old: str, new: str) -> str:
    meta = json.dumps({"id": uid, "author": "claude"}, separators=(",", ":")) + "@@"
    return (f"{{--{meta}{old}--}}" if old else "") + (f"{{++{meta}{new}++}}" if new else "")


def test_a_change_is_shown_with_two_lines_either_side() -> None:
    raw = f"l1\nl2\nl3\nThe {mark('aa', 'old', 'new')} word\nl5\nl6\nl7\n"
    [change] = shown_changes(raw, "aa")
    assert (change.before, change.deleted, change.inserted, change.after) == (
        "l2\nl3\nThe ",
        "old",
        "new",
        " word\nl5\nl6",
    )


def test_context_stops_at_the_note_edges_and_other_suggestions_read_accepted() -> None:
    raw = f"{mark('aa', '', 'Start')} {mark('bb', 'gone', 'here')}"
    [change] = shown_changes(raw, "bb")
    assert (change.before, change.deleted, change.inserted, change.after) == ("Start ", "gone", "here", "")
    assert shown_changes(raw, "cc") == []


def test_context_is_bounded_on_long_lines() -> None:
    raw = "x" * 5000 + mark("aa", "a", "b") + "y" * 5000
    [change] = shown_changes(raw, "aa")
    assert len(change.before) == CONTEXT_MAX_CHARS and len(change.after) == CONTEXT_MAX_CHARS


def test_hostile_text_is_kept_as_plain_strings() -> None:
    hostile = "<img src=x onerror=alert(1)></script>"
    [change] = shown_changes(f"A {mark('aa', 'x', hostile)} B", "aa")
    assert change.inserted == hostile  # the page renders it with textContent, never as markup
