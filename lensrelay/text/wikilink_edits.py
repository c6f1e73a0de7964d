"""A note's wikilinks after an edit, from its links before it, without parsing the note again.

Most edits are typing inside a paragraph: they change no link (issue 36 asks that the derive process then
do nothing for it). `links_after_edit` proves that from the edit alone, or answers None (parse again).

The proof follows what `extract_wikilinks` reads. A link token is `[[…]]` on one line, in code or not by
the fences (lines holding ``` or ~~~), the backtick runs and escapes of its paragraph, and the blank lines
that end paragraphs; `!` right before it makes it an embed. An edit that
- inserts and removes none of ``[ ] ` ~ \\`` nor a line break,
- sits between two characters that are none of them either (so no run of backticks or brackets is joined
  or split, and no escape moves), and
- falls on a line that holds no bracket, no fence, and is not blank before or after it,
leaves every link token's text, and the code around it, as it was: the links are the same, those after the
edit shifted by its length.
"""

from __future__ import annotations

import dataclasses
import re

from lensrelay.text.common_ends import common_prefix, common_suffix
from lensrelay.text.wikilinks import WikiLink

_SIGNIFICANT = re.compile(r"[\[\]`~\\\n\r]")


def _plain_line(line: str) -> bool:
    return (
        "[" not in line
        and "]" not in line
        and "```" not in line
        and "~~~" not in line
        and bool(line.strip(" \t\r"))
    )


def links_after_edit(old: str, new: str, links: list[WikiLink]) -> list[WikiLink] | None:
    """The links of `new`, when `old` (whose links, or any subset of them, are `links`) became it by an
    edit that provably changes none (see the module); None when it may have: parse `new` again."""
    if old == new:
        return links
    start = common_prefix(old, new)
    shared_end = common_suffix(old, new, min(len(old), len(new)) - start)
    old_end, new_end = len(old) - shared_end, len(new) - shared_end
    if _SIGNIFICANT.search(old, start, old_end) or _SIGNIFICANT.search(new, start, new_end):
        return None
    if _SIGNIFICANT.search(old[start - 1 : start] if start else "") or _SIGNIFICANT.search(
        old[old_end : old_end + 1]
    ):
        return None
    line_start = old.rfind("\n", 0, start) + 1
    line_end = old.find("\n", old_end)
    line_end = len(old) if line_end < 0 else line_end
    shift = new_end - old_end
    if not (_plain_line(old[line_start:line_end]) and _plain_line(new[line_start : line_end + shift])):
        return None
    return [
        dataclasses.replace(link, start=link.start + shift, end=link.end + shift)
        if link.start >= old_end
        else link
        for link in links
    ]
