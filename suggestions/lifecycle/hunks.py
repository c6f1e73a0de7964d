"""A suggestion's hunks as its markup in a note now reads: the text each change takes out and puts in, the
Yjs positions around it and the words beside it (``HunkRecord``), and the row fields written from them."""

from __future__ import annotations

from collections.abc import Sequence

from pycrdt import Assoc, StickyIndex, Text

from lensrelay.docstore.offsets import byte_offset
from lensrelay.docstore.room import Room
from lensrelay.docstore.texts import CONTENTS
from suggestions.lifecycle.planning import changes_context
from suggestions.markup.accepted_view import build_accepted_view
from suggestions.markup.criticmarkup import Change, own_changes
from suggestions.markup.records import HunkRecord


def hunk_records(room: Room, uid: str) -> list[HunkRecord]:
    ytext = room.doc.get(CONTENTS, type=Text)
    raw = str(ytext)
    records: list[HunkRecord] = []
    changes = own_changes(raw, uid)
    around = changes_context(build_accepted_view(raw), uid)
    if len(around) != len(changes):
        around = [("", "")] * len(changes)
    for change, (before, after) in zip(changes, around, strict=True):
        start = StickyIndex.new(ytext, byte_offset(raw, change.start), Assoc.AFTER)
        end = StickyIndex.new(ytext, byte_offset(raw, change.end), Assoc.BEFORE)
        records.append(
            {
                "old": change.old,
                "new": change.new,
                "start": start.to_json(),
                "end": end.to_json(),
                "before": before,
                "after": after,
            }
        )
    return records


def change_texts(raw: str, changes: Sequence[Change]) -> tuple[str, str, str]:
    """A row's old text, new text and markup, from its changes in ``raw``."""
    return (
        "\n".join(c.old for c in changes if c.old),
        "\n".join(c.new for c in changes if c.new),
        "".join(raw[c.start : c.end] for c in changes),
    )
