"""A note split into passages for embedding: one per heading section, long sections split further.

Frontmatter is left out (it is metadata, searchable by `property_search`). Headings inside fenced code
are not headings. Line numbers count as `read` counts them (lensrelay/text/lines.py), so a passage's
`start_line` is an `offset` that `read` opens. Pure functions: no Django, no model.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from lensrelay.text.frontmatter import locate_frontmatter
from lensrelay.text.lines import split_lines

# all-MiniLM-L6-v2 reads 256 word pieces; about 1.3 pieces a word leaves room for the title and heading.
MAX_WORDS = 160
# A pathological note (a pasted log) must not occupy the model for minutes: the rest goes unembedded.
MAX_PASSAGES = 400

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Passage:
    start_line: int  # 1-based, inclusive
    end_line: int
    heading: str  # the heading trail, "Planning > Estimates", or "" before the first heading
    text: str

    def embedding_text(self, title: str) -> str:
        """What the model reads: the note's title and heading trail give a passage its context."""
        # A note's first heading often repeats its title: say it once.
        heading = self.heading
        if heading == title or heading.startswith(f"{title} > "):
            heading = heading[len(title) :].removeprefix(" > ")
        context = " > ".join(part for part in (title, heading) if part)
        return f"{context}\n{self.text}" if context else self.text

    def digest(self, title: str) -> str:
        return hashlib.sha256(self.embedding_text(title).encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class PassageMatch:
    """A note found by meaning, with its best passage."""

    doc_id: str
    score: float  # cosine similarity, -1..1
    start_line: int
    end_line: int
    heading: str


@dataclass
class _Section:
    start: int  # index into the lines
    heading: str
    lines: list[str]


def split_passages(text: str) -> list[Passage]:
    """The passages of a note's text (the accepted view), in document order."""
    lines = split_lines(text)
    located = locate_frontmatter(text)
    first = 0
    if located is not None:
        first = len(lines) if located[2] >= len(text) else text.count("\n", 0, located[2])
    passages: list[Passage] = []
    for section in _sections(lines, first):
        passages.extend(_split_section(section))
        if len(passages) >= MAX_PASSAGES:
            return passages[:MAX_PASSAGES]
    return passages


def _sections(lines: list[str], first: int) -> list[_Section]:
    sections: list[_Section] = []
    trail: list[tuple[int, str]] = []  # (level, title) of the enclosing headings
    current = _Section(start=first, heading="", lines=[])
    fence: str | None = None
    for index in range(first, len(lines)):
        line = lines[index]
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
        elif opened:
            fence = opened.group(1)
        elif heading := _HEADING.match(line):
            sections.append(current)
            level, title = len(heading.group(1)), heading.group(2).strip()
            trail = [(lvl, name) for lvl, name in trail if lvl < level] + [(level, title)]
            current = _Section(start=index, heading=" > ".join(name for _, name in trail if name), lines=[])
        current.lines.append(line)
    sections.append(current)
    return [
        section for section in sections if _has_words(section.lines[1:] if section.heading else section.lines)
    ]


def _has_words(lines: list[str]) -> bool:
    return any(any(ch.isalnum() for ch in line) for line in lines)


def _split_section(section: _Section) -> list[Passage]:
    """Whole when short; otherwise chunks of at most MAX_WORDS, cut at blank lines where possible."""
    passages: list[Passage] = []
    chunk: list[tuple[int, str]] = []
    words = 0

    def flush() -> None:
        nonlocal chunk, words
        if chunk and _has_words([line for _, line in chunk]):
            passages.append(_passage(section.heading, chunk))
        chunk, words = [], 0

    for offset, line in enumerate(section.lines):
        number = section.start + offset + 1
        count = len(_WORD.findall(line))
        if count > MAX_WORDS:
            flush()
            passages.extend(_split_line(section.heading, number, line))
            continue
        if words + count > MAX_WORDS or (not line.strip() and words >= MAX_WORDS // 2):
            flush()
        if chunk or line.strip():
            chunk.append((number, line))
            words += count
    flush()
    return passages


def _split_line(heading: str, number: int, line: str) -> list[Passage]:
    """A single line longer than a passage (a pasted paragraph without breaks): windows of words."""
    words = _WORD.findall(line)
    return [
        Passage(start_line=number, end_line=number, heading=heading, text=" ".join(words[i : i + MAX_WORDS]))
        for i in range(0, len(words), MAX_WORDS)
    ]


def _passage(heading: str, chunk: list[tuple[int, str]]) -> Passage:
    while chunk and not chunk[-1][1].strip():
        chunk = chunk[:-1]
    return Passage(
        start_line=chunk[0][0],
        end_line=chunk[-1][0],
        heading=heading,
        text="\n".join(line for _, line in chunk),
    )
