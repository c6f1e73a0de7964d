"""Planning an edit of a document's raw text on plain strings: the accepted view, the edits applied to it,
the CriticMarkup plan and where its marks land. Nothing here touches a Doc or the database, so a big plan
runs in a heavy-work process (:func:`plan_edit_off_loop`, ``lensrelay.docstore.offload``, which says why
not a thread) while the event loop keeps serving its clients.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from lensrelay.docstore.offload import offloaded
from suggestions.errors import SuggestionError
from suggestions.markup.accepted_view import AcceptedView, build_accepted_view
from suggestions.markup.criticmarkup import OPEN_COMMENT, contains_delimiters, mark_id, own_changes, parse
from suggestions.markup.diff import unified_diff
from suggestions.markup.rewriting import Plan, RawEdit, apply_raw_edits, plan_comment, plan_suggestion

DELIMITER_REFUSAL = (
    "{which} contains the CriticMarkup delimiter '{delimiter}'. Write plain text: the system handles "
    "suggestion wrapping automatically."
)
QUOTED_COMMENT_RE = re.compile(r"\{>>.*?<<\}", re.DOTALL)
CURLY = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


@dataclass(frozen=True)
class EditSpec:
    old_string: str
    new_string: str
    replace_all: bool = False


# -- finding the text to change -------------------------------------------------------------------------


def refuse_delimiters(value: str, *, which: str) -> None:
    delimiter = contains_delimiters(value)
    if delimiter is not None:
        raise SuggestionError(DELIMITER_REFUSAL.format(which=which, delimiter=delimiter))


def without_quoted_comments(raw: str, specs: Sequence[EditSpec]) -> list[EditSpec]:
    """The specs with every ``{>>comment<<}`` that is quoted in an ``old_string`` and stands verbatim in
    ``raw`` taken out of both strings.

    Read hides comments, but an assistant that saw them elsewhere (the raw file, the Rust server's read)
    quotes them; the comment is a person's and is never rewritten, so it is matched as if absent and stays
    byte-identical where it is, the edit split around it. A comment quoted in ``new_string`` only, or one
    the document does not hold, is left in and refused as a delimiter.
    """
    if not any(OPEN_COMMENT in spec.old_string for spec in specs):
        return list(specs)
    held = {raw[mark.start : mark.end] for mark in parse(raw) if mark.kind == "comment"}
    cleaned: list[EditSpec] = []
    for spec in specs:
        old, new = spec.old_string, spec.new_string
        for quoted in QUOTED_COMMENT_RE.findall(spec.old_string):
            if quoted in held:
                old = old.replace(quoted, "", 1)
                new = new.replace(quoted, "", 1)
        cleaned.append(EditSpec(old, new, spec.replace_all))
    return cleaned


def find_occurrences(text: str, needle: str) -> list[int]:
    """Start indices of `needle` in `text`; curly quotes in either match straight ones."""
    starts = _all_starts(text, needle)
    if starts:
        return starts
    return _all_starts(text.translate(CURLY), needle.translate(CURLY))


def _all_starts(text: str, needle: str) -> list[int]:
    starts: list[int] = []
    position = text.find(needle)
    while position >= 0:
        starts.append(position)
        position = text.find(needle, position + len(needle))
    return starts


def apply_edit_specs(
    text: str, specs: Sequence[EditSpec], *, path: str, markup: bool = True
) -> tuple[str, list[int]]:
    """Apply edits in sequence to a plain text (the accepted view); any failure raises, naming the edit.
    ``markup`` False is for files that never hold CriticMarkup (JSON, HTML): any text may be written."""
    occurrences: list[int] = []
    for number, spec in enumerate(specs, start=1):
        prefix = f"Edit {number} of {len(specs)} failed: " if len(specs) > 1 else ""
        if spec.old_string == spec.new_string:
            raise SuggestionError(
                prefix + "No changes to make: old_string and new_string are exactly the same."
            )
        if spec.old_string == "":
            raise SuggestionError(prefix + "old_string must not be empty; use write to create a document.")
        if markup:
            refuse_delimiters(spec.old_string, which="old_string")
            refuse_delimiters(spec.new_string, which="new_string")
        starts = find_occurrences(text, spec.old_string)
        if not starts:
            raise SuggestionError(
                prefix + f"String to replace not found in {path}. Make sure old_string matches the text "
                "exactly as read shows it (whitespace and line breaks included)."
            )
        if len(starts) > 1 and not spec.replace_all:
            raise SuggestionError(
                prefix + f"Found {len(starts)} matches of the string to replace, but replace_all is false. "
                "To replace all occurrences, set replace_all to true. To replace only one occurrence, "
                "please provide more context to uniquely identify the instance."
            )
        pieces: list[str] = []
        position = 0
        for start in starts:
            pieces += [text[position:start], spec.new_string]
            position = start + len(spec.old_string)
        pieces.append(text[position:])
        text = "".join(pieces)
        occurrences.append(len(starts))
    return text, occurrences


def byte_offsets(text: str, indices: Sequence[int]) -> dict[int, int]:
    """The UTF-8 byte offsets of ascending string ``indices`` of ``text``, in one pass."""
    found: dict[int, int] = {}
    position = offset = 0
    for index in indices:
        offset += len(text[position:index].encode())
        found[index] = offset
        position = index
    return found


HUNK_CONTEXT_CHARS = 40


def changes_context(view: AcceptedView, uid: str) -> list[tuple[str, str]]:
    """The text around each of the suggestion's changes as a reader sees it (everything accepted), within
    its line: what the suggestion list shows beside the change."""
    around = []
    for change, (start, end) in zip(view.changes, view.change_spans, strict=True):
        if any(mark_id(m) == uid for m in change.all_marks):
            before = view.text[max(0, start - HUNK_CONTEXT_CHARS) : start]
            after = view.text[end : end + HUNK_CONTEXT_CHARS]
            around.append((before[before.rfind("\n") + 1 :], after.split("\n", 1)[0]))
    return around


@dataclass(frozen=True)
class PlannedEdit:
    """Everything an edit needs that can be computed from the raw text alone (off the event loop)."""

    raw: str
    new_view_text: str
    occurrences: list[int]
    diff: str
    plan: Plan
    reply: RawEdit | None
    changes: list[tuple[int, int, str, str]]  # the suggestion's marks after writing: byte offsets, old, new
    around: list[tuple[str, str]]  # the words before and after each mark, as a reader sees them
    markup: list[str]
    markup_start: int


def plan_edit(
    raw: str,
    *,
    specs: Sequence[EditSpec],
    replacement: str | None,
    path: str,
    meta: str,
    uid: str,
    comment: str | None,
) -> PlannedEdit:
    """Plan an edit of ``raw``; raises SuggestionError, naming the edit, when it cannot be made."""
    view = build_accepted_view(raw)
    if replacement is not None:
        refuse_delimiters(replacement, which="content")
        new_view_text, occurrences = replacement, list[int]()
        if new_view_text == view.text:
            raise SuggestionError("No changes to make: the content is exactly the document's current text.")
    else:
        new_view_text, occurrences = apply_edit_specs(
            view.text, without_quoted_comments(raw, specs), path=path
        )
    diff = unified_diff(view.text, new_view_text, path=path)
    plan = plan_suggestion(raw, new_view_text, meta=meta, uid=uid)
    reply = plan_comment(plan.raw, uid=uid, comment=comment, meta=meta) if comment else None
    written = apply_raw_edits(plan.raw, [reply]) if reply else plan.raw
    own = own_changes(written, uid)
    offsets = byte_offsets(written, sorted({i for c in own for i in (c.start, c.end)}))
    return PlannedEdit(
        raw=raw,
        new_view_text=new_view_text,
        occurrences=occurrences,
        diff=diff,
        plan=plan,
        reply=reply,
        changes=[(offsets[c.start], offsets[c.end], c.old, c.new) for c in own],
        around=changes_context(build_accepted_view(written), uid),
        markup=[written[c.start : c.end] for c in own],
        markup_start=own[0].start if own else 0,
    )


async def plan_edit_off_loop(raw: str, **plan: object) -> PlannedEdit:
    """:func:`plan_edit` in a heavy-work process; the loop only waits for the answer."""
    return await offloaded(_plan_edit_call, raw, plan)


def _plan_edit_call(raw: str, plan: dict[str, object]) -> PlannedEdit:
    return plan_edit(raw, **plan)  # type: ignore[arg-type]
