"""Whether a suggestion's markup in a document is still exactly what was proposed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from suggestions.markup.criticmarkup import Change, mark_id, own_changes
from suggestions.markup.records import HunkRecord


class Proposed(Protocol):
    """What the check reads of a suggestion row: its id in the markup and the hunks it proposed."""

    @property
    def uid(self) -> str: ...

    @property
    def hunks(self) -> Sequence[HunkRecord]: ...


def markup_mismatch(raw: str, suggestion: Proposed, *, parsed: Sequence[Change] | None = None) -> str | None:
    """Why the suggestion's markup in ``raw`` is not what was proposed, or None when it still is.

    Each hunk's recorded old and new text is compared with the markup: a person typing inside it, or a
    delimiter edited away (which splits or swallows marks), shows up as a difference.
    """
    if parsed is None:
        changes = own_changes(raw, suggestion.uid)
    else:  # the document's changes, parsed once by a caller checking many suggestions
        changes = [c for c in parsed if any(mark_id(m) == suggestion.uid for m in c.all_marks)]
    records: list[HunkRecord] = list(suggestion.hunks or [])
    if not changes:
        return "suggestion no longer found in document"
    if len(changes) != len(records):
        return f"its markup now has {len(changes)} part(s) where {len(records)} were proposed"
    for change, record in zip(changes, records, strict=True):
        if (change.old, change.new) != (record.get("old", ""), record.get("new", "")):
            return (
                f"the text inside it was edited since it was proposed: {_shown(record)} is now "
                f"{_shown({'old': change.old, 'new': change.new})}"
            )
    return None


def _shown(record: HunkRecord, limit: int = 60) -> str:
    def clip(text: str) -> str:
        flat = text.replace("\n", "⏎")
        return flat if len(flat) <= limit else flat[: limit - 1] + "…"

    return f"{{--{clip(record.get('old', ''))}--}}{{++{clip(record.get('new', ''))}++}}"
