"""The review page's note rendering: Markdown in, sanitized HTML out, suggestions as marks in place."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from suggestions.markup.criticmarkup import render_comment, render_metadata, render_replacement
from suggestions.review.rendering import markdown_html, render_note

META = render_metadata("claude", 1_700_000_000_000, suggestion_id="abc123")
HOSTILE = (
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "[click](javascript:alert(1))",
    '<a href="javascript:alert(1)">x</a>',
    '<svg onload="alert(1)">',
    '[[x" onmouseover="alert(1)]]',
    "<iframe src=//evil.example></iframe>",
)


def _tags(html: str) -> set[str]:
    return {m.lower() for m in re.findall(r"<\s*([a-zA-Z0-9]+)", html)}


def test_a_replacement_renders_in_place_with_its_number_and_id() -> None:
    raw = f"# Fox\n\nThe {render_replacement('quick brown', 'slow red', META)} fox.\n"
    note = render_note(raw)
    assert '<del class="sg sg-del" data-change="1" data-uid="abc123">quick brown</del>' in note.marked
    assert '<ins class="sg sg-ins" data-change="1" data-uid="abc123">slow red</ins>' in note.marked
    assert "<h1>Fox</h1>" in note.marked and "@@" not in note.marked and "{--" not in note.marked
    assert "<p>The slow red fox.</p>" in note.accepted
    assert "<p>The quick brown fox.</p>" in note.rejected


def test_marks_over_several_lines_keep_the_block_structure() -> None:
    raw = f"- one {render_replacement('', 'two' + chr(10) + '- three', META)}\n- four\n"
    note = render_note(raw)
    assert note.marked.count("<li>") == 3
    assert note.marked.count('<ins class="sg sg-ins"') == 2  # closed and reopened around the line break


def test_a_deleted_heading_stays_a_heading() -> None:
    raw = f"{render_replacement('## Gone', '', META)}\ntext\n"
    assert "<h2><del" in render_note(raw).marked


def test_the_assistants_comment_is_not_part_of_the_text() -> None:
    raw = f"a {render_replacement('b', 'c', META)}{render_comment('because', META)} d\n"
    note = render_note(raw)
    assert "because" not in note.marked and "because" not in note.accepted
    assert note.changes[0].comment is not None and note.changes[0].comment.content == "because"


def test_wikilinks_become_links_to_their_documents_or_stay_marked_unresolved() -> None:
    def resolve(target: str) -> str | None:
        return "/admin/lensrelay/document/7/change/" if target == "Welcome" else None

    html = markdown_html("See [[Welcome|the start]], [[Welcome#Intro]] and [[Nowhere]].", resolve=resolve)
    assert '<a href="/admin/lensrelay/document/7/change/" class="wikilink"' in html
    assert ">the start</a>" in html and ">Welcome#Intro</a>" in html
    assert '<span class="wikilink unresolved">Nowhere</span>' in html


def test_hostile_note_text_renders_inert() -> None:
    for payload in HOSTILE:
        raw = f"{payload}\n\nx {render_replacement('a', payload, META)} y\n"
        note = render_note(raw, resolve=lambda t: None)
        for html in (note.marked, note.accepted, note.rejected):
            assert _tags(html) <= {"p", "del", "ins", "sup", "a", "span", "h1", "h2"}, html
            assert not any("javascript:" in tag for tag in re.findall(r"<[^>]*>", html)), html
            assert not re.search(r"<[^>]+\son\w+=", html), html


def test_a_writer_cannot_forge_a_suggestion_mark() -> None:
    raw = '<del class="sg sg-del" data-uid="abc123">fake</del> \ue000\U000f0000text\ue001\U000f0000\n'
    note = render_note(raw)
    assert "<del" not in note.marked and "&lt;del" in note.marked  # shown as text, never as a tag
    assert note.marked == '<p>&lt;del class="sg sg-del" data-uid="abc123"&gt;fake&lt;/del&gt; text</p>\n'
    assert note.changes == []


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet=st.characters(codec="utf-8"), max_size=30),
            st.sampled_from([*HOSTILE, "\n", "\n\n", "# ", "- ", "> ", "`", "```\n", "[[", "]]", "**"]),
            st.builds(
                lambda old, new: render_replacement(old, new, META),
                st.text(alphabet="ab <>\n#-*`\"'", max_size=8),
                st.text(alphabet="cd <>\n#-*`\"'", max_size=8),
            ),
        ),
        max_size=12,
    )
)
def test_any_text_renders_to_allowlisted_markup_only(pieces: list[str]) -> None:
    note = render_note("".join(pieces))
    allowed = {"p", "del", "ins", "sup", "a", "span", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li",
               "pre", "code", "em", "strong", "blockquote", "hr", "br", "mark", "s", "table", "thead",
               "tbody", "tr", "th", "td"}  # fmt: skip
    for html in (note.marked, note.accepted, note.rejected):
        assert _tags(html) <= allowed, html
        assert not re.search(r"<[^>]+\son\w+\s*=", html), html
        assert not any("javascript:" in tag for tag in re.findall(r"<[^>]*>", html)), html


def test_the_hunks_of_one_suggestion_share_its_number() -> None:
    other = render_metadata("claude", 1, suggestion_id="other")
    first, second = render_replacement("", "new ", META), render_replacement("c", "", META)
    raw = f"{first}a b {second} {render_replacement('d', 'e', other)}\n"
    note = render_note(raw)
    assert note.numbers == [1, 1, 2]
    assert note.number_of("abc123") == 1 and note.number_of("other") == 2 and note.number_of("none") is None
    assert re.findall(r'<sup class="sg-badge"[^>]*>(\d)</sup>', note.marked) == ["1", "1", "2"]


def test_frontmatter_reads_as_a_code_block() -> None:
    note = render_note("---\ntags:\n  - a\nstatus: draft\n---\n# Title\n")
    for html in (note.marked, note.accepted, note.rejected):
        assert html.startswith("<pre><code>tags:\n  - a\nstatus: draft\n</code></pre>")
        assert "<hr" not in html and "<h1>Title</h1>" in html
