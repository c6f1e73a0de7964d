"""Whole-file replacement suggestions: the JSON rule, and how reviewers see them (admin and review page)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lensrelay.models import Document, Folder
from suggestions.admin import SuggestionAdmin
from suggestions.errors import SuggestionError
from suggestions.lifecycle.filetext import check_json
from suggestions.markup.shown import changed_lines
from suggestions.models import Suggestion
from suggestions.review.admin_views import review_diff
from suggestions.review.review_page import document_review

OLD = '{\n  "name": "lens",\n  "version": 1\n}\n'
NEW = '{\n  "name": "lens",\n  "version": 2,\n  "tags": ["a"]\n}\n'

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)


@given(json_values, json_values)
def test_valid_json_may_become_any_valid_json(before: object, after: object) -> None:
    check_json("Lens/x.json", json.dumps(before), json.dumps(after, indent=2))


@given(json_values, st.sampled_from(["", "{", "[1,", '{"a": }', "nul", "}{"]))
def test_valid_json_may_not_become_invalid(before: object, broken: str) -> None:
    with pytest.raises(SuggestionError, match=r"^Error: the change would make Lens/b.canvas invalid JSON \("):
        check_json("Lens/b.canvas", json.dumps(before), broken)


def test_broken_json_may_be_changed_and_other_types_are_not_checked() -> None:
    check_json("Lens/x.json", "{broken", "{still broken")
    check_json("Lens/page.html", "<p>", "{")
    check_json("Lens/data.csv", "a,b", "{")


def test_changed_lines_counts_both_sides() -> None:
    assert changed_lines(OLD, NEW) == "1 line removed, 2 added"
    assert changed_lines("a\nb\n", "") == "2 lines removed, 0 added"


@pytest.fixture
def replacement(db: None) -> Suggestion:
    folder = Folder.objects.create(name="Lens", doc_id="a" * 36 + "-" + "b" * 36)
    document = Document.objects.create(
        folder=folder, uuid="c" * 36, doc_id="a" * 36 + "-" + "c" * 36, path="/Data/config.json", type="file"
    )
    return Suggestion.objects.create(
        kind=Suggestion.Kind.REPLACE,
        folder=folder,
        document=document,
        doc_id=document.doc_id,
        path="Lens/Data/config.json",
        author="claude",
        tool="edit",
        old_text=OLD,
        new_text=NEW,
        base_hash="0" * 64,
    )


def test_the_change_page_shows_the_replacement_as_a_diff(replacement: Suggestion) -> None:
    shown = review_diff(replacement)
    assert not shown.in_document and shown.explanation.startswith(
        "Replace the content of Lens/Data/config.json (no markup inside the file"
    )
    assert shown.table is not None and "version" in shown.table and "tags" in shown.table


def test_the_changelist_and_review_page_show_it(replacement: Suggestion) -> None:
    from django.contrib.admin.sites import site

    assert SuggestionAdmin(Suggestion, site).preview(replacement) == "replace file: 1 line removed, 2 added"
    review = document_review(doc_id=replacement.doc_id)
    assert review.rendered is None  # a JSON file is not rendered as a note
    assert [c.suggestion.uid for c in review.cards] == [replacement.uid]
    assert review.cards[0].diff.splitlines()[2:] == [
        "@@ -1,4 +1,5 @@",
        " {",
        '   "name": "lens",',
        '-  "version": 1',
        '+  "version": 2,',
        '+  "tags": ["a"]',
        " }",
    ]
