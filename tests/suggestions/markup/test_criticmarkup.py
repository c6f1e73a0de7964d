import pytest

from suggestions.markup.criticmarkup import (
    Mark,
    Span,
    StaleChangeError,
    accept_all,
    accept_edits,
    apply_spans,
    contains_delimiters,
    group_changes,
    parse,
    parse_changes,
    reject_all,
    reject_edits,
    render_addition,
    render_comment,
    render_deletion,
    render_metadata,
    render_replacement,
)

META = '{"author":"claude","timestamp":1}@@'


# --- parse -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "kind", "content"),
    [
        ("a {++added++} b", "addition", "added"),
        ("a {--gone--} b", "deletion", "gone"),
        ("a {==look==} b", "highlight", "look"),
        ("a {>>why<<} b", "comment", "why"),
    ],
)
def test_parse_simple_kinds_without_metadata(source: str, kind: str, content: str) -> None:
    [mark] = parse(source)
    assert mark.kind == kind
    assert mark.content == content
    assert mark.metadata is None
    assert source[mark.start : mark.end] == source[2:-2]
    assert source[mark.content_start : mark.content_end] == content


@pytest.mark.parametrize(
    "opening,closing,kind",
    [
        ("{++", "++}", "addition"),
        ("{--", "--}", "deletion"),
        ("{==", "==}", "highlight"),
        ("{>>", "<<}", "comment"),
    ],
)
def test_parse_metadata_prefix(opening: str, closing: str, kind: str) -> None:
    source = f"x{opening}{META}body{closing}y"
    [mark] = parse(source)
    assert mark.kind == kind
    assert mark.metadata == {"author": "claude", "timestamp": 1}
    assert mark.content == "body"
    assert source[mark.content_start : mark.content_end] == "body"
    assert (mark.start, mark.end) == (1, len(source) - 1)


def test_parse_substitution_with_and_without_metadata() -> None:
    source = "say {~~hello~>goodbye~~} and {~~" + META + "red~>blue~~}"
    first, second = parse(source)
    assert (first.kind, first.content, first.new_content, first.metadata) == (
        "substitution",
        "hello",
        "goodbye",
        None,
    )
    assert source[first.content_start : first.content_end] == "hello"
    assert first.new_content_start is not None and first.new_content_end is not None
    assert source[first.new_content_start : first.new_content_end] == "goodbye"
    assert second.metadata == {"author": "claude", "timestamp": 1}
    assert (second.content, second.new_content) == ("red", "blue")


def test_substitution_without_separator_is_not_a_mark_but_inner_marks_count() -> None:
    source = "{~~ plain {++x++} ~~}"
    [mark] = parse(source)
    assert mark.kind == "addition"
    assert mark.content == "x"


def test_parse_is_non_greedy_first_closing_wins() -> None:
    source = "{++a++} b {++c++}"
    marks = parse(source)
    assert [m.content for m in marks] == ["a", "c"]
    nested = parse("{++outer {++inner++} tail++}")
    assert [m.content for m in nested] == ["outer {++inner"]


def test_invalid_metadata_is_plain_content() -> None:
    [mark] = parse('{--{"author": nope}@@old--}')
    assert mark.metadata is None
    assert mark.content == '{"author": nope}@@old'
    [not_object] = parse("{++[1,2]@@x++}")
    assert not_object.metadata is None and not_object.content == "[1,2]@@x"


def test_json_without_separator_is_content() -> None:
    [mark] = parse('{++{"a":1} text++}')
    assert mark.metadata is None
    assert mark.content == '{"a":1} text'


def test_marks_span_lines_and_code_is_not_special() -> None:
    source = "```\n{++in code++}\n```\n{++line one\nline two++}"
    marks = parse(source)
    assert [m.content for m in marks] == ["in code", "line one\nline two"]


def test_unclosed_mark_is_plain_text() -> None:
    assert parse("{++ never closed") == []
    assert accept_all("{++ never closed") == "{++ never closed"


# --- grouping ----------------------------------------------------------------------------------------


def test_adjacent_deletion_and_addition_form_one_replacement() -> None:
    source = f"The {{--{META}quick--}}{{++{META}slow++}} fox"
    [change] = parse_changes(source)
    assert change.kind == "replace"
    assert (change.old, change.new) == ("quick", "slow")
    assert change.metadata == {"author": "claude", "timestamp": 1}
    assert change.author == "claude" and change.timestamp_ms == 1
    assert source[change.start : change.end].startswith("{--") and source[change.end :] == " fox"
    assert len(change.marks) == 2


def test_separated_deletion_and_addition_stay_apart() -> None:
    changes = parse_changes("{--a--} {++b++}")
    assert [c.kind for c in changes] == ["delete", "insert"]
    assert [(c.old, c.new) for c in changes] == [("a", ""), ("", "b")]


def test_addition_then_deletion_is_not_a_replacement() -> None:
    changes = parse_changes("{++b++}{--a--}")
    assert [c.kind for c in changes] == ["insert", "delete"]


def test_comment_directly_after_mark_is_its_reply_and_thread() -> None:
    source = "{==text==}{>>first<<}{>>second<<} {>>alone<<}"
    changes = parse_changes(source)
    assert [c.kind for c in changes] == ["highlight", "comment"]
    highlight, alone = changes
    assert highlight.comment is not None and highlight.comment.content == "first"
    assert [c.content for c in highlight.comments] == ["first", "second"]
    assert highlight.end == source.index(" {>>alone")
    assert alone.comment is None and alone.marks[0].content == "alone"


def test_replacement_reply_comment_attaches_after_addition() -> None:
    [change] = parse_changes("{--a--}{++b++}{>>because<<}")
    assert change.kind == "replace"
    assert change.comment is not None and change.comment.content == "because"


def test_comment_with_space_is_not_a_reply() -> None:
    changes = parse_changes("{++x++} {>>note<<}")
    assert [c.kind for c in changes] == ["insert", "comment"]
    assert changes[0].comment is None


def test_group_changes_of_empty_list() -> None:
    assert group_changes([]) == []


# --- delimiters and metadata -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain text", None),
        ("a {++ b", "{++"),
        ("x ++} then {--", "++}"),
        ("a ~> b", "~>"),
        ("{>>c<<}", "{>>"),
        ("end ==}", "==}"),
        ("{-- not { - -", "{--"),
        ("braces {+ +} are fine", None),
    ],
)
def test_contains_delimiters(text: str, expected: str | None) -> None:
    assert contains_delimiters(text) == expected


@pytest.mark.parametrize(
    "author",
    [
        "claude",
        "ev}il@@",
        "x++}y",
        'quote " and \\ backslash',
        "{--hidden--}",
        "émoji 🎉 作者",
        "~~}<<}==}~>",
    ],
)
def test_render_metadata_round_trips_through_parse(author: str) -> None:
    meta = render_metadata(author, 1_700_000_000_000)
    assert contains_delimiters(meta) is None
    for rendered in (render_addition("new", meta), render_deletion("old", meta), render_comment("why", meta)):
        [mark] = parse(rendered)
        assert mark.metadata == {"author": author, "timestamp": 1_700_000_000_000}
        assert mark.content in ("new", "old", "why")


def test_render_metadata_is_compact_json() -> None:
    assert render_metadata("claude", 5) == '{"author":"claude","timestamp":5}@@'


def test_render_replacement_leaves_out_empty_side() -> None:
    assert render_replacement("a", "b") == "{--a--}{++b++}"
    assert render_replacement("", "b") == "{++b++}"
    assert render_replacement("a", "", META) == "{--" + META + "a--}"


# --- accept / reject ---------------------------------------------------------------------------------


def _decide(source: str, *, accept: bool) -> tuple[str, list[Span]]:
    [change] = parse_changes(source)
    spans = accept_edits(source, change) if accept else reject_edits(source, change)
    return apply_spans(source, spans), spans


@pytest.mark.parametrize(
    ("source", "accepted", "rejected"),
    [
        ("a {++new ++}b", "a new b", "a b"),
        ("a {--old --}b", "a b", "a old b"),
        ("a {~~x~>y~~} b", "a y b", "a x b"),
        ("a {==x==} b", "a x b", "a x b"),
        ("a {>>note<<} b", "a  b", "a  b"),
        (
            f"The {{--{META}quick brown--}}{{++{META}slow red++}} fox",
            "The slow red fox",
            "The quick brown fox",
        ),
        ("a {--x--}{++y++}{>>why<<} b", "a y b", "a x b"),
        (f"a {{~~{META}x~>y~~}}{{>>r1<<}}{{>>r2<<}}!", "a y!", "a x!"),
    ],
)
def test_accept_and_reject_leave_exact_text(source: str, accepted: str, rejected: str) -> None:
    assert _decide(source, accept=True)[0] == accepted
    assert _decide(source, accept=False)[0] == rejected


def test_spans_are_descending_and_never_cover_kept_characters() -> None:
    source = f"héllo {{--{META}wörld 🌍--}}{{++{META}世界 👋++}} end"
    result, spans = _decide(source, accept=True)
    assert result == "héllo 世界 👋 end"
    assert spans == sorted(spans, key=lambda s: s.start, reverse=True)
    kept_start = source.index("世界")
    kept = range(kept_start, kept_start + len("世界 👋"))
    assert all(i not in kept for s in spans for i in range(s.start, s.end))
    # Two spans: the whole deletion plus the addition's opening (merged), and the closing.
    assert len(spans) == 2


def test_reject_keeps_deleted_characters_in_place() -> None:
    source = "x{--café 🎉--}{++tea++}y"
    result, spans = _decide(source, accept=False)
    assert result == "xcafé 🎉y"
    content_start = source.index("café")
    assert Span(1, content_start) in spans
    assert all(not (s.start <= content_start < s.end) for s in spans)


def test_applying_spans_in_returned_order_one_by_one() -> None:
    source = "a {~~b~>c~~} d"
    [change] = parse_changes(source)
    text = source
    for span in accept_edits(source, change):
        text = text[: span.start] + text[span.end :]
    assert text == "a c d"


def test_stale_change_is_refused() -> None:
    source = "a {--x--}{++y++} b"
    [change] = parse_changes(source)
    with pytest.raises(StaleChangeError, match="suggestion no longer found in document"):
        accept_edits("a {--x--}{++z++} b", change)
    with pytest.raises(StaleChangeError):
        reject_edits("a x b", change)
    with pytest.raises(StaleChangeError):
        accept_edits("short", change)


def test_apply_spans_rejects_overlap() -> None:
    with pytest.raises(ValueError):
        apply_spans("abcdef", [Span(0, 3), Span(2, 4)])
    assert apply_spans("abcdef", [Span(4, 5), Span(0, 1)]) == "bcdf"


def test_accept_all_and_reject_all_mixed_document() -> None:
    source = (
        "# T\n{++Intro. ++}Keep {--this--} and {~~that~>those~~}.\n"
        "{==Mark==}{>>check<<} done {>>bye<<}\n{--old--}{++new++} 中文{++字++}"
    )
    assert accept_all(source) == "# T\nIntro. Keep  and those.\nMark done \nnew 中文字"
    assert reject_all(source) == "# T\nKeep this and that.\nMark done \nold 中文"


def test_mark_fields_are_python_string_indices_with_astral_characters() -> None:
    source = "🎉🎉{++🎈++}"
    [mark] = parse(source)
    assert isinstance(mark, Mark)
    assert (mark.start, mark.content_start, mark.content_end, mark.end) == (2, 5, 6, 9)
