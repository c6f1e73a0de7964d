from datetime import date

import pytest

from mcp_tools.engines.properties import matches_properties, validate_property_query

NOTE = {
    "status": "Draft",
    "tags": ["project/work", "#urgent", "Biology"],
    "priority": 2,
    "published": False,
    "authors": ["Ada", "Grace"],
    "created": "2025-11-20",
    "empty": None,
}


def test_single_value_matches_case_insensitively():
    assert matches_properties(NOTE, {"status": "draft"})
    assert not matches_properties(NOTE, {"status": "final"})


def test_all_keys_must_match():
    assert matches_properties(NOTE, {"status": "draft", "priority": 2})
    assert not matches_properties(NOTE, {"status": "draft", "priority": 3})


def test_list_in_query_means_any_of():
    assert matches_properties(NOTE, {"status": ["final", "DRAFT"]})
    assert not matches_properties(NOTE, {"status": ["final", "review"]})


def test_list_property_matches_if_any_item_matches():
    assert matches_properties(NOTE, {"authors": "grace"})
    assert matches_properties(NOTE, {"authors": ["Linus", "ada"]})
    assert not matches_properties(NOTE, {"authors": "Linus"})


def test_tags_ignore_hash_and_match_nested_tags():
    assert matches_properties(NOTE, {"tags": "urgent"})
    assert matches_properties(NOTE, {"tags": "#biology"})
    assert matches_properties(NOTE, {"tags": "project"})
    assert matches_properties(NOTE, {"tags": "project/work"})
    assert not matches_properties(NOTE, {"tags": "proj"})
    assert not matches_properties(NOTE, {"tags": "work"})


def test_tags_written_as_text_are_split():
    assert matches_properties({"tags": "alpha, beta"}, {"tags": "beta"})
    assert matches_properties({"tags": "#alpha #beta"}, {"tags": ["gamma", "alpha"]})
    assert matches_properties({"Tag": "solo"}, {"tag": "#solo"})


def test_numbers_and_booleans_compare_by_value():
    assert matches_properties(NOTE, {"priority": 2.0})
    assert matches_properties(NOTE, {"priority": "2"})
    assert matches_properties(NOTE, {"published": False})
    assert matches_properties(NOTE, {"published": "false"})
    assert not matches_properties(NOTE, {"published": 0})
    assert not matches_properties({"flag": 1}, {"flag": True})


def test_null_matches_an_empty_property():
    assert matches_properties(NOTE, {"empty": None})
    assert not matches_properties(NOTE, {"status": None})


def test_dates_match_their_iso_text():
    assert matches_properties({"created": date(2025, 11, 20)}, {"created": "2025-11-20"})
    assert matches_properties(NOTE, {"created": "2025-11-20"})


def test_missing_key_or_missing_frontmatter_never_matches():
    assert not matches_properties(NOTE, {"missing": "x"})
    assert not matches_properties(None, {"status": "draft"})
    assert not matches_properties({}, {"status": "draft"})


def test_keys_fall_back_to_case_insensitive_lookup():
    assert matches_properties(NOTE, {"Status": "draft"})


def test_unicode_values_fold_case():
    assert matches_properties({"city": "Zürich"}, {"city": "ZÜRICH"})
    assert matches_properties({"word": "Straße"}, {"word": "STRASSE"})


def test_validate_accepts_scalars_and_lists():
    query = {"status": "draft", "tags": ["a", "b"], "n": 1, "ok": True, "none": None}
    assert validate_property_query(query) == query


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (["status"], "must be an object"),
        ("status=draft", "must be an object"),
        (None, "must be an object"),
        ({}, "at least one property"),
        ({"": "x"}, "non-empty strings"),
        ({"tags": []}, "empty list"),
        ({"meta": {"a": 1}}, "must be text, numbers"),
        ({"tags": [["nested"]]}, "list items must be"),
        ({"n": float("nan")}, "not a usable number"),
    ],
)
def test_validate_refuses_bad_queries(query, message):
    with pytest.raises(ValueError, match=message):
        validate_property_query(query)
