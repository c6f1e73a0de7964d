import random
import sys
import time

import pytest
import regex

from mcp_tools.engines import grep as grep_module
from mcp_tools.engines.catn import split_lines
from mcp_tools.engines.grep import (
    NO_MATCHES,
    GrepError,
    GrepOptions,
    GrepTimeout,
    grep,
    grep_result,
    plain_literal,
    required_literal,
)
from tests.timing import wall_bound

DOCS = [
    ("Lens/Photosynthesis.md", "# Photosynthesis\n\nPlants convert sunlight.\nChloroplasts do it.\n"),
    ("Lens/Biology 101.md", "Intro\nphotosynthesis matters\nend"),
    ("Lens Edu/Empty.md", ""),
]


_unjoined_grep_result = grep_result


@pytest.fixture(autouse=True, params=["as given", "joined"])
def scan(request, monkeypatch):
    """Every test twice: scanning the documents as given, and scanning them joined beforehand with
    `join_docs` (what the grep tool keeps between calls), in windows small enough to split the tests'
    few short documents among several windows and widths."""
    if request.param == "joined":
        monkeypatch.setattr(grep_module, "WINDOW_CHARS", 48)

        def joined_grep_result(docs, options, **kwargs):
            if isinstance(docs, list) and "joined" not in kwargs:
                kwargs["joined"] = grep_module.join_docs(docs)
            return _unjoined_grep_result(docs, options, **kwargs)

        monkeypatch.setattr(grep_module, "grep_result", joined_grep_result)
        monkeypatch.setitem(globals(), "grep_result", joined_grep_result)
    return request.param


def run(pattern, docs=DOCS, **options):
    return grep(docs, GrepOptions(pattern=pattern, **options))


# -- reference: ripgrep's semantics, done the slow obvious way ----------------------------------


def reference_lines(text, pattern, *, ignore_case=False, multiline=False):
    flags = regex.MULTILINE | (regex.IGNORECASE if ignore_case else 0) | (regex.DOTALL if multiline else 0)
    compiled = regex.compile(pattern, flags)
    lines = split_lines(text)
    if not multiline:
        return [index for index, line in enumerate(lines) if compiled.search(line)]
    found: set[int] = set()
    for match in compiled.finditer(text):
        start, end = match.span()
        first = text.count("\n", 0, start)
        if first >= len(lines):
            continue  # ^/$ after the final newline
        last = text.count("\n", 0, max(start, end - 1))
        found.update(range(first, min(last, len(lines) - 1) + 1))
    return sorted(found)


def reference_count(docs, pattern, **flags):
    out = []
    for path, text in docs:
        lines = reference_lines(text, pattern, **flags)
        if lines:
            out.append(f"{path}:{len(lines)}")
    return "\n".join(out) or NO_MATCHES


WORDS = ["foo", "bar", "baz", "Foo", "café", "日本", "👋", "", " ", "a", "aa", "x"]


def random_docs(seed, count=40):
    rng = random.Random(seed)
    docs = []
    for number in range(count):
        lines = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 5))) for _ in range(rng.randint(0, 8))
        ]
        ending = rng.choice(["", "\n", "\r\n"])
        text = ending.join(lines) if ending else "\n".join(lines)
        if rng.random() < 0.5 and text:
            text += "\n"
        docs.append((f"F/doc{number}.md", text))
    return docs


LINE_PATTERNS = [
    "foo",
    "Foo",
    "^foo",
    "foo$",
    r"\bba\w*",
    "^$",
    "o+",
    r"\s+$",
    "[^a]+",
    r"\w+\s+\w+",
    "x*",
    "",
    r"a\s*",
    r"foo(?= )",
    "日本|👋",
    r"(?<=a )a",
    "caf[eé]",
]


@pytest.mark.parametrize("pattern", LINE_PATTERNS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_count_mode_agrees_with_searching_each_line_alone(pattern, seed):
    docs = random_docs(seed)
    options = GrepOptions(pattern=pattern, output_mode="count", head_limit=0)
    assert grep(docs, options) == reference_count(docs, pattern)


@pytest.mark.parametrize("pattern", ["foo", "FOO", r"caf\w", "日本"])
def test_ignore_case_agrees_with_reference(pattern):
    docs = random_docs(7)
    options = GrepOptions(pattern=pattern, output_mode="count", head_limit=0, ignore_case=True)
    assert grep(docs, options) == reference_count(docs, pattern, ignore_case=True)


@pytest.mark.parametrize("pattern", [r"foo.*?bar", r"foo\nbar", r"^$\n", r"\n\n", ".*", "a\\s+a", "bar\n"])
@pytest.mark.parametrize("seed", [4, 5])
def test_multiline_count_agrees_with_reference(pattern, seed):
    docs = random_docs(seed)
    options = GrepOptions(pattern=pattern, output_mode="count", head_limit=0, multiline=True)
    assert grep(docs, options) == reference_count(docs, pattern, multiline=True)


def test_documents_are_joined_into_chunks_without_changing_results(monkeypatch):
    docs = random_docs(9, count=200)
    expected = {
        p: grep(docs, GrepOptions(pattern=p, output_mode="count", head_limit=0)) for p in LINE_PATTERNS
    }
    monkeypatch.setattr(grep_module, "CHUNK_CHARS", 64)
    for pattern, text in expected.items():
        assert grep(docs, GrepOptions(pattern=pattern, output_mode="count", head_limit=0)) == text


# -- output formats -----------------------------------------------------------------------------


def test_files_with_matches_is_the_default_one_path_a_line():
    assert run("(?i)photosynthesis") == "Lens/Photosynthesis.md\nLens/Biology 101.md"


def test_no_match_text_is_the_seeds():
    assert run("nowhere to be found") == "No matches found."


def test_content_mode_prints_path_line_text():
    assert run("photosynthesis", output_mode="content") == "Lens/Biology 101.md:2:photosynthesis matters"


def test_content_without_line_numbers():
    out = run("Plants", output_mode="content", line_numbers=False, context=1)
    assert out.split("\n") == [
        "Lens/Photosynthesis.md-",
        "Lens/Photosynthesis.md:Plants convert sunlight.",
        "Lens/Photosynthesis.md-Chloroplasts do it.",
    ]


def test_count_mode_counts_matching_lines_not_matches():
    docs = [("A.md", "aa aa\nb\naa\n")]
    assert run("aa", docs=docs, output_mode="count") == "A.md:2"


def test_line_numbers_are_right_after_unicode_and_emoji():
    text = "😀😀😀\n日本語 text\ncafé\n\nZiel 🎯 hier\n"
    out = run("Ziel|café", docs=[("U.md", text)], output_mode="content")
    assert out == "U.md:3:café\nU.md:5:Ziel 🎯 hier"


def test_context_lines_are_marked_and_overlapping_groups_merge():
    text = "\n".join(f"l{n}" for n in range(1, 11))
    out = run("l3|l5", docs=[("D.md", text)], output_mode="content", context=1)
    assert out.split("\n") == ["D.md-2-l2", "D.md:3:l3", "D.md-4-l4", "D.md:5:l5", "D.md-6-l6"]


def test_separator_between_distant_groups_and_between_files():
    text = "\n".join(f"l{n}" for n in range(1, 11))
    docs = [("D.md", text), ("E.md", "zero\nl9\n")]
    out = run(r"l2\b|l9", docs=docs, output_mode="content", before=1)
    assert out.split("\n") == [
        "D.md-1-l1",
        "D.md:2:l2",
        "--",
        "D.md-8-l8",
        "D.md:9:l9",
        "--",
        "E.md-1-zero",
        "E.md:2:l9",
    ]


def test_adjacent_groups_touch_without_separator():
    text = "a\nb\nc\nd"
    out = run("^a|^d", docs=[("T.md", text)], output_mode="content", after=1, before=1)
    assert out.split("\n") == ["T.md:1:a", "T.md-2-b", "T.md-3-c", "T.md:4:d"]


def test_no_separators_without_context():
    text = "hit\nx\nx\nhit"
    assert run("hit", docs=[("T.md", text)], output_mode="content") == "T.md:1:hit\nT.md:4:hit"


def test_context_overrides_before_and_after():
    text = "a\nb\nc\nd\ne"
    out = run("^c", docs=[("T.md", text)], output_mode="content", before=2, after=2, context=0)
    assert out == "T.md:3:c"


def test_context_is_clipped_at_document_edges():
    out = run("^a$", docs=[("T.md", "a\nb")], output_mode="content", context=5)
    assert out == "T.md:1:a\nT.md-2-b"


def test_ignore_case():
    assert run("PLANTS", ignore_case=True) == "Lens/Photosynthesis.md"
    assert run("PLANTS") == NO_MATCHES


def test_anchors_work_per_line_not_per_document():
    assert run("^Chloroplasts", output_mode="count") == "Lens/Photosynthesis.md:1"
    assert run("sunlight.$", output_mode="content") == "Lens/Photosynthesis.md:3:Plants convert sunlight."


def test_matches_never_span_lines_without_multiline():
    docs = [("S.md", "alpha   \n   beta\n")]
    assert run(r"alpha\s+beta", docs=docs) == NO_MATCHES
    assert run(r"alpha\s+", docs=docs, output_mode="content") == "S.md:1:alpha   "


def test_pattern_naming_a_newline_needs_multiline():
    with pytest.raises(GrepError, match="multiline"):
        run(r"alpha\nbeta")
    assert run(r"[^\n]+", docs=[("S.md", "x")]) == "S.md"


def test_multiline_prints_every_line_a_match_spans():
    text = "intro\nstart here\nmiddle\nend here\noutro"
    out = run(r"start.*?end", docs=[("M.md", text)], multiline=True, output_mode="content")
    assert out.split("\n") == ["M.md:2:start here", "M.md:3:middle", "M.md:4:end here"]


def test_multiline_match_never_runs_into_the_next_document():
    docs = [("A.md", "begin one"), ("B.md", "two end")]
    assert run(r"begin.*end", docs=docs, multiline=True) == NO_MATCHES
    assert run(r"begin.*", docs=docs, multiline=True, output_mode="count") == "A.md:1"


def test_absolute_anchors_mean_the_start_and_end_of_a_document():
    docs = [("A.md", "foo\nfoo bar"), ("B.md", "x\nfoo bar")]
    assert run(r"\Afoo", docs=docs, output_mode="count") == "A.md:1"
    assert run(r"bar\Z", docs=docs, output_mode="content") == "A.md:2:foo bar\nB.md:2:foo bar"


def test_empty_documents_and_final_newlines_have_no_phantom_line():
    docs = [("E.md", ""), ("N.md", "text\n")]
    assert run("^$", docs=docs) == NO_MATCHES
    assert run("^", docs=docs, output_mode="count") == "N.md:1"


def test_long_lines_are_truncated_in_content_output():
    line = "needle " + "x" * 5000
    out = run("needle", docs=[("L.md", line)], output_mode="content")
    assert len(out) < 2200
    assert "line truncated" in out


# -- pagination ---------------------------------------------------------------------------------


def many_files(count):
    return [(f"F/{n:03}.md", "match\n") for n in range(count)]


def test_head_limit_defaults_to_250_and_says_how_to_get_more():
    result = grep_result(many_files(300), GrepOptions(pattern="match"))
    lines = result.text.split("\n")
    assert lines[:250] == [f"F/{n:03}.md" for n in range(250)]
    assert result.truncated
    assert "offset=250" in lines[-1]


def test_offset_skips_entries_and_reports_the_page():
    result = grep_result(many_files(300), GrepOptions(pattern="match", head_limit=100, offset=250))
    lines = result.text.split("\n")
    assert lines[:50] == [f"F/{n:03}.md" for n in range(250, 300)]
    assert not result.truncated
    assert lines[-1] == "[Showing results 251-300 of 300.]"


@pytest.mark.parametrize("limit", [None, 0])
def test_head_limit_none_or_zero_is_unlimited(limit):
    result = grep_result(many_files(300), GrepOptions(pattern="match", head_limit=limit))
    assert len(result.text.split("\n")) == 300
    assert not result.truncated
    assert result.files == 300


def test_content_pagination_counts_output_lines():
    docs = [("A.md", "m1\nm2\nm3\nm4\nm5")]
    result = grep_result(docs, GrepOptions(pattern="m", output_mode="content", head_limit=2, offset=1))
    assert result.text.split("\n")[:2] == ["A.md:2:m2", "A.md:3:m3"]
    assert "offset=3" in result.text


def test_offset_past_the_results_says_so():
    out = run("match", docs=many_files(3), offset=10)
    assert out == "No matches found at offset 10: there are only 3 results."


def test_result_counts():
    result = grep_result(DOCS, GrepOptions(pattern="o", output_mode="count", head_limit=0))
    assert result.files == 2
    assert result.matches == 5
    assert grep_result(DOCS, GrepOptions(pattern="o")).matches is None


# -- errors and timeouts ------------------------------------------------------------------------


def test_invalid_regex_names_the_problem():
    with pytest.raises(GrepError, match=r"Invalid regular expression '\(unclosed': missing \)"):
        run("(unclosed")


@pytest.mark.parametrize(
    "options",
    [
        {"output_mode": "lines"},
        {"before": -1},
        {"context": -2},
        {"head_limit": -5},
        {"offset": -1},
        {"timeout": 0},
    ],
)
def test_bad_options_are_refused(options):
    with pytest.raises(GrepError):
        run("x", **options)


def spent_until_timeout(pattern, docs, **options):
    """(CPU seconds, wall seconds) until grep gave up with GrepTimeout.

    The CPU is this thread's (grep runs in it): the worker process's also counts whatever other
    tests left running in their threads. On a machine loaded by other processes the wall time
    stretches, so it only gets a loose bound, stretched by the load (tests/timing.py).
    """
    cpu, wall = time.thread_time(), time.monotonic()
    with pytest.raises(GrepTimeout, match="took longer than"):
        run(pattern, docs=docs, **options)
    return time.thread_time() - cpu, time.monotonic() - wall


def test_catastrophic_pattern_times_out_quickly():
    docs = [(f"Cat/{n}.md", "a" * 40 + "!\n") for n in range(50)]
    cpu, wall = spent_until_timeout(r"(a|aa)+$", docs, timeout=1.0)
    assert cpu < 1.5
    assert wall < wall_bound(10)


@pytest.mark.parametrize("mode", ["content", "count", "files_with_matches"])
def test_timeout_holds_across_many_documents_in_every_mode(mode):
    # Each document alone is quick; together they outlast the one deadline.
    docs = [(f"Cat/{n}.md", "a" * 22 + "!") for n in range(2000)]
    cpu, wall = spent_until_timeout(r"(a|aa)+$", docs, timeout=0.5, output_mode=mode)
    assert cpu < 1.0
    assert wall < wall_bound(10)


def test_nested_quantifier_on_a_long_line_times_out_within_the_budget():
    # regex shortcuts (a+)+$ on short lines, but not on a 5,000-character one.
    cpu, wall = spent_until_timeout(r"(a+)+$", [("A.md", "a" * 5000 + "b")], timeout=2.0)
    assert cpu < 2.5
    assert wall < wall_bound(15)


def test_nested_quantifier_on_short_lines_simply_answers():
    assert run(r"(a+)+$", docs=[("A.md", "a" * 30 + "b\naaa")], output_mode="content") == "A.md:2:aaa"


def test_timeout_is_a_grep_error_and_a_value_error():
    assert issubclass(GrepTimeout, GrepError)
    assert issubclass(GrepError, ValueError)


# -- literal analysis ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        ("hello world", "hello world"),
        (r"foo\.bar", "foo.bar"),
        (r"\bword\w+", None),
        (r"prefix\d+suffix", "prefix"),
        ("ab?cdef", "cdef"),
        ("abc+de", "abc"),
        ("x(yz)*longer", "longer"),
        ("[abc]literal", "literal"),
        ("foo|barbaz", None),
        ("(?i)Name", None),
        ("a{2}bc", None),
        ("^## .*world$", "world"),
        ("[[:alpha:]]]xyz", None),
        (r"long\bfoo|bar", None),
        (r"x{2}|longer", None),
    ],
)
def test_required_literal(pattern, literal):
    assert required_literal(pattern) == literal


def test_plain_literal_detection():
    assert plain_literal("Note 12") == "Note 12"
    assert plain_literal("Note.12") is None
    assert plain_literal("") is None


def test_prefilter_never_drops_a_document_that_matches():
    docs = [("A.md", "id: 42 units"), ("B.md", "id: units")]
    assert run(r"id: \d+ units", docs=docs) == "A.md"
    assert run(r"ID: \d+ UNITS", docs=docs, ignore_case=True) == "A.md"
    # regex pairs "I" with the dotless i; the -i prefilter must not lose it.
    assert run("LIST", docs=[("T.md", "l\u0131st")], ignore_case=True) == "T.md"


def test_nothing_found_in_a_generated_vault():
    # Speed is measured in bench/run_grep.py, not here: a timed assertion fails on a loaded machine.
    rng = random.Random(3)
    vocabulary = [f"word{n}" for n in range(400)]
    docs = [
        (f"Vault/{n}.md", "\n".join(" ".join(rng.choices(vocabulary, k=12)) for _ in range(25)))
        for n in range(2000)
    ]
    assert run("no such text", docs=docs) == NO_MATCHES
    assert run(r"word12\d\d", docs=docs) == NO_MATCHES
    assert run(r"word12\d", docs=docs) != NO_MATCHES


@pytest.mark.parametrize("mode", ["files_with_matches", "content", "count"])
@pytest.mark.parametrize("pattern", ["foo", "café|日本", r"\w+ 👋", "^a", "x*", "(?i)FOO"])
@pytest.mark.parametrize("head_limit", [3, 0])
def test_joined_windows_give_the_same_page_in_document_order(monkeypatch, mode, pattern, head_limit):
    docs = random_docs(11, count=120)
    options = GrepOptions(pattern=pattern, output_mode=mode, head_limit=head_limit)
    expected = _unjoined_grep_result(docs, options).text
    for window in (16, 200, 1 << 19):
        monkeypatch.setattr(grep_module, "WINDOW_CHARS", window)
        joined = grep_module.join_docs(docs)
        assert sum(len(chunk.docs) for w in joined.windows for chunk in w) == len(docs)
        assert _unjoined_grep_result(docs, options, joined=joined).text == expected


def test_joined_chunks_keep_each_width_apart():
    docs = [("a.md", "plain"), ("b.md", "café"), ("c.md", "日本"), ("d.md", "👋"), ("e.md", "more")]
    joined = grep_module.join_docs(docs)
    assert len(joined.windows) == 1
    by_text = {chunk.text: chunk.order for chunk in joined.windows[0]}
    assert by_text == {"plain\ncafé\nmore": [0, 1, 4], "日本": [2], "👋": [3]}
    # Only joined chunks cost memory; a lone document is its own text.
    assert joined.bytes == sys.getsizeof("plain\ncafé\nmore")


def test_joined_documents_of_another_list_are_not_used():
    joined = grep_module.join_docs([("x.md", "foo")])
    assert _unjoined_grep_result(DOCS, GrepOptions(pattern="foo"), joined=joined).text == NO_MATCHES
