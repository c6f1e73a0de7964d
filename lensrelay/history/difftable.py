"""A version compared with another text: the side-by-side HTML diff the Versions pages show, and how many
edits restoring it would make. Plain work on two strings (no Doc, no database, no Django setting), so for a
long note it runs in a heavy-work process (``lensrelay.docstore.offload``) instead of starving the event
loop of the GIL from a request thread.
"""

from __future__ import annotations

import difflib
import html

from lensrelay.history.textedits import text_edits


def diff_table(old: str, new: str, *, old_label: str, new_label: str) -> str:
    """Side by side, changed lines with context; HtmlDiff escapes the lines, the labels are escaped here."""
    return difflib.HtmlDiff(wrapcolumn=80).make_table(
        old.splitlines(),
        new.splitlines(),
        fromdesc=html.escape(old_label),
        todesc=html.escape(new_label),
        context=True,
        numlines=3,
    )


def compared(old: str, new: str, old_label: str, new_label: str, count_edits: bool) -> tuple[str, int]:
    """The diff table from ``old`` to ``new``, and (with ``count_edits``) the number of edits restoring
    ``new`` over ``old`` makes (0 without)."""
    edits = len(text_edits(old, new)) if count_edits else 0
    return diff_table(old, new, old_label=old_label, new_label=new_label), edits
