"""Cleaning up a stale suggestion (suggestions/lifecycle/cleaning.py): one test per case of its rule, and
leftover markers gone with other suggestions and comments byte-identical."""

from __future__ import annotations

from suggestions.lifecycle.cleaning import clean_up_spans
from suggestions.markup.criticmarkup import apply_spans, render_metadata

META = render_metadata("claude", 1, suggestion_id="s1")
OTHER = render_metadata("gpt", 2, suggestion_id="s2")


def cleaned(raw: str, proposed: set[str], replaced: set[str] | None = None) -> str:
    return apply_spans(raw, clean_up_spans(raw, "s1", proposed, replaced))


def test_rule_1_typed_inside_the_insertion_takes_it_as_the_person_left_it() -> None:
    # Seen from a new user: "# Collab XYZ" -> "Shared notebook", a person typed inside the insertion;
    # clean-up used to leave "# Collab XYZShared notebook!" (old text, the insertion and their words).
    raw = f"# {{--{META}Collab XYZ--}}{{++{META}Shared notebook!++}}\n"
    assert cleaned(raw, {"Shared notebook"}, {"Collab XYZ"}) == "# Shared notebook!\n"


def test_rule_2_typed_inside_the_deleted_text_keeps_it_and_the_insertion_goes() -> None:
    raw = f"# {{--{META}Collab team XYZ--}}{{++{META}Shared notebook++}}\n"
    assert cleaned(raw, {"Shared notebook"}, {"Collab XYZ"}) == "# Collab team XYZ\n"


def test_rule_3_typed_inside_both_keeps_both() -> None:
    raw = f"# {{--{META}Collab team XYZ--}}{{++{META}Shared notebook!++}}\n"
    assert cleaned(raw, {"Shared notebook"}, {"Collab XYZ"}) == "# Collab team XYZShared notebook!\n"


def test_rule_4_an_untouched_part_of_a_stale_suggestion_is_rejected() -> None:
    raw = f"a {{--{META}old--}}{{++{META}new++}} b {{--{META}gone--}}{{++{META}fresh!++}} c"
    assert cleaned(raw, {"new", "fresh"}, {"old", "gone"}) == "a old b fresh! c"


def test_rule_1_for_a_plain_insertion_and_rule_2_for_a_plain_deletion() -> None:
    raw = f"a {{++{META}added by you++}} b {{--{META}dropped, kept--}} c"
    assert cleaned(raw, {"added"}, {"dropped"}) == "a added by you b dropped, kept c"


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
