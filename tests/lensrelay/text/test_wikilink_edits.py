"""An edit's links from the links before it: reused only when provably the same as a fresh parse."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lensrelay.text.wikilink_edits import links_after_edit
from lensrelay.text.wikilinks import extract_wikilinks

NOTE = (
    "# Team note 4\n\nSee [[doc 5]] and ![[doc 6|six]].\n\nSome prose, typed live.\n\n```\n[[in code]]\n```\n"
)
# Lines holding every construct `extract_wikilinks` reacts to (links, embeds, fences, code spans, escapes,
# blank and blank-looking lines, brackets left open), and edits of plain and syntax characters.
LINES = ["ab ab", "x [[a]] y", "![[b|c]]", "```", "~~~", "a `b` c", "``", "", " ", "\r", "> ```", "\\`"]
LINES += [
    "[[a",
    "b]]",
    "a `[[b]]` c",
    "`",
    "ab ` ab",
    "  b!",
    "[[#h]] ~",
    "  ",
    " a ",
    "`a`",
    "`a``",
    ">a ```",
]
NOTES = st.lists(st.sampled_from(LINES), min_size=1, max_size=12).map("\n".join)
TYPED = st.one_of(st.text(alphabet="ab ", max_size=3), st.text(alphabet="ab !|#`\n[]~\\\r\t ", max_size=3))


def after(old: str, start: int, removed: int, inserted: str) -> str:
    return old[:start] + inserted + old[start + removed :]


@settings(max_examples=4000, deadline=None)
@given(old=NOTES, data=st.data())
def test_links_it_reuses_are_those_a_fresh_parse_finds(old: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(old)))
    removed = data.draw(st.integers(0, min(4, len(old) - start)))
    new = after(old, start, removed, data.draw(TYPED))
    reused = links_after_edit(old, new, extract_wikilinks(old))
    if reused is not None:
        assert reused == extract_wikilinks(new)


@settings(max_examples=500, deadline=None)
@given(data=st.data())
def test_typing_in_a_real_note_reuses_exactly_what_a_fresh_parse_finds(data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(NOTE)))
    removed = data.draw(st.integers(0, min(8, len(NOTE) - start)))
    new = after(NOTE, start, removed, data.draw(st.text(alphabet="ab [`!\n", max_size=5)))
    reused = links_after_edit(NOTE, new, extract_wikilinks(NOTE))
    if reused is not None:
        assert reused == extract_wikilinks(new)


def test_typing_in_prose_or_a_heading_reuses_the_links_shifted() -> None:
    links = extract_wikilinks(NOTE)
    for new in (
        NOTE.replace("Some prose", "Some more prose"),
        NOTE.replace("Some prose, typed live.", "Some prose, typed live! Really."),
        "⟨w.1.17⟩" + NOTE,  # what the team bench types: at the start of the heading
        NOTE.replace("# Team note 4", "# Team 4"),
    ):
        assert links_after_edit(NOTE, new, links) == extract_wikilinks(new)
        assert links_after_edit(NOTE, new, links) is not None


def test_an_edit_that_may_change_a_link_or_the_code_around_one_parses_again() -> None:
    links = extract_wikilinks(NOTE)
    for new in (
        NOTE.replace("[[doc 5]]", "[[doc 50]]"),  # inside a link
        NOTE.replace("See [[doc 5]]", "Now see [[doc 5]]"),  # on a link's line
        NOTE.replace("Some prose", "Some `prose"),  # a backtick: code spans pair anew
        NOTE.replace("prose, typed", "prose, [[typed"),
        NOTE.replace("typed live.\n\n", "typed live.\nx\n"),  # a blank line filled: paragraphs join
        NOTE.replace("live.\n", "live."),  # lines joined
        NOTE.replace("```\n[[in", "x```\n[[in"),  # a fence's line
        NOTE.replace("prose", "pro\\se"),
    ):
        assert links_after_edit(NOTE, new, links) is None
    # Each rule, alone: a blank line filled joins paragraphs (backticks then pair around the link), backticks
    # joined by what lay between them pair anew, a fence's line changed stops the fence.
    for before, edited in (
        ("`a\n  \n[[x]] `", "`a\n b \n[[x]] `"),
        ("`a`\n[[x]] ``", "``\n[[x]] ``"),
        ("> ```\n[[x]]\n", ">a ```\n[[x]]\n"),
    ):
        assert extract_wikilinks(before) != extract_wikilinks(edited)
        assert links_after_edit(before, edited, extract_wikilinks(before)) is None
    assert links_after_edit(NOTE, NOTE, links) is links
