"""How a passage found by meaning is shown: its lines (for `read`), its heading and a one-line excerpt."""

from __future__ import annotations

import re

from lensrelay.semantic.passages import PassageMatch
from lensrelay.text.lines import split_lines

EXCERPT_CHARS = 240
_WHITESPACE = re.compile(r"\s+")


def passage_excerpt(text: str, match: PassageMatch) -> str:
    """The passage's lines as one line of text, cut at a word near EXCERPT_CHARS."""
    lines = split_lines(text)[match.start_line - 1 : match.end_line]
    excerpt = _WHITESPACE.sub(" ", " ".join(lines)).strip()
    if len(excerpt) > EXCERPT_CHARS:
        excerpt = excerpt[:EXCERPT_CHARS].rsplit(" ", 1)[0] + " …"
    return excerpt


def passage_location(match: PassageMatch) -> str:
    lines = (
        f"line {match.start_line}"
        if match.start_line == match.end_line
        else f"lines {match.start_line}-{match.end_line}"
    )
    where = f" under “{match.heading}”" if match.heading else ""
    return f"score {match.score:.3f}, {lines}{where}"
