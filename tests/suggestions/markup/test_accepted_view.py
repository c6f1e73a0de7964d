import pytest

from suggestions.markup.accepted_view import build_accepted_view
from suggestions.markup.criticmarkup import accept_all

META = '{"author":"claude","timestamp":1}@@'


def test_view_text_accepts_everything() -> None:
    raw = f"a {{--{META}b--}}{{++{META}c++}} d {{~~e~>f~~}} {{==g==}}{{>>h<<}} {{++i++}}{{--j--}}"
    view = build_accepted_view(raw)
    assert view.text == accept_all(raw) == "a c d f g i"
    assert [c.kind for c in view.changes] == ["replace", "substitution", "highlight", "insert", "delete"]


def test_document_without_markup_maps_identity() -> None:
    view = build_accepted_view("plain ✓ text")
    assert view.text == "plain ✓ text"
    assert all(view.to_raw(i) == i == view.to_raw(i, prefer="right") for i in range(len(view.text) + 1))
    assert view.changes == []


def test_empty_document() -> None:
    view = build_accepted_view("")
    assert view.text == ""
    assert view.to_raw(0) == 0 and view.to_raw(0, prefer="right") == 0
    assert view.raw_range(0, 0) == (0, 0)


def test_find_in_view_and_map_back_to_raw() -> None:
    raw = f"Héllo {{--{META}wörld--}}{{++{META}世界++}} and 🎉 friends {{>>note<<}}today."
    view = build_accepted_view(raw)
    assert view.text == "Héllo 世界 and 🎉 friends today."
    needle = "and 🎉 friends"
    start = view.text.index(needle)
    raw_start, raw_end = view.raw_range(start, start + len(needle))
    assert raw[raw_start:raw_end] == needle
    # A match spanning the comment includes the comment's markup in the middle, nothing at the edges.
    needle = "friends today"
    start = view.text.index(needle)
    raw_start, raw_end = view.raw_range(start, start + len(needle))
    assert raw[raw_start:raw_end] == "friends {>>note<<}today"


def test_match_inside_an_addition_maps_into_its_content() -> None:
    raw = "x {--old--}{++new words++} y"
    view = build_accepted_view(raw)
    start = view.text.index("words")
    raw_start, raw_end = view.raw_range(start, start + 5)
    assert raw[raw_start:raw_end] == "words"
    assert raw_start > raw.index("{++")


def test_to_raw_left_and_right_around_markup() -> None:
    raw = "ab{--cd--}ef"
    view = build_accepted_view(raw)
    assert view.text == "abef"
    assert view.to_raw(2, prefer="left") == 2
    assert view.to_raw(2, prefer="right") == raw.index("ef")
    assert view.to_raw(1) == 1 and view.to_raw(3) == raw.index("f")
    assert view.to_raw(4) == len(raw)


def test_markup_at_document_edges() -> None:
    raw = "{--gone--}mid{>>end<<}"
    view = build_accepted_view(raw)
    assert view.text == "mid"
    assert view.to_raw(0, prefer="left") == 0
    assert view.to_raw(0, prefer="right") == raw.index("mid")
    assert view.to_raw(3, prefer="left") == raw.index("{>>")
    assert view.to_raw(3, prefer="right") == len(raw)
    assert view.raw_range(0, 3) == (raw.index("mid"), raw.index("{>>"))


def test_to_view_inverts_to_raw_and_collapses_markup() -> None:
    raw = "ab{--cd--}{++XY++}ef"
    view = build_accepted_view(raw)
    assert view.text == "abXYef"
    for i in range(len(view.text) + 1):
        assert view.to_view(view.to_raw(i, prefer="right")) == i
    assert view.to_view(raw.index("cd")) == 2  # inside the deleted text
    assert view.to_view(len(raw)) == len(view.text)


def test_out_of_range_indices_raise() -> None:
    view = build_accepted_view("abc")
    with pytest.raises(IndexError):
        view.to_raw(4)
    with pytest.raises(IndexError):
        view.to_view(-1)
    with pytest.raises(ValueError):
        view.raw_range(2, 1)


def test_large_document_builds_linearly() -> None:
    raw = "word {--old--}{++new++} " * 20_000
    view = build_accepted_view(raw)
    assert len(view.changes) == 20_000
    assert view.text == "word new " * 20_000
    i = len(view.text) - 4
    assert raw[view.to_raw(i, prefer="right")] == "n"
