"""Splitting notes into passages: by heading, long sections cut, frontmatter out, lines as `read` counts."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from lensrelay.semantic.passages import MAX_PASSAGES, MAX_WORDS, split_passages
from lensrelay.text.frontmatter import locate_frontmatter
from lensrelay.text.lines import split_lines

NOTE = """---
tags: [team]
title: not a passage
---
Intro before any heading.

# Sprints

We work in two-week cycles.

```python
# a comment, not a heading
```

## Retrospective

What went well.

## Empty

# Next
Closing words.
"""


def test_sections_follow_headings_with_their_trail_and_lines() -> None:
    passages = split_passages(NOTE)
    assert [(p.start_line, p.end_line, p.heading) for p in passages] == [
        (5, 5, ""),
        (7, 13, "Sprints"),
        (15, 17, "Sprints > Retrospective"),
        (21, 22, "Next"),
    ]
    lines = split_lines(NOTE)
    for passage in passages:
        assert passage.text == "\n".join(lines[passage.start_line - 1 : passage.end_line])
    assert all("tags" not in p.text and "not a passage" not in p.text for p in passages)
    assert (
        passages[2].embedding_text("How we work")
        == "How we work > Sprints > Retrospective\n## Retrospective\n\nWhat went well."
    )


def test_a_long_section_is_cut_at_blank_lines_and_a_long_line_into_windows() -> None:
    paragraph = " ".join(["word"] * 40)
    long_section = "# Long\n" + "\n\n".join([paragraph] * 10) + "\n"
    passages = split_passages(long_section)
    assert len(passages) > 1 and all(len(p.text.split()) <= MAX_WORDS + 2 for p in passages)
    one_line = " ".join(f"w{i}" for i in range(MAX_WORDS * 3 + 5))
    windows = split_passages(one_line)
    assert [p.start_line for p in windows] == [1, 1, 1, 1]
    assert " ".join(p.text for p in windows) == one_line


def test_a_huge_note_is_capped() -> None:
    assert (
        len(split_passages("\n".join(f"# H{i}\ntext {i}" for i in range(MAX_PASSAGES * 2)))) == MAX_PASSAGES
    )


def test_notes_without_words_have_no_passages() -> None:
    assert split_passages("") == []
    assert split_passages("---\na: 1\n---") == []
    assert split_passages("# \n\n---\n\n* * *\n") == []


lines_strategy = st.lists(
    st.one_of(
        st.sampled_from(["", "# Title", "## Sub", "```", "---", "- item", "   ", "### Deep #"]),
        st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=40),
        st.just(" ".join(["many"] * 200)),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(lines_strategy, st.booleans())
def test_every_word_is_in_some_passage_at_its_line(lines: list[str], final_newline: bool) -> None:
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    numbered = split_lines(text)
    passages = split_passages(text)
    assert len(passages) <= MAX_PASSAGES
    previous_end = 0
    for passage in passages:
        assert 1 <= passage.start_line <= passage.end_line <= len(numbered)
        assert passage.start_line >= previous_end  # in document order, never overlapping (save one long line)
        previous_end = passage.end_line
        body = " ".join(numbered[passage.start_line - 1 : passage.end_line])
        assert all(word in body.split() for word in passage.text.split())
    covered = {n for p in passages for n in range(p.start_line, p.end_line + 1)}
    located = locate_frontmatter(text)
    body_line = text.count("\n", 0, located[2]) + 1 if located else 1
    for number, line in enumerate(numbered, start=1):
        if (
            number >= body_line
            and any(ch.isalnum() for ch in line)
            and not re.match(r"^ {0,3}#{1,6}[ \t]", line)
        ):
            assert number in covered, (number, line, passages)
