"""Comment threads in a note's text: the passage in a highlight, then the thread's comments, each touching
the one before it.

``{=={"thread":"9f…"}@@the passage==}``
``{>>{"author":"ana","timestamp":…,"thread":"9f…","comment":"a1…"}@@Why?<<}``
``{>>{"author":"claude",…,"thread":"9f…","comment":"b2…"}@@Because…<<}`` (one line in the note)

The text is the truth and reads in any CriticMarkup editor (metadata before ``@@``, a comment touching the
one before it is its reply, as the Rust server's editor and Obsidian's Commentator plugin write them), so an
exported vault keeps every comment; rows index it (``suggestions.lifecycle.commenting``). The accepted view
keeps the passage and drops the comments, so tools read the note as if none were there.

A thread is resolved while its first comment's metadata says ``"resolved":true``. It is detached when its
comments follow no non-empty highlight of its own: the passage was deleted, or the markup around it.
Detached threads stay listed and readable; nothing is lost with the passage.

The discussion of a suggestion is a thread too: its comments carry the suggestion's ``id`` as well, so they
group with its marks and leave the text with its decision (their rows stay).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from suggestions.markup.criticmarkup import (
    CLOSE_HIGHLIGHT,
    OPEN_COMMENT,
    OPEN_HIGHLIGHT,
    Mark,
    parse,
    render_comment,
    render_metadata_fields,
)
from suggestions.markup.rewriting import RawEdit

THREAD_KEY = "thread"
COMMENT_KEY = "comment"
RESOLVED_KEY = "resolved"
RESOLVED_BY_KEY = "resolved_by"
# ``@name`` mentions a staff member by username (Django's username characters).
MENTION_RE = re.compile(r"(?<![\w@.])@([\w.@+-]{1,150})")


def thread_of(mark: Mark) -> str | None:
    value = (mark.metadata or {}).get(THREAD_KEY)
    return value if isinstance(value, str) and value else None


def comment_of(mark: Mark) -> str | None:
    value = (mark.metadata or {}).get(COMMENT_KEY)
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class ThreadMarks:
    """One thread as the text holds it."""

    thread_id: str
    highlight: Mark | None
    comments: tuple[Mark, ...]

    @property
    def passage(self) -> str:
        return self.highlight.content if self.highlight is not None else ""

    @property
    def detached(self) -> bool:
        return not self.passage

    @property
    def resolved(self) -> bool:
        return (self.comments[0].metadata or {}).get(RESOLVED_KEY) is True

    @property
    def resolved_by(self) -> str:
        value = (self.comments[0].metadata or {}).get(RESOLVED_BY_KEY)
        return value if isinstance(value, str) else ""

    @property
    def end(self) -> int:
        return self.comments[-1].end


def thread_marks(raw: str, marks: Sequence[Mark] | None = None) -> list[ThreadMarks]:
    """Every thread in ``raw``, in the order they start. Comments of one thread that were split apart (a
    copy, a paste) count once, where the thread first appears."""
    found = parse(raw) if marks is None else marks
    threads: dict[str, ThreadMarks] = {}
    seen_comments: set[str] = set()
    previous: Mark | None = None
    for mark in found:
        thread_id = thread_of(mark) if mark.kind == "comment" else None
        if thread_id is None:
            previous = mark
            continue
        cid = comment_of(mark)
        if cid is None or cid in seen_comments:
            previous = mark
            continue
        seen_comments.add(cid)
        current = threads.get(thread_id)
        if current is None:
            anchor = (
                previous
                if previous is not None
                and previous.kind == "highlight"
                and previous.end == mark.start
                and thread_of(previous) == thread_id
                else None
            )
            threads[thread_id] = ThreadMarks(thread_id, anchor, (mark,))
        else:
            threads[thread_id] = ThreadMarks(thread_id, current.highlight, (*current.comments, mark))
        previous = mark
    return list(threads.values())


def thread_in(raw: str, thread_id: str) -> ThreadMarks | None:
    return next((t for t in thread_marks(raw) if t.thread_id == thread_id), None)


def comment_metadata(
    *,
    author: str,
    timestamp_ms: int,
    thread_id: str,
    comment_id: str,
    user_id: int | None = None,
    suggestion_id: str | None = None,
) -> str:
    fields: dict[str, str | int | bool] = {"author": author, "timestamp": int(timestamp_ms)}
    if suggestion_id:
        # Groups the comment with the suggestion's marks: it goes with the decision.
        fields["id"] = suggestion_id
    fields[THREAD_KEY] = thread_id
    fields[COMMENT_KEY] = comment_id
    if user_id is not None:
        fields["user"] = user_id
    return render_metadata_fields(fields)


def passage_overlaps_markup(raw: str, start: int, end: int) -> bool:
    """Whether ``raw[start:end]`` holds, or lies inside, any mark: marks do not nest."""
    return any(mark.start < end and start < mark.end for mark in parse(raw))


def start_edits(raw: str, start: int, end: int, *, thread_id: str, meta: str, body: str) -> list[RawEdit]:
    """Wrap ``raw[start:end]`` in the thread's highlight and put its first comment right after it."""
    opening = OPEN_HIGHLIGHT + render_metadata_fields({THREAD_KEY: thread_id})
    return [RawEdit(start, start, opening), RawEdit(end, end, CLOSE_HIGHLIGHT + render_comment(body, meta))]


def reply_edit(thread: ThreadMarks, *, meta: str, body: str) -> RawEdit:
    return RawEdit(thread.end, thread.end, render_comment(body, meta))


def suggestion_reply_edit(marks: Sequence[Mark], *, meta: str, body: str) -> RawEdit:
    """After the last mark of a suggestion (its reason and replies included)."""
    end = marks[-1].end
    return RawEdit(end, end, render_comment(body, meta))


def resolution_edit(thread: ThreadMarks, *, resolved: bool, by: str) -> RawEdit | None:
    """Rewrite the first comment's metadata to say the thread is (no longer) resolved; None: already so."""
    first = thread.comments[0]
    if thread.resolved == resolved:
        return None
    fields: dict[str, Any] = {
        k: v for k, v in (first.metadata or {}).items() if k not in (RESOLVED_KEY, RESOLVED_BY_KEY)
    }
    if resolved:
        fields[RESOLVED_KEY] = True
        fields[RESOLVED_BY_KEY] = by
    kept = {k: v for k, v in fields.items() if isinstance(v, str | int | bool)}
    return RawEdit(first.start + len(OPEN_COMMENT), first.content_start, render_metadata_fields(kept))


def mentions(body: str, known: Mapping[str, Any]) -> list[str]:
    """The usernames ``@mentioned`` in ``body`` that are in ``known`` (case as the username has it)."""
    by_lower = {name.lower(): name for name in known}
    found: list[str] = []
    for match in MENTION_RE.finditer(body):
        name = by_lower.get(match.group(1).rstrip(".").lower())
        if name is not None and name not in found:
            found.append(name)
    return found
