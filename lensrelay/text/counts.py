"""Counts as people read them: ``1 link``, ``2 links``, never ``1 links``."""

from __future__ import annotations


def counted(number: int, singular: str, plural: str = "") -> str:
    """``number`` and the noun in the right number (``plural`` defaults to the singular plus ``s``)."""
    return f"{number} {singular if number == 1 else plural or singular + 's'}"
