"""From the change feed to events: edits by the derived view, the rest inside the change's transaction.

- An edit of a document (any write path: a Yjs client, an MCP tool, the admin, the HTTP API, a management
  command, on any worker) is logged (`YUpdate`); the derive process (`lensrelay.docstore.derived`) reads
  it with the rest of its pass and this module's derived view, "mcp resource notifications", logs one
  `notifications/resources/updated` per subscribed, listening session and changed note of the pass (one
  query for the subscribers of the whole batch). A note edited many times between two passes is one
  event: the pass coalesces a burst, within about `LENSRELAY_DERIVE_POLL_SECONDS`. The hub holding the
  session's GET stream, in a server process, finds the event on its next poll
  (`LENSRELAY_MCP_EVENTS_POLL_SECONDS`). The server processes do no notification work per update. The
  derive process killed, edits go on; started again, it resumes from its cursor and tells what came
  meanwhile (a restart may repeat an event for a note changed just before it: at least once).
  With `LENSRELAY_DERIVED_WORK=inline` (one process, no launcher) the same view runs in the server,
  after `DEBOUNCE_SECONDS` of the process's own edits, and wakes this process's streams at once.
- Documents appearing, going or moving are seen where a folder document's rows are mirrored, which
  happens once per change (`lensrelay.vault.folders.folder_documents_changed`), and when a whole folder is
  deleted; sessions whose token sees the folder get `notifications/resources/list_changed`.
- A decision on a suggestion (`suggestions.signals.suggestion_decided`, sent by every path that records
  one: the admin, an editor removing the markup, a clean-up, and every withdrawal: a version restore
  that removed its markup, a later edit that superseded it) tells the session that proposed it with a
  `notifications/message` at level `notice`, logger `lens-relay.suggestions`.
- A comment in a thread (`suggestions.signals.comment_posted`, sent where each comment's row is made, by
  whomever) tells the assistant sessions taking part in it (the one that started it or proposed the
  suggestion it discusses, and every one that wrote in it), but the writer's own, with a
  `notifications/message` at level `notice`, logger `lens-relay.comments`.

The last two are written to the log (`events`) in the same transaction as what they report, once, and the
streams of this process are woken at once; other processes' streams find them on their next poll.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from django.db import transaction
from django.db.models.signals import pre_delete

from lensrelay.docstore.derived import derived_debouncer
from lensrelay.docstore.later import Debounced
from lensrelay.docstore.store import DocStore
from lensrelay.models import Folder
from mcp_tools.callers.sessions import LOG_LEVELS
from mcp_tools.notifications.events import events_append
from mcp_tools.notifications.guard import after_commit_wake, failures_contained
from mcp_tools.notifications.hub import wake_all
from mcp_tools.notifications.subscriptions import (
    Listener,
    listener_of,
    listeners_seeing,
    subscribers_of,
)
from suggestions.markup.revising import revision_changes

DECISION_LEVEL = "notice"
DECISION_LOGGER = "lens-relay.suggestions"


# ------------------------------------------------------------------------------------------ documents


def updated_message(uri: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}


def documents_changed_events(*, doc_ids: Collection[str]) -> int:
    """Log `resources/updated` once for every listening subscriber of each document; returns how many."""
    by_uri: dict[str, list[str]] = defaultdict(list)
    for subscriber in subscribers_of(doc_ids=doc_ids):
        by_uri[subscriber.uri].append(subscriber.session_id)
    made = 0
    if not by_uri:
        return made  # no transaction to open either: a pass nobody listens to costs its one query
    with transaction.atomic():
        for uri, session_ids in by_uri.items():
            made += len(events_append(session_ids=session_ids, message=updated_message(uri)))
    return made


async def notify_changed(store: DocStore, doc_ids: frozenset[str]) -> None:
    """The derived view: the notes of one pass (or, inline, of one debounce window) changed."""
    if await store.db(documents_changed_events, doc_ids=doc_ids):
        wake_all()  # committed: this process's streams read at once (the derive process holds none)


# The derived view's name (registered in mcp_tools.apps). Where each server runs derived work itself
# (LENSRELAY_DERIVED_WORK=inline): the edits of this process, gathered for this long, then told in one batch.
NOTIFIER = "mcp resource notifications"
DEBOUNCE_SECONDS = 0.25


def inline_notifier(store: DocStore) -> Debounced:
    return derived_debouncer(store, NOTIFIER)


# ------------------------------------------------------------------------------------ document lists

LIST_CHANGED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}


def folder_documents_changed(sender: Any, *, folder_id: int, **kwargs: Any) -> None:
    """Receiver: a folder's markdown documents appeared, went or moved (inside the mirroring transaction)."""
    with failures_contained("list_changed for folder %s", folder_id):
        listeners = listeners_seeing(folder_id=folder_id)
        if listeners and events_append(
            session_ids=[lst.session_id for lst in listeners], message=LIST_CHANGED
        ):
            after_commit_wake()


def folder_deleted(sender: Any, *, instance: Any, **kwargs: Any) -> None:
    """Receiver (pre_delete of a Folder): its documents go with it, for everyone who saw it."""
    folder_documents_changed(sender, folder_id=instance.pk)


# ---------------------------------------------------------------------------------------- suggestions


def _wants(listener: Listener, level: str) -> bool:
    if not listener.log_level or listener.log_level not in LOG_LEVELS:
        return True
    return LOG_LEVELS.index(level) >= LOG_LEVELS.index(listener.log_level)


def decision_note(row: Mapping[str, Any]) -> str:
    """The row's note; a superseded row has none of its own, so the message says what happened."""
    if row["note"] or row["status"] != "superseded":
        return str(row["note"] or "")
    by = row.get("superseded_by__uid")
    return (
        f"Withdrawn: superseded by suggestion {by}, a later edit of the same text that carries this "
        "suggestion's original text forward."
        if by
        else "Withdrawn: superseded by a later edit of the same text."
    )


def decision_message(row: Mapping[str, Any]) -> dict[str, Any]:
    data = {
        "type": "suggestion_decided",
        "suggestion": row["uid"],
        "status": row["status"],
        "path": row["path"],
        "kind": row["kind"],
        "decidedBy": row["decided_by__username"] or "",
        "note": decision_note(row),
        "acceptedWithChanges": bool(row.get("revision")),
    }
    if row.get("revision"):
        proposed = [hunk.get("new", "") for hunk in row.get("hunks") or []]
        data["changes"] = revision_changes(proposed, row["revision"])
    return {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": DECISION_LEVEL, "logger": DECISION_LOGGER, "data": data},
    }


DECISION_FIELDS = (
    "uid",
    "status",
    "path",
    "kind",
    "note",
    "session_id",
    "decided_by__username",
    "superseded_by__uid",
    "revision",
    "hunks",
)


def suggestion_decided(sender: Any, *, pks: Sequence[int], **kwargs: Any) -> None:
    """Receiver: suggestions were decided (inside the transaction that records it)."""
    from suggestions.models import Suggestion

    with failures_contained("decision notifications for %s", list(pks)):
        rows = Suggestion.objects.filter(pk__in=list(pks)).exclude(session_id="")
        made = 0
        for row in rows.values(*DECISION_FIELDS):
            listener = listener_of(session_id=row["session_id"])
            if listener is not None and _wants(listener, DECISION_LEVEL):
                made += len(events_append(session_ids=[listener.session_id], message=decision_message(row)))
        if made:
            after_commit_wake()


COMMENT_LOGGER = "lens-relay.comments"


def comment_message(comment: Any) -> dict[str, Any]:
    thread = comment.thread
    data = {
        "type": "comment_posted",
        "thread": thread.uid,
        "path": thread.path,
        "passage": thread.passage[:500],
        "suggestion": thread.suggestion.uid if thread.suggestion_id and thread.suggestion else None,
        "author": comment.author,
        "text": comment.body,
        "status": thread.status,
    }
    return {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": DECISION_LEVEL, "logger": COMMENT_LOGGER, "data": data},
    }


def comment_posted(sender: Any, *, pks: Sequence[int], **kwargs: Any) -> None:
    """Receiver: comments were written (inside the transaction that makes their rows)."""
    from suggestions.models import ThreadComment

    with failures_contained("comment notifications for %s", list(pks)):
        made = 0
        for comment in ThreadComment.objects.select_related("thread__suggestion").filter(pk__in=list(pks)):
            thread = comment.thread
            sessions = {thread.session_id} if thread.token_id else set()
            sessions |= set(
                thread.comments.exclude(token=None)
                .exclude(session_id="")
                .values_list("session_id", flat=True)
            )
            sessions -= {"", comment.session_id}
            for session_id in sorted(sessions):
                listener = listener_of(session_id=session_id)
                if listener is not None and _wants(listener, DECISION_LEVEL):
                    made += len(
                        events_append(session_ids=[listener.session_id], message=comment_message(comment))
                    )
        if made:
            after_commit_wake()


def connect_notification_signals() -> None:
    from lensrelay.vault.folders import folder_documents_changed as documents_signal
    from suggestions.signals import comment_posted as comment_signal
    from suggestions.signals import suggestion_decided as decided_signal

    documents_signal.connect(folder_documents_changed, dispatch_uid="mcp_tools.notifications.documents")
    pre_delete.connect(folder_deleted, sender=Folder, dispatch_uid="mcp_tools.notifications.folder_deleted")
    decided_signal.connect(suggestion_decided, dispatch_uid="mcp_tools.notifications.decided")
    comment_signal.connect(comment_posted, dispatch_uid="mcp_tools.notifications.comments")
