"""Cleaning up a stale suggestion's leftovers: base text back, broken markers gone, people's text kept."""

from __future__ import annotations

from suggestions.lifecycle.cleaning import clean_up_spans
from suggestions.markup.criticmarkup import apply_spans, render_metadata

META = render_metadata("claude", 1, suggestion_id="s1")
OTHER = render_metadata("gpt", 2, suggestion_id="s2")


def cleaned(raw: str, proposed: set[str]) -> str:
    return apply_spans(raw, clean_up_spans(raw, "s1", proposed))


def test_an_addition_whose_opening_was_deleted_goes_with_its_metadata() -> None:
    raw = f"Plants {META}and algal ++}}make sugar."
    assert cleaned(raw, {"and algal "}) == "Plants make sugar."


def test_a_deletion_whose_opening_was_deleted_keeps_its_text() -> None:
    raw = f"Plants {META}sometimes --}}make sugar."
    assert cleaned(raw, set()) == "Plants sometimes make sugar."


def test_intact_marks_are_rejected_and_text_a_person_typed_stays() -> None:
    raw = f"a {{--{META}old--}}{{++{META}new++}} b {{++{META}typed here++}} c"
    assert cleaned(raw, {"new", "typed"}) == "a old b typed here c"


def test_other_suggestions_and_comments_stay_byte_identical() -> None:
    other = f"{{++{OTHER}theirs++}}"
    raw = f"x {{>>note<<}}{META}mine ++}}{other} y"
    assert cleaned(raw, {"mine "}) == f"x {{>>note<<}}{other} y"
