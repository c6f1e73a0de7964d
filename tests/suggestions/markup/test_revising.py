"""Revising a pending suggestion's inserted text in place (suggestions/markup/revising.py): only the inserted
side changes, by the smallest edit; everything else stays byte-identical; hostile text is refused."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suggestions.errors import SuggestionError
from suggestions.markup.criticmarkup import own_changes, parse, render_metadata
from suggestions.markup.revising import (
    REVISION_MAX_CHARS,
    apply_replacements,
    revision_difference,
    revision_edits,
    revision_refusal,
)
from suggestions.markup.rewriting import accepted_of, base_of, plan_suggestion

META = render_metadata("claude", 1, suggestion_id="u1")
OTHER = render_metadata("gpt", 2, suggestion_id="u2")


def proposed(raw: str, new_view: str) -> str:
    return plan_suggestion(raw, new_view, meta=META, uid="u1").raw


def revised(raw: str, texts: list[str]) -> str:
    return apply_replacements(raw, revision_edits(raw, "u1", texts))


def test_only_the_inserted_text_changes_by_the_smallest_edit() -> None:
    raw = proposed("The quick brown fox.", "The slow red fox.")
    edits = revision_edits(raw, "u1", ["slow ruby"])
    assert [(raw[e.start : e.end], e.insert) for e in edits] == [("ed", "uby")]
    written = apply_replacements(raw, edits)
    assert accepted_of(written) == "The slow ruby fox." and base_of(written) == "The quick brown fox."
    assert [(c.old, c.new) for c in own_changes(written, "u1")] == [("quick brown", "slow ruby")]


def test_each_part_is_revised_on_its_own_and_a_deletion_only_part_stays() -> None:
    raw = proposed("One two three four five.", "One TWO three five.")
    assert [(c.old, c.new) for c in own_changes(raw, "u1")] == [("two", "TWO"), ("four ", "")]
    written = revised(raw, ["2", ""])
    assert accepted_of(written) == "One 2 three five."
    assert base_of(written) == base_of(raw)


def test_other_suggestions_and_comments_stay_byte_identical() -> None:
    raw = proposed("Alpha beta gamma.", "Alpha BETA gamma.")
    raw = raw.replace("gamma", f"{{++{OTHER}new ++}}gamma{{>>a person's comment<<}}")
    written = revised(raw, ["Beta"])
    assert written.replace("{++" + META + "Beta++}", "") == raw.replace("{++" + META + "BETA++}", "")
    assert len(parse(written)) == len(parse(raw))


def test_a_substitution_mark_is_revised_on_its_new_side() -> None:
    raw = f"See {{~~{META}old~>new~~}} here."
    assert accepted_of(revised(raw, ["newer"])) == "See newer here."


@pytest.mark.parametrize(
    ("proposed_texts", "texts", "expected"),
    [
        (["slow"], ["slow", "x"], "has 1 part(s), but 2 changed text(s)"),
        ([""], ["added"], "only deletes text"),
        (["slow"], [""], "reject the suggestion"),
        (["slow"], ["a{++b"], "delimiter '{++'"),
        (["slow"], ["a<<}b"], "delimiter '<<}'"),
        (["slow"], ["x" * (REVISION_MAX_CHARS + 1)], "longer than"),
    ],
)
def test_refusals_say_why(proposed_texts: list[str], texts: list[str], expected: str) -> None:
    refusal = revision_refusal(proposed_texts, texts)
    assert refusal is not None and expected in refusal


def test_unchanged_texts_are_no_refusal() -> None:
    assert revision_refusal(["slow", ""], ["slow", ""]) is None


@pytest.mark.parametrize("hostile", ["+", "++", "a+", "~", "~~", "-", "}", "@@", "\\", '"'])
def test_text_that_would_assemble_a_delimiter_with_the_markup_is_refused_or_inert(hostile: str) -> None:
    raw = proposed("The quick brown fox.", "The slow red fox.")
    try:
        written = revised(raw, [hostile])
    except SuggestionError:
        return
    assert accepted_of(written) == f"The {hostile} fox."
    assert [(c.old, c.new) for c in own_changes(written, "u1")] == [("quick brown", hostile)]


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab +-~{}>@é🦊\n")), min_size=1, max_size=12))
def test_any_accepted_revision_reads_back_exactly(text: str) -> None:
    raw = proposed("Keep the quick brown fox here.", "Keep the slow red fox here.")
    if revision_refusal(["slow red"], [text]) is not None:
        return
    try:
        written = revised(raw, [text])
    except SuggestionError:
        return  # refused before writing: the check caught a mark that would change
    assert accepted_of(written) == f"Keep the {text} fox here."
    assert base_of(written) == "Keep the quick brown fox here."


def test_the_difference_shows_what_the_reviewer_changed_word_by_word() -> None:
    assert revision_difference("slow red", "slow ruby") == "slow {--red--}{++ruby++}"
    assert revision_difference("a b", "a b c") == "a b{++ c++}"
