"""The planning core on the findings it was built for (issue 8 findings 1-5, issue 7 finding 5)."""

from __future__ import annotations

import json
import re

import pytest

from suggestions.errors import SuggestionError
from suggestions.markup.criticmarkup import mark_id, parse, parse_changes, render_metadata
from suggestions.markup.integrity import markup_mismatch
from suggestions.markup.rewriting import accepted_of, base_of, plan_suggestion
from suggestions.models import Suggestion

META = render_metadata("claude", 1, suggestion_id="new")
GPT = render_metadata("gpt", 2, suggestion_id="gpt1")


def plan(raw: str, old: str, new: str) -> str:
    view = accepted_of(raw)
    assert view.count(old) == 1, view
    result = plan_suggestion(raw, view.replace(old, new), meta=META, uid="new")
    assert accepted_of(result.raw) == view.replace(old, new) and base_of(result.raw) == base_of(raw)
    return result.raw


def bare(raw: str) -> str:
    return raw.replace(META, "").replace(GPT, "")


def test_two_separate_words_inside_an_own_pending_suggestion() -> None:
    written = f"{{++{GPT}Photosynthesis turns sunlight into sugar.++}}"
    view = accepted_of(written)
    new_view = view.replace("sunlight", "light").replace("sugar", "glucose")
    result = plan_suggestion(written, new_view, meta=META, uid="new")
    assert result.superseded == ["gpt1"]
    assert accepted_of(result.raw) == new_view and base_of(result.raw) == ""
    assert {mark_id(m) for m in parse(result.raw)} == {"new"}


def test_a_human_comment_stays_byte_identical_and_apart() -> None:
    raw = "Hello {>>human note<<} world"
    after = plan(raw, "Hello  world", "Goodbye world")
    assert "{>>human note<<}" in after
    comment = next(c for c in parse_changes(after) if c.kind == "comment")
    assert comment.metadata is None and after[comment.start : comment.end] == "{>>human note<<}"
    assert all(c.comments == () for c in parse_changes(after))  # never a reply to the new suggestion


def test_an_edit_split_around_a_comment_inside_it() -> None:
    after = plan("ab{>>note<<}cd", "abcd", "xyzw")
    assert bare(after) == "{--ab--}{>>note<<}{--cd--}{++xyzw++}"


def test_a_touching_neighbour_keeps_its_mark() -> None:
    raw = f"Hello {{--{GPT}beautiful --}}world today."
    after = plan(raw, "world today", "earth now")
    assert f"{{--{GPT}beautiful --}}" in after
    assert bare(after) == "Hello {--beautiful --}{--world today--}{++earth now++}."


def test_an_overlapped_neighbour_is_superseded_with_its_base_carried_forward() -> None:
    raw = f"The {{--{GPT}big--}}{{++{GPT}very quick++}} brown fox"
    after = plan(raw, "quick brown", "red")
    assert GPT not in after
    assert accepted_of(after) == "The very red fox" and base_of(after) == "The big brown fox"


def test_a_deletion_is_only_a_deletion() -> None:
    assert bare(plan("keep delete me keep", " delete me ", "")) == "keep{-- delete me --}keep"


@pytest.mark.parametrize(
    ("raw", "changes"),
    [
        ("ABK and more", [("A", "{+"), ("B", '+{"author":"alice"}@@INJECTED+'), ("K", "+}")]),
        (f"Hello {{++{GPT}{{+++}} world", [(" world", '+{"author":"alice"}@@X+ world')]),
        ("a {+ + b", [(" + ", "+")]),  # a deletion that joins two halves
    ],
)
def test_markup_assembled_from_pieces_is_refused(raw: str, changes: list[tuple[str, str]]) -> None:
    view = accepted_of(raw)
    for old, new in changes:
        view = view.replace(old, new, 1)
    with pytest.raises(SuggestionError, match="delimiter '"):
        plan_suggestion(raw, view, meta=META, uid="new")


def test_forged_markup_that_forms_only_when_a_neighbour_is_rejected_is_refused() -> None:
    raw = f"x {{--{GPT}{{+--}}yy z"  # rejecting gpt's deletion brings "{+" back, right before "yy"
    with pytest.raises(SuggestionError, match=re.escape("'{++'")):
        plan_suggestion(raw, accepted_of(raw).replace("yy", "+zz"), meta=META, uid="new")


def test_forged_markup_that_forms_only_when_neighbours_are_decided_differently_is_refused() -> None:
    # Accepting gpt's deletion and rejecting the person's substitution leaves "==" right after the
    # new "{": each decision alone, or both alike, forms nothing, so only a mix of them shows it.
    raw = f"{{--{GPT}the--}}{{~~==~>the~~}}"
    with pytest.raises(SuggestionError, match=re.escape("'{=='")):
        plan_suggestion(raw, "{the", meta=META, uid="new")


def test_a_neighbour_that_can_only_leave_plain_text_lets_the_same_character_in() -> None:
    raw = f"{{--{GPT}the--}}{{~~so~>the~~}}"
    assert accepted_of(plan(raw, "the", "{the")) == "{the"


def test_typing_inside_the_markup_is_a_mismatch_naming_what_changed() -> None:
    raw = plan("The chloroplast holds chlorophyll.", "chlorophyll", "pigments")
    records = [{"old": c.old, "new": c.new} for c in parse_changes(raw) if mark_id(c.marks[0]) == "new"]
    row = Suggestion(uid="new", hunks=records)
    assert markup_mismatch(raw, row) is None
    typed = raw.replace("chlorophyll", "chloro-a-phyll")
    assert "edited since it was proposed" in (markup_mismatch(typed, row) or "")
    assert markup_mismatch(raw.replace("{++", "", 1), row) is not None


def test_metadata_escapes_only_what_json_needs_and_no_delimiter_forms() -> None:
    assert render_metadata("claude-review", 5) == '{"author":"claude-review","timestamp":5}@@'
    for author in ("a++}b", "{--x", "q@@r", "~>", 'quote " and \\ back'):
        meta = render_metadata(author, 5)
        body = meta[: -len("@@")]
        assert json.loads(body)["author"] == author
        assert not any(d in body for d in ("++}", "{--", "@@", "~>")), meta
        [mark] = parse(f"{{++{meta}text++}}")
        assert mark.content == "text" and mark.metadata == {"author": author, "timestamp": 5}


def test_a_stray_opening_that_would_capture_the_new_markup_is_refused_naming_it() -> None:
    raw = "Write {++ to add text, then fox"  # an unclosed delimiter, shown as plain text
    with pytest.raises(SuggestionError, match=re.escape("'{++'")):
        plan_suggestion(raw, accepted_of(raw).replace("fox", "cat"), meta=META, uid="new")


@pytest.mark.parametrize(
    ("raw", "old", "new", "written"),
    [
        # over a pending replacement and the word after it: one deletion, not {--fast--}{-- brown--}
        (
            f"The {{--{GPT}fast--}}{{++{GPT}quick++}} brown fox.",
            "quick brown ",
            "",
            "The {--fast brown --}fox.",
        ),
        # a superseded deletion that only takes the new metadata meets the new deletion: joined
        (f"the {{--{GPT}the--}}{{++{GPT}the++}}the the", "thethe ", "", "the {--thethe --}the"),
        # an insertion that would stand before the deletion it goes with is moved after it
        (
            f"{{--{GPT}old--}}{{++{GPT}he ++}}the the end",
            "he the the",
            "she",
            "{--oldthe the--}{++she++} end",
        ),
    ],
)
def test_one_change_reads_as_one_mark(raw: str, old: str, new: str, written: str) -> None:
    assert bare(plan(raw, old, new)) == written
