"""Short plain-text forms of a change for previews: a clipped line, a whole-file replacement's size."""

from __future__ import annotations

import difflib

PREVIEW_CHARS = 40


def clip(text: str, limit: int = PREVIEW_CHARS) -> str:
    """``text`` on one line (runs of white space as one space), cut to ``limit`` characters with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def changed_lines(old: str, new: str) -> str:
    """ "3 lines removed, 4 added": a whole-file replacement's size at a glance."""
    removed = added = 0
    for line in difflib.ndiff(old.splitlines(), new.splitlines()):
        removed += line.startswith("- ")
        added += line.startswith("+ ")
    return f"{removed} line{'s' if removed != 1 else ''} removed, {added} added"
