"""How every tool counts a document's lines: split on "\\n" only, as `cat -n` does.

A final "\\n" ends the last line rather than starting an empty one; lines keep any "\\r". read, grep,
read_metadata and the suggestion footer all number lines this way, so their line numbers agree.
"""

from __future__ import annotations


def split_lines(text: str) -> list[str]:
    """The document's lines: no phantom line after a final newline, none for an empty document."""
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def line_count(text: str) -> int:
    """Number of lines `split_lines` would return, without building the list."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)
