import random
import re
import time

from lensrelay.text.wikilinks import WikiLink, code_regions, extract_wikilinks, target_span


def targets(markdown):
    return [link.target for link in extract_wikilinks(markdown)]


def test_all_link_forms():
    markdown = "[[A]] [[B|bee]] [[C#Intro]] [[D#Intro|dee]] ![[E.png]] [[#Local]]"
    assert extract_wikilinks(markdown) == [
        WikiLink(target="A", heading=None, alias=None, embed=False, start=0, end=5),
        WikiLink(target="B", heading=None, alias="bee", embed=False, start=6, end=15),
        WikiLink(target="C", heading="Intro", alias=None, embed=False, start=16, end=27),
        WikiLink(target="D", heading="Intro", alias="dee", embed=False, start=28, end=43),
        WikiLink(target="E.png", heading=None, alias=None, embed=True, start=44, end=54),
        WikiLink(target="", heading="Local", alias=None, embed=False, start=55, end=65),
    ]


def test_spans_cover_the_whole_token():
    markdown = "see ![[Note#Part|shown]] and [[Other]]."
    spans = [markdown[link.start : link.end] for link in extract_wikilinks(markdown)]
    assert spans == ["![[Note#Part|shown]]", "[[Other]]"]


def test_paths_nested_headings_block_refs_and_whitespace():
    links = extract_wikilinks("[[Notes/Ideas.md]] [[X#A#B]] [[Y#^block1]] [[  Spaced name  |a]]")
    assert [(link.target, link.heading) for link in links] == [
        ("Notes/Ideas.md", None),
        ("X", "A#B"),
        ("Y", "^block1"),
        ("Spaced name", None),
    ]


def test_table_escaped_pipe():
    markdown = "| [[Target\\|alias]] | x |"
    (link,) = extract_wikilinks(markdown)
    assert (link.target, link.alias) == ("Target", "alias")
    assert markdown[slice(*target_span(markdown, link))] == "Target"


def test_unicode_targets_and_str_indices():
    markdown = "😀 é [[日本語のノート|メモ]] [[Crème brûlée]] [[🚀 Launch]]"
    links = extract_wikilinks(markdown)
    assert [link.target for link in links] == ["日本語のノート", "Crème brûlée", "🚀 Launch"]
    assert markdown[links[0].start : links[0].end] == "[[日本語のノート|メモ]]"
    assert markdown[links[2].start : links[2].end] == "[[🚀 Launch]]"


def test_empty_and_malformed_links_are_not_links():
    assert targets("[[]] [[#]] [[|x]] [[a\nb]] [single] [[open") == []


def test_innermost_brackets_win():
    assert targets("[[a [[b]] [[[c]]]") == ["b", "c"]


def test_fenced_code_blocks_are_ignored():
    markdown = (
        "[[before]]\n"
        "```python\n[[in backticks]]\n```\n"
        "~~~\n[[in tildes]]\n~~~\n"
        "````\n```\n[[longer fence]]\n```\n````\n"
        "[[after]]\n"
    )
    assert targets(markdown) == ["before", "after"]


def test_fence_closes_only_on_same_character_and_at_least_the_same_length():
    markdown = "~~~~\n```\n[[x]]\n~~~\n[[y]]\n~~~~~\n[[z]]"
    assert targets(markdown) == ["z"]


def test_unclosed_fence_runs_to_end_of_document():
    assert targets("[[a]]\n```\n[[b]]\n\n[[c]]") == ["a"]


def test_indented_and_quoted_fences():
    markdown = "- item\n    ```\n    [[in list code]]\n    ```\n> ```\n> [[quoted code]]\n> ```\n[[out]]"
    assert targets(markdown) == ["out"]


def test_backtick_fence_info_with_backtick_is_inline_code_not_a_fence():
    assert targets("```a`b``` [[y]]\n[[z]]") == ["y", "z"]


def test_inline_code_spans_are_ignored():
    markdown = "`[[a]]` [[b]] ``x ` [[c]]`` [[d]] ```[[e]]``` [[f]]"
    assert targets(markdown) == ["b", "d", "f"]


def test_inline_code_needs_an_equal_length_closer():
    # The double backtick finds no double closer, so it is literal; the single ones pair up.
    assert targets("``not code` [[a]] `") == []
    assert targets("`` open [[a]] ` still not closed") == ["a"]


def test_inline_code_spans_lines_but_not_paragraphs():
    assert targets("`code\n[[a]]` [[b]]") == ["b"]
    assert targets("`not code\n\n[[a]]` [[b]]") == ["a", "b"]


def test_escaped_backtick_does_not_open_code():
    # The escaped backtick is literal, so the next one opens a span with the last one.
    assert targets("\\`[[a]]` [[b]] `") == ["a"]


def test_link_overlapping_code_span_is_not_a_link():
    # CommonMark: code spans bind tighter than links.
    assert targets("[[a `b]]` c") == []


def test_bang_inside_code_does_not_make_an_embed():
    (link,) = extract_wikilinks("`x!`[[a]]")
    assert (link.target, link.embed, link.start) == ("a", False, 4)


def test_links_in_frontmatter_count():
    markdown = '---\nrelated: "[[Other Note]]"\ntags: [x]\n---\nBody [[Body Link]]'
    assert targets(markdown) == ["Other Note", "Body Link"]


def test_crlf_fences():
    assert targets("```\r\n[[hidden]]\r\n```\r\n[[shown]]") == ["shown"]


def test_matches_the_exact_code_regions_on_random_markdown():
    # extract_wikilinks answers "is this link in code?" with a counting shortcut; it must agree
    # with the exact span computation everywhere.
    pieces = ["`", "``", "```", "\\", "[[a]]", "![[b|c]]", "\n", "\n\n", "\n  \n", " x ", "~~~", "> "]
    rng = random.Random(1234)
    for _ in range(3_000):
        markdown = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 25)))
        regions = code_regions(markdown)

        def in_code(start, end, regions=regions):
            return any(s < end and e > start for s, e in regions)

        expected = []
        for m in re.finditer(r"\[\[[^\[\]\n]+\]\]", markdown):
            if not in_code(m.start(), m.end()):
                embed = (
                    m.start() > 0 and markdown[m.start() - 1] == "!" and not in_code(m.start() - 1, m.start())
                )
                expected.append((m.start() - embed, m.end()))
        got = [(link.start, link.end) for link in extract_wikilinks(markdown)]
        assert got == expected, markdown


def test_code_regions_are_sorted_and_disjoint():
    markdown = "a `x` b\n```\ncode\n```\nc ``y`` d"
    regions = code_regions(markdown)
    assert [markdown[s:e] for s, e in regions] == ["`x`", "```\ncode\n```", "``y``"]


def test_ten_thousand_notes_parse_fast():
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "`code`", "émigré", "日本", "x" * 12]
    notes = []
    for i in range(10_000):
        body = " ".join(rng.choices(words, k=200))
        notes.append(
            f"# Note {i}\n{body}\n[[Note {i + 1}|next]] ![[img{i}.png]]\n```\n[[hidden]]\n```\n{body}"
        )
    assert sum(len(n) for n in notes) > 10_000 * 2_000
    timings = []
    for _ in range(3):  # CPU time, best of three: the machine may be busy with other work
        started = time.process_time()
        found = sum(len(extract_wikilinks(note)) for note in notes)
        timings.append(time.process_time() - started)
        assert found == 20_000
    assert min(timings) < 1.0, f"parsing took {min(timings):.2f}s"
