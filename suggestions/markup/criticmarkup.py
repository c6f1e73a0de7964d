"""CriticMarkup: parse marks, group them into reviewable changes, accept or reject them surgically.

Syntax: ``{++add++}``, ``{--del--}``, ``{~~old~>new~~}``, ``{==highlight==}``, ``{>>comment<<}``.
Any mark may start with metadata, a JSON object followed by ``@@``:
``{--{"author":"claude","timestamp":1700000000000}@@old--}``.

Parsing is non-greedy (the first closing delimiter wins, marks do not nest) and marks are recognised
everywhere, code blocks included, as other CriticMarkup processors do. All positions are Python ``str``
indices; callers that write to a CRDT convert them to its own unit.

Accept and reject return the spans to delete instead of a rewritten string, so a caller editing a live
document removes only markers, metadata and discarded text, and every kept character keeps its identity.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

MarkKind = Literal["addition", "deletion", "substitution", "highlight", "comment"]
ChangeKind = Literal["replace", "insert", "delete", "substitution", "highlight", "comment"]

OPEN_ADDITION, CLOSE_ADDITION = "{++", "++}"
OPEN_DELETION, CLOSE_DELETION = "{--", "--}"
OPEN_SUBSTITUTION, SUBSTITUTION_SEPARATOR, CLOSE_SUBSTITUTION = "{~~", "~>", "~~}"
OPEN_HIGHLIGHT, CLOSE_HIGHLIGHT = "{==", "==}"
OPEN_COMMENT, CLOSE_COMMENT = "{>>", "<<}"
METADATA_SEPARATOR = "@@"

DELIMITERS: tuple[str, ...] = (
    OPEN_ADDITION,
    CLOSE_ADDITION,
    OPEN_DELETION,
    CLOSE_DELETION,
    OPEN_SUBSTITUTION,
    SUBSTITUTION_SEPARATOR,
    CLOSE_SUBSTITUTION,
    OPEN_HIGHLIGHT,
    CLOSE_HIGHLIGHT,
    OPEN_COMMENT,
    CLOSE_COMMENT,
)

STALE_REASON = "suggestion no longer found in document"

_OPENING_RE = re.compile(r"\{(?:\+\+|--|~~|==|>>)")
_CLOSING_FOR: dict[str, tuple[MarkKind, str]] = {
    OPEN_ADDITION: ("addition", CLOSE_ADDITION),
    OPEN_DELETION: ("deletion", CLOSE_DELETION),
    OPEN_SUBSTITUTION: ("substitution", CLOSE_SUBSTITUTION),
    OPEN_HIGHLIGHT: ("highlight", CLOSE_HIGHLIGHT),
    OPEN_COMMENT: ("comment", CLOSE_COMMENT),
}
_DELIMITER_RE = re.compile("|".join(re.escape(d) for d in DELIMITERS))


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


# Strict JSON, as the browser editor's JSON.parse reads it: Python's decoder alone would take NaN and
# Infinity, so a mark the editor shows without metadata would carry metadata here.
_JSON_DECODER = json.JSONDecoder(parse_constant=_not_json)
# Inside metadata no delimiter (nor the ``@@`` separator) may form, or a mark would end early there.
_METADATA_FORBIDDEN_RE = re.compile("|".join(re.escape(d) for d in (*DELIMITERS, "@@")))
_DELIMITER_WIDTH = 3


class StaleChangeError(ValueError):
    """The change's markup is no longer in the text where it was found."""

    def __init__(self, reason: str = STALE_REASON) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Mark:
    """One CriticMarkup mark; ``content`` is the text after any metadata (a substitution's old side)."""

    kind: MarkKind
    start: int
    end: int
    content_start: int
    content_end: int
    content: str
    new_content: str | None = None
    metadata: dict[str, Any] | None = None

    @property
    def new_content_start(self) -> int | None:
        """Where a substitution's new side starts (after ``~>``)."""
        if self.kind != "substitution":
            return None
        return self.content_end + len(SUBSTITUTION_SEPARATOR)

    @property
    def new_content_end(self) -> int | None:
        if self.kind != "substitution":
            return None
        return self.end - _DELIMITER_WIDTH

    def shifted(self, offset: int) -> Mark:
        return Mark(
            kind=self.kind,
            start=self.start + offset,
            end=self.end + offset,
            content_start=self.content_start + offset,
            content_end=self.content_end + offset,
            content=self.content,
            new_content=self.new_content,
            metadata=self.metadata,
        )


@dataclass(frozen=True)
class Change:
    """What a reviewer accepts or rejects as one unit.

    ``marks`` are the edit's own marks (a replacement has its deletion and addition); ``comments`` are the
    comments written directly after it (the first is the reply, later ones continue the thread).
    ``start``/``end`` span both. A standalone comment is a change of kind ``comment`` with empty old/new.
    """

    kind: ChangeKind
    start: int
    end: int
    old: str
    new: str
    metadata: dict[str, Any] | None
    marks: tuple[Mark, ...]
    comments: tuple[Mark, ...] = field(default=())

    @property
    def comment(self) -> Mark | None:
        return self.comments[0] if self.comments else None

    @property
    def all_marks(self) -> tuple[Mark, ...]:
        return self.marks + self.comments

    @property
    def author(self) -> str | None:
        value = (self.metadata or {}).get("author")
        return value if isinstance(value, str) else None

    @property
    def timestamp_ms(self) -> int | None:
        value = (self.metadata or {}).get("timestamp")
        return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Span:
    """A half-open range ``[start, end)`` of the text to delete."""

    start: int
    end: int


# --- parsing -----------------------------------------------------------------------------------------


def _split_metadata(body: str) -> tuple[dict[str, Any] | None, int]:
    """Return the metadata and how many characters of ``body`` it (with ``@@``) takes."""
    if not body.startswith("{"):
        return None, 0
    try:
        value, consumed = _JSON_DECODER.raw_decode(body)
    except (ValueError, RecursionError):
        return None, 0
    if not isinstance(value, dict) or not body.startswith(METADATA_SEPARATOR, consumed):
        return None, 0
    return value, consumed + len(METADATA_SEPARATOR)


def _make_mark(text: str, kind: MarkKind, start: int, body_start: int, body_end: int) -> Mark | None:
    body = text[body_start:body_end]
    metadata, skip = _split_metadata(body)
    content_start = body_start + skip
    rest = body[skip:]
    if kind == "substitution":
        separator = rest.find(SUBSTITUTION_SEPARATOR)
        if separator < 0:
            return None
        return Mark(
            kind="substitution",
            start=start,
            end=body_end + _DELIMITER_WIDTH,
            content_start=content_start,
            content_end=content_start + separator,
            content=rest[:separator],
            new_content=rest[separator + len(SUBSTITUTION_SEPARATOR) :],
            metadata=metadata,
        )
    return Mark(
        kind=kind,
        start=start,
        end=body_end + _DELIMITER_WIDTH,
        content_start=content_start,
        content_end=body_end,
        content=rest,
        metadata=metadata,
    )


def parse(text: str) -> list[Mark]:
    """All marks in ``text``, in order. A ``{~~…~~}`` without ``~>`` is not a mark.

    Linear time: once an opening finds no closing, no later opening of that kind can, so that kind
    is never searched for again (a document full of unclosed ``{++`` stays fast).
    """
    marks: list[Mark] = []
    unclosable: set[str] = set()
    # A {~~ found without ~> makes every {~~ before its closing hopeless too: their bodies are shorter.
    no_separator_before = -1
    position = 0
    while (opening := _OPENING_RE.search(text, position)) is not None:
        start = opening.start()
        delimiter = opening.group()
        position = start + 1
        if delimiter in unclosable or (delimiter == OPEN_SUBSTITUTION and start < no_separator_before):
            continue
        kind, closing = _CLOSING_FOR[delimiter]
        body_start = start + _DELIMITER_WIDTH
        body_end = text.find(closing, body_start)
        if body_end < 0:
            unclosable.add(delimiter)
            continue
        mark = _make_mark(text, kind, start, body_start, body_end)
        if mark is None:
            # Not a substitution after all: marks inside it still count.
            no_separator_before = body_end
            continue
        marks.append(mark)
        position = mark.end
    return marks


# --- grouping ----------------------------------------------------------------------------------------


def _first_metadata(marks: Iterable[Mark]) -> dict[str, Any] | None:
    return next((m.metadata for m in marks if m.metadata is not None), None)


def _edit_change(marks: tuple[Mark, ...]) -> tuple[ChangeKind, str, str]:
    first = marks[0]
    if len(marks) == 2:
        return "replace", first.content, marks[1].content
    if first.kind == "addition":
        return "insert", "", first.content
    if first.kind == "deletion":
        return "delete", first.content, ""
    if first.kind == "substitution":
        return "substitution", first.content, first.new_content or ""
    if first.kind == "highlight":
        return "highlight", first.content, first.content
    return "comment", "", ""


def mark_id(mark: Mark) -> str | None:
    """The suggestion id a mark carries in its metadata, if any."""
    value = (mark.metadata or {}).get("id")
    return value if isinstance(value, str) else None


def group_changes(marks: Sequence[Mark]) -> list[Change]:
    """Group marks into changes: ``{--a--}{++b++}`` is one replacement; touching comments are replies.

    Marks group only when they carry the same suggestion id (or none): a person's comment written
    right after an assistant's suggestion, or two suggestions that happen to touch, stay apart, so
    deciding one never removes the other.
    """
    changes: list[Change] = []
    index = 0
    while index < len(marks):
        first = marks[index]
        index += 1
        own: tuple[Mark, ...] = (first,)
        if (
            first.kind == "deletion"
            and index < len(marks)
            and marks[index].kind == "addition"
            and marks[index].start == first.end
            and mark_id(marks[index]) == mark_id(first)
        ):
            own = (first, marks[index])
            index += 1
        comments: list[Mark] = []
        # Comments keep attaching while each touches the previous mark: a reply, then its thread.
        while index < len(marks) and marks[index].kind == "comment":
            previous_end = (comments[-1] if comments else own[-1]).end
            if marks[index].start != previous_end or mark_id(marks[index]) != mark_id(first):
                break
            comments.append(marks[index])
            index += 1
        kind, old, new = _edit_change(own)
        changes.append(
            Change(
                kind=kind,
                start=first.start,
                end=(comments[-1] if comments else own[-1]).end,
                old=old,
                new=new,
                metadata=_first_metadata(own),
                marks=own,
                comments=tuple(comments),
            )
        )
    return changes


def parse_changes(text: str) -> list[Change]:
    return group_changes(parse(text))


# --- delimiters and rendering -----------------------------------------------------------------------


def contains_delimiters(s: str) -> str | None:
    """The first CriticMarkup delimiter in ``s`` (leftmost), or None."""
    match = _DELIMITER_RE.search(s)
    return match.group() if match else None


def _escaped_json_string(value: str) -> str:
    """A JSON string with only JSON's own escapes, plus one ``\\uXXXX`` wherever a delimiter would form.

    People read metadata in their editors, so ``claude-review`` stays as it is; ``a++}`` becomes
    ``a++\\u007d``. Escaping the last character of each occurrence leaves none, and the escape itself
    (a backslash, ``u`` and hex digits) cannot start a new one.
    """
    encoded = json.dumps(value, ensure_ascii=False)
    while (found := _METADATA_FORBIDDEN_RE.search(encoded)) is not None:
        last = found.end() - 1
        encoded = f"{encoded[:last]}\\u{ord(encoded[last]):04x}{encoded[last + 1 :]}"
    return encoded


def render_metadata(author: str, timestamp_ms: int, *, suggestion_id: str | None = None) -> str:
    """``{"author":"…","timestamp":…}@@``, escaped so that no delimiter can appear inside it.

    ``suggestion_id`` ties the marks to their database row, so they can be found again after edits.
    """
    extra = f',"id":{_escaped_json_string(suggestion_id)}' if suggestion_id else ""
    fields = f'"author":{_escaped_json_string(author)},"timestamp":{int(timestamp_ms)}{extra}'
    return f"{{{fields}}}{METADATA_SEPARATOR}"


def render_metadata_fields(fields: Mapping[str, str | int | bool]) -> str:
    """Any metadata object (``{"thread":"…","resolved":true}@@``), escaped as ``render_metadata`` does."""
    parts = []
    for key, value in fields.items():
        if isinstance(value, bool):
            shown = "true" if value else "false"
        elif isinstance(value, int):
            shown = str(value)
        else:
            shown = _escaped_json_string(value)
        parts.append(f"{_escaped_json_string(key)}:{shown}")
    return "{" + ",".join(parts) + "}" + METADATA_SEPARATOR


def render_highlight(text: str, meta: str = "") -> str:
    return f"{OPEN_HIGHLIGHT}{meta}{text}{CLOSE_HIGHLIGHT}"


def render_addition(text: str, meta: str = "") -> str:
    return f"{OPEN_ADDITION}{meta}{text}{CLOSE_ADDITION}"


def render_deletion(text: str, meta: str = "") -> str:
    return f"{OPEN_DELETION}{meta}{text}{CLOSE_DELETION}"


def render_comment(text: str, meta: str = "") -> str:
    return f"{OPEN_COMMENT}{meta}{text}{CLOSE_COMMENT}"


def render_replacement(old: str, new: str, meta: str = "") -> str:
    """``{--old--}{++new++}``, leaving out an empty side."""
    return (render_deletion(old, meta) if old else "") + (render_addition(new, meta) if new else "")


# --- accept / reject ---------------------------------------------------------------------------------


def _markers_only(mark: Mark) -> list[Span]:
    """Delete the opening (with metadata) and the closing, keep the content."""
    return [Span(mark.start, mark.content_start), Span(mark.content_end, mark.end)]


def _whole(mark: Mark) -> list[Span]:
    return [Span(mark.start, mark.end)]


def _spans_for(mark: Mark, *, accept: bool) -> list[Span]:
    if mark.kind == "addition":
        return _markers_only(mark) if accept else _whole(mark)
    if mark.kind == "deletion":
        return _whole(mark) if accept else _markers_only(mark)
    if mark.kind == "substitution":
        new_start = mark.new_content_start
        new_end = mark.new_content_end
        assert new_start is not None and new_end is not None
        if accept:
            return [Span(mark.start, new_start), Span(new_end, mark.end)]
        return [Span(mark.start, mark.content_start), Span(mark.content_end, mark.end)]
    if mark.kind == "highlight":
        return _markers_only(mark)
    return _whole(mark)


def merged_descending(spans: Iterable[Span]) -> list[Span]:
    merged: list[Span] = []
    for span in sorted((s for s in spans if s.end > s.start), key=lambda s: s.start):
        if merged and span.start <= merged[-1].end:
            merged[-1] = Span(merged[-1].start, max(merged[-1].end, span.end))
        else:
            merged.append(span)
    merged.reverse()
    return merged


def _verify(text: str, change: Change) -> None:
    if change.start < 0 or change.end > len(text):
        raise StaleChangeError()
    found = tuple(m.shifted(change.start) for m in parse(text[change.start : change.end]))
    if found != change.all_marks:
        raise StaleChangeError()


def _decide(text: str, change: Change, *, accept: bool) -> list[Span]:
    _verify(text, change)
    spans = [span for mark in change.marks for span in _spans_for(mark, accept=accept)]
    spans.extend(span for comment in change.comments for span in _whole(comment))
    return merged_descending(spans)


def accept_edits(text: str, change: Change) -> list[Span]:
    """Spans to delete (descending) to accept ``change``; raises StaleChangeError if its markup moved."""
    return _decide(text, change, accept=True)


def reject_edits(text: str, change: Change) -> list[Span]:
    """Spans to delete (descending) to reject ``change``; raises StaleChangeError if its markup moved."""
    return _decide(text, change, accept=False)


def apply_spans(text: str, spans: Iterable[Span]) -> str:
    """Delete non-overlapping spans from ``text`` (in any order)."""
    pieces: list[str] = []
    position = 0
    for span in sorted(spans, key=lambda s: s.start):
        if span.start < position or span.end < span.start or span.end > len(text):
            raise ValueError(f"overlapping or out-of-range span {span}")
        pieces.append(text[position : span.start])
        position = span.end
    pieces.append(text[position:])
    return "".join(pieces)


def resolve(text: str, accept: Callable[[Mark], bool], *, marks: Sequence[Mark] | None = None) -> str:
    """``text`` with each mark accepted where ``accept(mark)`` and rejected elsewhere; comments go.
    ``marks``: the text's marks, when the caller has parsed it already."""
    found = parse(text) if marks is None else marks
    return apply_spans(text, [span for mark in found for span in _spans_for(mark, accept=accept(mark))])


def accept_all(text: str) -> str:
    return resolve(text, lambda mark: True)


def reject_all(text: str) -> str:
    return resolve(text, lambda mark: False)


def own_changes(raw: str, uid: str) -> list[Change]:
    """The changes in `raw` whose marks carry this suggestion's id."""
    return [c for c in parse_changes(raw) if any(mark_id(m) == uid for m in c.all_marks)]
