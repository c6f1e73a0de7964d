import json

from lensrelay.text.frontmatter import document_stats, locate_frontmatter, split_frontmatter

NOTE = """---
title: Photosynthesis
tags: [biology, "#plants"]
created: 2025-11-20
updated: 2025-11-21T10:30:00Z
---
# Photosynthesis

Plants convert [[Sunlight]] into energy.
"""


def test_splits_yaml_from_body():
    data, body, error = split_frontmatter(NOTE)
    assert error is None
    assert data == {
        "title": "Photosynthesis",
        "tags": ["biology", "#plants"],
        "created": "2025-11-20",
        "updated": "2025-11-21T10:30:00+00:00",
    }
    assert body == "# Photosynthesis\n\nPlants convert [[Sunlight]] into energy.\n"
    json.dumps(data)  # dates were turned into strings


def test_no_frontmatter():
    text = "# Just a note\n---\nkey: value\n---\n"
    assert split_frontmatter(text) == (None, text, None)


def test_unclosed_frontmatter_is_a_thematic_break_not_an_error():
    text = "---\ntitle: x\nno end"
    assert split_frontmatter(text) == (None, text, None)


def test_empty_frontmatter_is_an_empty_mapping():
    assert split_frontmatter("---\n---\nbody") == ({}, "body", None)


def test_dots_close_frontmatter_and_crlf_and_bom_are_accepted():
    assert split_frontmatter("---\na: 1\n...\nbody") == ({"a": 1}, "body", None)
    assert split_frontmatter("\ufeff---\r\na: 1\r\n---\r\nbody") == ({"a": 1}, "body", None)


def test_invalid_yaml_gives_an_error_with_the_document_line():
    data, body, error = split_frontmatter("---\ntitle: ok\nlist: [unclosed\n---\nbody")
    assert data is None
    assert body == "body"
    assert error is not None
    assert error.startswith("Invalid YAML in frontmatter (line")
    assert "expected ',' or ']'" in error


def test_tab_indentation_error_never_raises():
    data, _, error = split_frontmatter("---\na:\n\t- b\n---\n")
    assert data is None
    assert error is not None


def test_non_mapping_frontmatter_is_an_error():
    data, body, error = split_frontmatter("---\n- a\n- b\n---\nbody")
    assert data is None
    assert body == "body"
    assert error == "Frontmatter must be a mapping of properties (key: value lines), but it is a list."
    assert "single value" in str(split_frontmatter("---\njust text\n---\n")[2])


def test_yaml_1_2_style_scalars():
    data, _, _ = split_frontmatter(
        "---\ndraft: yes\nok: true\ntime: 10:30\nzip: 007\nn: 12\nf: 1.5\ne: 2e3\nnothing:\n---\n"
    )
    assert data == {
        "draft": "yes",
        "ok": True,
        "time": "10:30",
        "zip": "007",
        "n": 12,
        "f": 1.5,
        "e": 2000.0,
        "nothing": None,
    }


def test_non_string_keys_and_odd_values_become_json_safe():
    data, _, error = split_frontmatter("---\n2024: year\ntrue: yes\n2025-01-02: d\nnan: .nan\n---\n")
    assert error is None
    assert data == {"2024": "year", "true": "yes", "2025-01-02": "d", "nan": "nan"}
    json.dumps(data, allow_nan=False)


def test_recursive_or_exploding_aliases_are_refused_not_expanded():
    assert (
        split_frontmatter("---\na: &a [*a]\n---\n")[2]
        == "Frontmatter is too large or too deeply nested to read."
    )
    bomb = "---\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for level in "bcdefgh":
        previous = chr(ord(level) - 1)
        bomb += f"{level}: &{level} [{', '.join(['*' + previous] * 10)}]\n"
    bomb += "---\n"
    data, _, error = split_frontmatter(bomb)
    assert data is None
    assert error is not None


def test_locate_frontmatter_offsets():
    located = locate_frontmatter("---\na: 1\n---\nbody")
    assert located == (4, 9, 13)
    assert locate_frontmatter("no frontmatter") is None


def test_document_stats():
    text = (
        "---\n"
        "title: T\n"
        "---\n"
        "# Title #\n"
        "Some text [[Link]] and ![[Embed.png]] here.\n"
        "```python\n"
        "# not a heading [[Not a link]]\n"
        "- [ ] not a task\n"
        "```\n"
        "- [ ] open task\n"
        "- [x] done task\n"
        "* [X] also done\n"
        "  ## Indented heading\n"
        "#hashtag is not a heading\n"
        "~~~\n"
        "unclosed fence runs to the end\n"
    )
    stats = document_stats(text)
    assert stats["lines"] == 16
    assert stats["headings"] == [
        {"level": 1, "text": "Title", "line": 4},
        {"level": 2, "text": "Indented heading", "line": 13},
    ]
    assert stats["code_blocks"] == 2
    assert stats["wikilinks"] == 2
    assert stats["tasks"] == {"open": 1, "done": 2}
    assert stats["characters"] == len(text) - len("---\ntitle: T\n---\n")


def test_word_count_handles_cjk_accents_and_punctuation():
    stats = document_stats("Grüße aus café — 日本語 ok 👋 #\n")
    # Grüße, aus, café, 日, 本, 語, ok: dashes, emoji and lone hashes are not words.
    assert stats["words"] == 7


def test_stats_of_empty_document():
    assert document_stats("") == {
        "words": 0,
        "characters": 0,
        "lines": 0,
        "headings": [],
        "code_blocks": 0,
        "wikilinks": 0,
        "tasks": {"open": 0, "done": 0},
    }
