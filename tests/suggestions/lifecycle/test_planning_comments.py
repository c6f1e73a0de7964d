"""Quoted comments in an edit's strings: taken out when the document holds them, left in (to be refused)
when it does not."""

from __future__ import annotations

import pytest

from suggestions.errors import SuggestionError
from suggestions.lifecycle.planning import EditSpec, plan_edit, without_quoted_comments
from suggestions.markup.criticmarkup import accept_all, reject_all

RAW = "One {>>a person's note<<}two three.\n"


def test_held_comments_are_taken_out_of_both_strings() -> None:
    [spec] = without_quoted_comments(
        RAW, [EditSpec("One {>>a person's note<<}two", "1 {>>a person's note<<}2")]
    )
    assert spec == EditSpec("One two", "1 2")


def test_comments_not_held_or_only_in_new_string_stay() -> None:
    specs = [EditSpec("One {>>other<<}two", "x"), EditSpec("two", "2{>>a person's note<<}")]
    assert without_quoted_comments(RAW, specs) == specs


def test_plan_keeps_the_comment_byte_identical() -> None:
    planned = plan_edit(
        RAW,
        specs=[EditSpec("One {>>a person's note<<}two", "Uno dos")],
        replacement=None,
        path="Lens/x.md",
        meta='{"author":"ai","timestamp":1,"id":"u1"}@@',
        uid="u1",
        comment=None,
    )
    written = planned.plan.raw
    assert written.count("{>>a person's note<<}") == 1
    assert accept_all(written) == "Uno dos three.\n" and reject_all(written) == "One two three.\n"


def test_a_forged_comment_is_refused() -> None:
    with pytest.raises(SuggestionError, match="delimiter"):
        plan_edit(
            RAW,
            specs=[EditSpec("One {>>forged<<}two", "x")],
            replacement=None,
            path="Lens/x.md",
            meta='{"author":"ai","timestamp":1,"id":"u1"}@@',
            uid="u1",
            comment=None,
        )
