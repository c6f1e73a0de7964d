"""What `validate_content` finds wrong in a note's text: front matter that does not load, CriticMarkup that
does not balance, and where the wikilinks are (the tool resolves them). Strings in, findings out.

Positions are reported as line numbers of the text checked, counted as `read` and `grep` count them (from
1, split on "\\n" only). Nothing of the text is interpreted beyond that: a finding quotes only a clipped,
one-line excerpt, so whatever the text holds (markup, HTML, forged findings) stays text.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from lensrelay.text.frontmatter import locate_frontmatter, split_frontmatter
from lensrelay.text.wikilinks import WikiLink, extract_wikilinks
from suggestions.markup.criticmarkup import (
    CLOSE_ADDITION,
    CLOSE_COMMENT,
    CLOSE_DELETION,
    CLOSE_HIGHLIGHT,
    CLOSE_SUBSTITUTION,
    OPEN_ADDITION,
    OPEN_COMMENT,
    OPEN_DELETION,
    OPEN_HIGHLIGHT,
    OPEN_SUBSTITUTION,
    SUBSTITUTION_SEPARATOR,
    Mark,
    parse,
)

# Each opening delimiter, the kind of mark it opens and the delimiter that closes it.
_OPENINGS: dict[str, tuple[str, str]] = {
    OPEN_ADDITION: ("addition", CLOSE_ADDITION),
    OPEN_DELETION: ("deletion", CLOSE_DELETION),
    OPEN_SUBSTITUTION: ("substitution", CLOSE_SUBSTITUTION),
    OPEN_HIGHLIGHT: ("highlight", CLOSE_HIGHLIGHT),
    OPEN_COMMENT: ("comment", CLOSE_COMMENT),
}
_CLOSINGS: dict[str, tuple[str, str]] = {close: (kind, open_) for open_, (kind, close) in _OPENINGS.items()}
_DELIMITER = re.compile("|".join(re.escape(d) for d in (*_OPENINGS, *_CLOSINGS)))
_WIDTH = 3
# The line split_frontmatter names in its message, when the YAML parser knows it.
_FRONTMATTER_LINE = re.compile(r"\(line (\d+) of the document\)")
EXCERPT_CHARS = 80
# Everything `str.splitlines` (and so many a client) breaks a line at.
_LINE_BREAKS = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


@dataclass(frozen=True)
class Finding:
    line: int
    kind: str
    message: str

    def render(self) -> str:
        # One finding, one line, whatever the message quotes.
        return f"L{self.line}: {self.kind}: {one_line(self.message)}"


class Lines:
    """Line numbers of positions in one text."""

    def __init__(self, text: str) -> None:
        self._breaks = [m.start() for m in re.finditer("\n", text)]

    def of(self, position: int) -> int:
        return bisect_left(self._breaks, position) + 1


def one_line(text: str) -> str:
    """``text`` without anything a reader might take for a line break (each shown as ⏎)."""
    return _LINE_BREAKS.sub("⏎", text)


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A short, one-line quotation of user text."""
    flat = one_line(text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def frontmatter_findings(text: str) -> list[Finding]:
    """The front matter block, when there is one, must be YAML holding a mapping of properties."""
    if locate_frontmatter(text) is None:
        return []
    _, _, error = split_frontmatter(text)
    if error is None:
        return []
    found = _FRONTMATTER_LINE.search(error)
    return [Finding(int(found.group(1)) if found else 1, "front matter", error)]


def _a(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def _enclosing(marks: list[Mark], starts: list[int], position: int) -> Mark | None:
    k = bisect_right(starts, position) - 1
    if k >= 0 and marks[k].start < position < marks[k].end:
        return marks[k]
    return None


def markup_findings(text: str) -> list[Finding]:
    """Every CriticMarkup delimiter that is not part of a complete mark, as the parser reads the text (the
    first closing delimiter wins, marks do not nest): an opening never closed, an opening inside another
    mark, a substitution without ``~>``, a closing that closes nothing. Linear in the text's length, however
    many delimiters it holds."""
    if _DELIMITER.search(text) is None:
        return []
    marks = parse(text)
    starts = [m.start for m in marks]
    own = {m.start for m in marks} | {m.end - _WIDTH for m in marks}
    separators = [m.start() for m in re.finditer(re.escape(SUBSTITUTION_SEPARATOR), text)]
    next_closing = _NextOccurrence(text)
    explained: set[int] = set()
    lines = Lines(text)
    findings: list[Finding] = []
    for match in _DELIMITER.finditer(text):
        position, token = match.start(), match.group()
        if position in own or position in explained:
            continue
        enclosing = _enclosing(marks, starts, position)
        if token in _OPENINGS:
            kind, closing = _OPENINGS[token]
            close_at = next_closing.find(closing, position + _WIDTH)
            if enclosing is not None:
                message = (
                    f"{token} inside {_a(enclosing.kind)} opens nothing (marks do not nest): it shows as text"
                )
            elif close_at < 0:
                message = f"{token} opens {_a(kind)} that is never closed (no {closing} after it)"
            elif kind == "substitution" and not _any_between(separators, position + _WIDTH, close_at):
                explained.add(close_at)
                message = (
                    f"{token} … {closing} is no substitution: it has no {SUBSTITUTION_SEPARATOR} between the "
                    "old and the new text"
                )
            else:
                message = f"{token} opens {_a(kind)} that is not complete"
        else:
            kind, opening = _CLOSINGS[token]
            if enclosing is not None:
                message = f"stray {token} inside {_a(enclosing.kind)}: it closes nothing and shows as text"
            else:
                message = f"stray {token}: it closes no {kind} (no open {opening} before it)"
        findings.append(Finding(lines.of(position), "CriticMarkup", message))
    return findings


class _NextOccurrence:
    """`text.find(needle, start)` for starts that only grow: each search is reused while it still answers,
    so many openings before one closing (or before none) cost one search, not one each."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._found: dict[str, int] = {}

    def find(self, needle: str, start: int) -> int:
        found = self._found.get(needle)
        if found is not None and (found < 0 or found >= start):
            return found
        found = self._found[needle] = self._text.find(needle, start)
        return found


def _any_between(positions: list[int], start: int, end: int) -> bool:
    k = bisect_left(positions, start)
    return k < len(positions) and positions[k] + len(SUBSTITUTION_SEPARATOR) <= end


def wikilinks_by_line(text: str) -> list[tuple[int, WikiLink]]:
    """The text's links to other documents (``[[#heading]]`` left out) with their line numbers; links in
    code are not links."""
    lines = Lines(text)
    return [(lines.of(link.start), link) for link in extract_wikilinks(text) if link.target.strip()]
