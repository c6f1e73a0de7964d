import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mcp_tools.engines.catn import (
    EMPTY_DOCUMENT,
    MAX_LINE_CHARS,
    display_line,
    format_read,
    line_count,
    split_lines,
)


def test_numbers_lines_like_cat_n():
    assert format_read("# Title\n\nBody text.") == "     1\t# Title\n     2\t\n     3\tBody text."


def test_final_newline_ends_the_last_line_rather_than_adding_one():
    assert format_read("a\nb\n") == "     1\ta\n     2\tb"
    assert split_lines("a\nb\n") == ["a", "b"]
    assert line_count("a\nb\n") == 2
    assert line_count("a\nb") == 2
    assert line_count("a\n\n") == 2


def test_unicode_lines_keep_their_characters_and_numbers():
    text = "Grüße 👋\n日本語のテキスト\ncafé naïve"
    assert format_read(text).split("\n") == [
        "     1\tGrüße 👋",
        "     2\t日本語のテキスト",
        "     3\tcafé naïve",
    ]


def test_splits_on_newline_only():
    # U+2028 and form feed are characters inside a line, not line breaks.
    text = "one\u2028still one\x0cstill one\nTwo"
    assert format_read(text) == "     1\tone\u2028still one\x0cstill one\n     2\tTwo"


def test_crlf_lines_are_shown_without_the_carriage_return():
    assert format_read("a\r\nb\r\n") == "     1\ta\n     2\tb"


def test_offset_and_limit_select_a_window_and_say_how_to_continue():
    text = "\n".join(f"line {n}" for n in range(1, 11))
    out = format_read(text, offset=3, limit=2)
    assert out == "     3\tline 3\n     4\tline 4\n... (6 more lines; call read with offset=5 to continue)"


def test_offset_zero_or_one_or_none_start_at_the_top():
    text = "a\nb"
    assert format_read(text, offset=0) == format_read(text, offset=1) == format_read(text)


def test_default_limit_is_2000_lines():
    text = "\n".join("x" for _ in range(2500))
    out = format_read(text).split("\n")
    assert len(out) == 2001
    assert out[1999] == "  2000\tx"
    assert out[-1] == "... (500 more lines; call read with offset=2001 to continue)"


def test_wide_line_numbers_stay_right_aligned_then_grow():
    text = "\n".join("x" for _ in range(1_000_001))
    out = format_read(text, offset=999_999, limit=3).split("\n")
    assert out[:3] == [
        "999999\tx",
        "1000000\tx",
        "1000001\tx",
    ]


def test_long_lines_are_returned_whole():
    long_line = "é" * (MAX_LINE_CHARS + 5) + " 😀 the end"
    out = format_read(long_line + "\nnext\n")
    assert out == "     1\t" + long_line + "\n     2\tnext"
    assert "truncated" not in out


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=5000), min_size=1))
@settings(max_examples=60, deadline=None)
def test_every_line_comes_back_whole_and_numbered(lines):
    assume(lines[-1] != "")  # a final newline ends the last line rather than starting one
    out = format_read("\n".join(lines)).split("\n")
    assert out == [f"{n:>6}\t{line}" for n, line in enumerate(lines, start=1)]


def test_a_line_of_a_megabyte_is_not_cut():
    paragraph = "word " * 200_000
    assert format_read(paragraph) == "     1\t" + paragraph


def test_grep_display_still_caps_long_lines():
    assert display_line("short\r") == "short"
    assert display_line("x" * (MAX_LINE_CHARS + 1)).endswith(
        f"[line truncated: {MAX_LINE_CHARS + 1} characters, first {MAX_LINE_CHARS} shown]"
    )


def test_empty_document_has_a_clear_message():
    assert format_read("") == EMPTY_DOCUMENT


def test_offset_past_the_end_names_the_line_count():
    assert format_read("a\nb\nc", offset=9) == (
        "(The document has 3 lines; offset 9 is past the end. Use an offset from 1 to 3.)"
    )
    assert "1 line;" in format_read("only", offset=2)


@pytest.mark.parametrize("limit", [0, -3])
def test_limit_below_one_is_refused(limit):
    with pytest.raises(ValueError, match="limit must be"):
        format_read("a", limit=limit)


def test_negative_offset_is_refused():
    with pytest.raises(ValueError, match="offset must be"):
        format_read("a", offset=-1)
