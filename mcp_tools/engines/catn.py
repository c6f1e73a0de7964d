"""Claude Code's Read output (``cat -n`` style) for a document held as a string.

Lines are split on ``"\\n"`` only (never on the other separators ``str.splitlines`` knows, such as
``"\\u2028"`` or form feed), so the numbering here is the numbering grep reports and edit relies on.
A final ``"\\n"`` ends the last line rather than starting an empty one, as ``cat -n`` counts. One
trailing ``"\\r"`` per line is dropped for display so CRLF text reads cleanly.

``read`` shows every line whole, however long: a markdown paragraph is one line, and an assistant can
only edit what it has seen. grep's content output, a list of hits, caps long lines (``display_line``).
"""

from __future__ import annotations

from lensrelay.text.lines import line_count, split_lines

__all__ = ["display_line", "format_read", "line_count", "split_lines", "whole_line"]

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
EMPTY_DOCUMENT = "(This document is empty.)"


def whole_line(line: str) -> str:
    """A line as read prints it: one trailing "\\r" dropped, nothing else touched."""
    return line[:-1] if line.endswith("\r") else line


def display_line(line: str) -> str:
    """A line as grep prints it: one trailing "\\r" dropped, capped at MAX_LINE_CHARS characters with a
    marker saying how long the line really is."""
    line = whole_line(line)
    if len(line) > MAX_LINE_CHARS:
        shown = line[:MAX_LINE_CHARS]
        return f"{shown}… [line truncated: {len(line)} characters, first {MAX_LINE_CHARS} shown]"
    return line


def format_read(text: str, *, offset: int | None = None, limit: int | None = None) -> str:
    """``text`` numbered like ``cat -n`` (``f"{n:>6}\\t{line}"``, from 1), every line whole.

    ``offset`` is the 1-indexed first line to show (None, 0 and 1 all mean the start); ``limit`` the
    number of lines (default 2000). When lines remain after the window a last line says how many
    and which offset reads on. Raises ValueError for a negative offset or a limit below 1.
    """
    if offset is not None and offset < 0:
        raise ValueError(f"offset must be a line number of 1 or more, got {offset}.")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a number of lines of 1 or more, got {limit}.")
    first = max(offset or 1, 1)
    count = DEFAULT_LIMIT if limit is None else limit

    lines = split_lines(text)
    total = len(lines)
    if total == 0:
        return EMPTY_DOCUMENT
    if first > total:
        noun = "line" if total == 1 else "lines"
        return (
            f"(The document has {total} {noun}; offset {first} is past the end. "
            f"Use an offset from 1 to {total}.)"
        )

    window = lines[first - 1 : first - 1 + count]
    body = "\n".join(f"{number:>6}\t{whole_line(line)}" for number, line in enumerate(window, start=first))
    remaining = total - (first - 1 + len(window))
    if remaining > 0:
        next_offset = first + len(window)
        noun = "line" if remaining == 1 else "lines"
        body += f"\n... ({remaining} more {noun}; call read with offset={next_offset} to continue)"
    return body
