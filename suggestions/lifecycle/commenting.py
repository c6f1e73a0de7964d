"""Comment threads: start one on a passage, reply, resolve and reopen; and the rows that index them.

People (the editor, the review page) and assistants (MCP) go through the same services. Each writes the
thread's CriticMarkup into the note (suggestions/markup/threads.py) in one synchronous stretch after its
check, as proposals do, so connected clients see it at once. The rows of a service's comment are made
before its text is written, naming who wrote it (token, session, person); comments that reach the text any
other way (typed by hand, an import, a restore) get their rows from `threads_index`, which the derived
view "comment threads" runs on every changed note. Either way a comment's row is made once, and its
making is the one door for what follows it: the `comment.created` webhook and the `comment_posted` signal
(MCP sessions taking part in the thread are told).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from lensrelay.docstore.derived import derived_view
from lensrelay.docstore.inlists import rows_in
from lensrelay.docstore.panics import failures_logged
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.texts import room_text, text_cache
from lensrelay.models import Document
from lensrelay.vault.paths import DocEntry, path_index
from suggestions.errors import SuggestionError
from suggestions.lifecycle.planning import find_occurrences, refuse_delimiters
from suggestions.lifecycle.proposing import write_plan
from suggestions.markup.accepted_view import accepted_text, build_accepted_view
from suggestions.markup.criticmarkup import mark_id, parse, render_comment, render_metadata_fields
from suggestions.markup.rewriting import RawEdit, apply_raw_edits
from suggestions.markup.threads import (
    COMMENT_KEY,
    RESOLVED_BY_KEY,
    RESOLVED_KEY,
    THREAD_KEY,
    ThreadMarks,
    comment_metadata,
    comment_of,
    mentions,
    passage_overlaps_markup,
    reply_edit,
    resolution_edit,
    start_edits,
    suggestion_reply_edit,
    thread_in,
    thread_marks,
)
from suggestions.models import Suggestion, Thread, ThreadComment, new_uid
from suggestions.signals import comment_posted
from suggestions.webhooks import comment_created_record, comment_resolved_record

_logger = logging.getLogger(__name__)

MAX_COMMENT_CHARS = 10_000
MAX_PASSAGE_CHARS = 2_000
INDEX_DELAY_SECONDS = 0.5


@dataclass(frozen=True)
class Commenter:
    """Who writes: an assistant (its token and session) or a person (their user id)."""

    author: str
    token_id: int | None = None
    session_id: str = ""
    person_id: int | None = None


def _checked_body(body: str) -> str:
    text = body.strip()
    if not text:
        raise SuggestionError("Error: a comment needs some text.")
    if len(text) > MAX_COMMENT_CHARS:
        raise SuggestionError(f"Error: a comment holds at most {MAX_COMMENT_CHARS:,} characters.")
    refuse_delimiters(text, which="comment")
    return text


def _meta(commenter: Commenter, *, thread_id: str, comment_id: str, suggestion_id: str | None = None) -> str:
    return comment_metadata(
        author=commenter.author,
        timestamp_ms=int(time.time() * 1000),
        thread_id=thread_id,
        comment_id=comment_id,
        user_id=commenter.person_id,
        suggestion_id=suggestion_id,
    )


def _staff_usernames() -> dict[str, int]:
    return dict(get_user_model().objects.filter(is_staff=True, is_active=True).values_list("username", "pk"))


def _comment_row(thread: Thread, commenter: Commenter, *, uid: str, body: str) -> ThreadComment:
    return ThreadComment(
        uid=uid,
        thread=thread,
        author=commenter.author,
        token_id=commenter.token_id,
        person_id=commenter.person_id,
        session_id=commenter.session_id,
        body=body,
        mentions=mentions(body, _staff_usernames()),
    )


def _comment_made(comment: ThreadComment) -> None:
    """The one door after a comment's row is saved (inside its transaction)."""
    comment_created_record(comment=comment)
    comment_posted.send(sender=ThreadComment, pks=[comment.pk])


def _save_comment(comment: ThreadComment, thread: Thread | None = None) -> ThreadComment:
    with transaction.atomic():
        if thread is not None:
            thread.save()
            comment.thread = thread
        comment.save()
        Thread.objects.filter(pk=comment.thread_id).update(updated=timezone.now())
        _comment_made(comment)
    return comment


def _forget(comment_uid: str, thread_uid: str | None = None) -> None:
    """The text could not be written: the rows made for it go (their events with them)."""
    with transaction.atomic():
        ThreadComment.objects.filter(uid=comment_uid).delete()
        if thread_uid is not None:
            Thread.objects.filter(uid=thread_uid).delete()


def _write(room: Room, raw: str, edits: Sequence[RawEdit]) -> None:
    write_plan(room, raw, [sorted(edits, key=lambda e: e.start)])


async def _room(store: DocStore, doc_id: str, path: str) -> Room:
    room = await store.get(doc_id)
    if room is None:
        raise SuggestionError(f"Error: Document not found: {path}")
    return room


def _locate(raw: str, passage: str, path: str, near: int | None = None) -> tuple[int, int]:
    """Where ``passage`` (as read shows the note) is in the raw text, in plain text. It must be found once,
    or, with ``near`` (a raw index: where a person selected it), the occurrence nearest to that is taken."""
    view = build_accepted_view(raw)
    starts = find_occurrences(view.text, passage)
    if not starts:
        raise SuggestionError(
            f"Error: the passage was not found in {path}. Quote it exactly as read shows the note."
        )
    if len(starts) > 1 and near is not None:
        at = view.to_view(max(0, min(near, len(raw))))
        starts = [min(starts, key=lambda start: abs(start - at))]
    if len(starts) > 1:
        raise SuggestionError(
            f"Error: the passage was found {len(starts)} times in {path}. Quote more of the words around "
            "it so it is found once."
        )
    start, end = view.raw_range(starts[0], starts[0] + len(passage))
    if passage_overlaps_markup(raw, start, end):
        raise SuggestionError(
            "Error: the passage overlaps a pending suggestion or another thread's passage. Comment on the "
            "text around it, or reply to the suggestion (its id) or the thread."
        )
    return start, end


async def thread_start(
    *,
    store: DocStore,
    entry: DocEntry,
    commenter: Commenter,
    passage: str,
    body: str,
    near: int | None = None,
) -> Thread:
    """A new thread on ``passage`` (quoted as read shows the note, in plain text; found once, or nearest
    to ``near``)."""
    text = _checked_body(body)
    if not passage.strip():
        raise SuggestionError("Error: quote the passage the comment is about.")
    if len(passage) > MAX_PASSAGE_CHARS:
        raise SuggestionError(f"Error: a passage holds at most {MAX_PASSAGE_CHARS:,} characters.")
    refuse_delimiters(passage, which="passage")
    if not entry.is_markdown:
        raise SuggestionError(f"Error: {entry.user_path} is not a markdown note; only notes hold comments.")
    room = await _room(store, entry.doc_id, entry.user_path)
    checked = room_text(room)
    start, end = _locate(checked, passage, entry.user_path, near)  # refused before any row is made
    thread = Thread(
        passage=checked[start:end],
        folder_id=entry.folder_id,
        doc_id=entry.doc_id,
        path=entry.user_path,
        author=commenter.author,
        token_id=commenter.token_id,
        person_id=commenter.person_id,
        session_id=commenter.session_id,
    )
    thread.document = await store.db(Document.objects.filter(doc_id=entry.doc_id).first)
    comment = await store.db(_comment_row, thread, commenter, uid=new_uid(), body=text)
    await store.db(_save_comment, comment, thread)
    try:
        raw = room_text(room)  # no await from here to the write
        start, end = _locate(raw, passage, entry.user_path, near)
        meta = _meta(commenter, thread_id=thread.uid, comment_id=comment.uid)
        edits = start_edits(raw, start, end, thread_id=thread.uid, meta=meta, body=text)
        planned = apply_raw_edits(raw, edits)
        written = thread_in(planned, thread.uid)
        if (
            written is None
            or written.passage != raw[start:end]
            or accepted_text(planned) != accepted_text(raw)
        ):
            raise SuggestionError("Error: the comment could not be anchored there. Nothing was changed.")
        _write(room, raw, edits)
    except BaseException:
        await store.db(_forget, comment.uid, thread.uid)
        raise
    if raw[start:end] != thread.passage:  # the note changed between the check and the write
        thread.passage = raw[start:end]
        await store.db(Thread.objects.filter(pk=thread.pk).update, passage=thread.passage)
    await room.flushed()
    return thread


async def thread_reply(
    *, store: DocStore, thread: Thread | Suggestion, commenter: Commenter, body: str
) -> ThreadComment:
    """A reply at the end of the thread; given a pending suggestion, in its discussion, made with the first
    reply that passes the checks (a refused one makes nothing). A detached thread whose comments left the
    text takes replies in its rows only."""
    text = _checked_body(body)
    if isinstance(thread, Suggestion):
        thread = await store.db(suggestion_thread, suggestion=thread)
    comment = await store.db(_comment_row, thread, commenter, uid=new_uid(), body=text)
    await store.db(_save_comment, comment)
    try:
        room = await store.get(thread.doc_id)
        if room is None:
            return comment
        raw = room_text(room)
        edit = _reply_edit(raw, thread, commenter, comment.uid, text)
        if edit is not None:
            _write(room, raw, [edit])
    except BaseException:
        await store.db(_forget, comment.uid)
        raise
    await room.flushed()
    return comment


def _reply_edit(
    raw: str, thread: Thread, commenter: Commenter, comment_uid: str, body: str
) -> RawEdit | None:
    suggestion_uid = thread.suggestion.uid if thread.suggestion is not None else None
    meta = _meta(commenter, thread_id=thread.uid, comment_id=comment_uid, suggestion_id=suggestion_uid)
    if suggestion_uid is not None:
        own = [m for m in parse(raw) if mark_id(m) == suggestion_uid]
        return suggestion_reply_edit(own, meta=meta, body=body) if own else None
    marks = thread_in(raw, thread.uid)
    return reply_edit(marks, meta=meta, body=body) if marks is not None else None


def suggestion_thread(*, suggestion: Suggestion) -> Thread:
    """The thread discussing ``suggestion`` (made on its first reply), its reason as the first comment."""
    with transaction.atomic():
        thread, made = Thread.objects.get_or_create(
            uid=suggestion.uid,
            defaults={
                "folder_id": suggestion.folder_id,
                "document_id": suggestion.document_id,
                "doc_id": suggestion.doc_id,
                "path": suggestion.path,
                "passage": suggestion.old_text or suggestion.new_text,
                "suggestion": suggestion,
                "author": suggestion.author,
                "token_id": suggestion.token_id,
                "person_id": suggestion.person_id,
                "session_id": suggestion.session_id,
                "created": suggestion.created,
            },
        )
        if made and suggestion.comment:
            ThreadComment.objects.create(
                thread=thread,
                author=suggestion.author,
                token_id=suggestion.token_id,
                person_id=suggestion.person_id,
                session_id=suggestion.session_id,
                body=suggestion.comment,
                created=suggestion.created,
            )
    return thread


async def thread_resolve(*, store: DocStore, thread: Thread, commenter: Commenter, resolved: bool) -> Thread:
    """Resolve (or reopen) the thread: its first comment's metadata in the text (the truth), then its row.
    The indexer may read the text first and set the row itself: whichever comes first records the change
    and its webhook, once."""
    status = Thread.Status.RESOLVED if resolved else Thread.Status.OPEN
    if thread.status == status:
        return thread
    room = await store.get(thread.doc_id)
    if room is not None and thread.suggestion_id is None:
        raw = room_text(room)
        marks = thread_in(raw, thread.uid)
        edit = resolution_edit(marks, resolved=resolved, by=commenter.author) if marks is not None else None
        if edit is not None:
            _write(room, raw, [edit])
            await room.flushed()
    await store.db(status_set, thread, status=status, by=commenter.author)
    return thread


def status_set(thread: Thread, *, status: str, by: str) -> bool:
    """Set the row's status unless it already holds it (then nothing is recorded); True when it changed."""
    resolved = status == Thread.Status.RESOLVED
    fields = {
        "status": status,
        "resolved_at": timezone.now() if resolved else None,
        "resolved_by": by[:200] if resolved else "",
        "updated": timezone.now(),
    }
    with transaction.atomic():
        changed = Thread.objects.filter(pk=thread.pk).exclude(status=status).update(**fields)
        for name, value in fields.items():
            setattr(thread, name, value)
        if changed and resolved:
            comment_resolved_record(thread=thread)
    return bool(changed)


# -- rows from the text -----------------------------------------------------------------------------------


def _from_ms(value: object) -> datetime:
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10**14:
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    return timezone.now()


def _author(metadata: Mapping[str, object] | None) -> str:
    value = (metadata or {}).get("author")
    return value[:200] if isinstance(value, str) and value else "unknown"


def threads_index(*, entry: DocEntry, raw: str) -> None:
    """Bring the rows of ``entry``'s threads in step with its text: new threads and comments get rows (and
    their events), passages, detachment and resolution follow the text. Rows the text lost are kept."""
    found = thread_marks(raw) if "{>>" in raw else []
    rows = {t.uid: t for t in Thread.objects.filter(doc_id=entry.doc_id)}
    foreign = set(
        Thread.objects.filter(uid__in=[t.thread_id for t in found if t.thread_id not in rows]).values_list(
            "uid", flat=True
        )
    )
    for marks in found:
        if marks.thread_id in foreign:
            continue  # another note's thread, copied here: it stays that note's
        _index_thread(entry, marks, rows.get(marks.thread_id))
    present = {t.thread_id for t in found}
    lost = [uid for uid, row in rows.items() if uid not in present and row.suggestion_id is None]
    if lost:
        Thread.objects.filter(uid__in=lost, detached=False).update(detached=True, updated=timezone.now())


def _index_thread(entry: DocEntry, marks: ThreadMarks, row: Thread | None) -> None:
    first = marks.comments[0]
    with transaction.atomic():
        if row is None:
            row = Thread.objects.create(
                uid=marks.thread_id,
                folder_id=entry.folder_id,
                document=Document.objects.filter(doc_id=entry.doc_id).first(),
                doc_id=entry.doc_id,
                path=entry.user_path,
                author=_author(first.metadata),
                created=_from_ms((first.metadata or {}).get("timestamp")),
            )
        changed: dict[str, object] = {}
        if row.suggestion_id is None:
            if marks.passage and marks.passage != row.passage:
                changed["passage"] = marks.passage
            if marks.detached != row.detached:
                changed["detached"] = marks.detached
        if row.path != entry.user_path:
            changed["path"] = entry.user_path
        if changed:
            changed["updated"] = timezone.now()
            Thread.objects.filter(pk=row.pk).update(**changed)
            for name, value in changed.items():
                setattr(row, name, value)
        status = Thread.Status.RESOLVED if marks.resolved else Thread.Status.OPEN
        if status != row.status and row.suggestion_id is None:
            status_set(row, status=status, by=marks.resolved_by)
        known = set(ThreadComment.objects.filter(thread=row).values_list("uid", flat=True))
        staff = None
        for mark in marks.comments:
            uid = comment_of(mark)
            if uid is None or uid in known or ThreadComment.objects.filter(uid=uid).exists():
                continue
            staff = staff if staff is not None else _staff_usernames()
            comment = ThreadComment.objects.create(
                uid=uid,
                thread=row,
                author=_author(mark.metadata),
                body=mark.content,
                mentions=mentions(mark.content, staff),
                created=_from_ms((mark.metadata or {}).get("timestamp")),
            )
            _comment_made(comment)


def lost_threads_markup(doc_id: str, raw: str) -> str:
    """``raw`` with every thread its text lost (rows only: the markup was deleted with its passage) written
    back after it as a detached thread, its comments one after the other: an export keeps every comment,
    and importing it again lists the thread, detached."""
    in_text = {t.thread_id for t in thread_marks(raw)} if "{>>" in raw else set()
    lost = [
        t
        for t in Thread.objects.filter(doc_id=doc_id, suggestion=None).prefetch_related("comments")
        if t.uid not in in_text
    ]
    chains: list[str] = []
    for thread in sorted(lost, key=lambda t: (t.created, t.pk)):
        pieces = []
        for index, comment in enumerate(thread.comments.all()):
            fields: dict[str, str | int | bool] = {
                "author": comment.author,
                "timestamp": int(comment.created.timestamp() * 1000),
                THREAD_KEY: thread.uid,
                COMMENT_KEY: comment.uid,
            }
            if index == 0 and thread.status == Thread.Status.RESOLVED:
                fields.update({RESOLVED_KEY: True, RESOLVED_BY_KEY: thread.resolved_by})
            pieces.append(render_comment(_inert(comment.body), render_metadata_fields(fields)))
        if pieces:
            chains.append("".join(pieces))
    if not chains:
        return raw
    return raw + ("" if raw.endswith("\n") or not raw else "\n") + "\n".join(chains) + "\n"


def _inert(body: str) -> str:
    # A body typed into the text by hand may hold what the services refuse; it must not end the comment.
    return body.replace("<<}", "<<\u200b}")


def threads_index_many(entries: Collection[tuple[DocEntry, str]]) -> None:
    """Index a pass's changed notes. Most hold no comment and never had a thread: one query for the batch
    finds the notes with rows (a plain statement: the derive process asks on every pass, issue 36), and a
    note with neither those nor a comment opener costs nothing more."""
    ids = [entry.doc_id for entry, _ in entries]
    table = connection.ops.quote_name(Thread._meta.db_table)
    with_rows = {
        doc_id for (doc_id,) in rows_in(f"SELECT DISTINCT doc_id FROM {table} WHERE doc_id IN ({{ids}})", ids)
    }
    for entry, raw in entries:
        if "{>>" not in raw and entry.doc_id not in with_rows:
            continue
        with failures_logged(_logger, "indexing the comment threads of %s", entry.doc_id):
            threads_index(entry=entry, raw=raw)


async def _index_changed(store: DocStore, doc_ids: frozenset[str]) -> None:
    index = path_index(store)
    await index.ensure()
    entries = [e for d in sorted(doc_ids) if (e := index.by_doc_id(d)) is not None and e.is_markdown]
    if not entries:
        return
    texts = await text_cache(store).get_many([e.doc_id for e in entries])
    await store.db(threads_index_many, [(e, texts[e.doc_id]) for e in entries if e.doc_id in texts])


THREADS = derived_view("comment threads", handle=_index_changed, delay=lambda: INDEX_DELAY_SECONDS)
