"""Writing a plan into the live text: left to right with one set of UTF-8 offsets, the text ends exactly
as the plan says, whatever the characters' widths, and kept characters keep their Yjs identity."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycrdt import Doc, Text

from lensrelay.docstore.texts import CONTENTS
from suggestions.errors import SuggestionError
from suggestions.lifecycle.proposing import write_plan
from suggestions.markup.rewriting import RawEdit, apply_raw_edits


class _Room:
    """The one thing `write_plan` uses of a room: a writing transaction on its Doc."""

    def __init__(self, text: str) -> None:
        self.doc = Doc()
        self.doc.get(CONTENTS, type=Text).insert(0, text)

    @contextlib.contextmanager
    def writing(self) -> Iterator[Doc]:
        with self.doc.transaction():
            yield self.doc

    def text(self) -> str:
        return str(self.doc.get(CONTENTS, type=Text))


ALPHABET = st.sampled_from(["a", "b", " ", "\n", "é", "€", "😀", "{", "}"])


@st.composite
def plans(draw: st.DrawFn) -> tuple[str, list[list[RawEdit]]]:
    raw = draw(st.text(ALPHABET, max_size=40))
    batches, current = [], raw
    for _ in range(draw(st.integers(1, 3))):
        cuts = sorted(draw(st.lists(st.integers(0, len(current)), max_size=8)))
        edits = []
        for start, end in zip(cuts[::2], cuts[1::2], strict=False):
            edits.append(RawEdit(start, end, draw(st.text(ALPHABET, max_size=6))))
        batches.append(edits)
        current = apply_raw_edits(current, edits)
    return raw, batches


@settings(max_examples=300, deadline=None)
@given(plans())
def test_the_text_ends_as_the_plan_says(plan: tuple[str, list[list[RawEdit]]]) -> None:
    raw, batches = plan
    room = _Room(raw)
    write_plan(room, raw, batches)  # type: ignore[arg-type]
    expected = raw
    for edits in batches:
        expected = apply_raw_edits(expected, edits)
    assert room.text() == expected


def test_a_text_changed_since_planning_is_refused_and_left_alone() -> None:
    room = _Room("changed meanwhile")
    with pytest.raises(SuggestionError, match="Nothing was changed"):
        write_plan(room, "planned on this", [[RawEdit(0, 7, "x")]])  # type: ignore[arg-type]
    assert room.text() == "changed meanwhile"
