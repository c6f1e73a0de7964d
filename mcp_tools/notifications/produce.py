"""From the change feed to events, once, in the process where the change happened.

- An edit of a document (any write path: a Yjs client, an MCP tool, the admin, the HTTP API, a management
  command) reaches the store's change listeners in the process that made it (`room.changed_here`); its
  subscribers get `notifications/resources/updated`, at most once per `DEBOUNCE_SECONDS` per document
  from this process (the first change at once, the last one after the window).
- Documents appearing, going or moving are seen where a folder document's rows are mirrored, which
  happens once per change (`lensrelay.vault.folders.folder_documents_changed`), and when a whole folder is
  deleted; sessions whose token sees the folder get `notifications/resources/list_changed`.
- A decision on a suggestion (`suggestions.signals.suggestion_decided`, sent by every path that records
  one: the admin, an editor removing the markup, a clean-up, and every withdrawal: a version restore
  that removed its markup, a later edit that superseded it) tells the session that proposed it with a
  `notifications/message` at level `notice`, logger `lens-relay.suggestions`.

Edits stay here, in the server process, rather than in the derive process: the hub that holds the GET
streams is woken at once by a producer in its own process. They cost the live path no query: the edit
only goes into a per-document debounce when the document has subscribers, which is answered from memory
(`SubscribedDocs`: one query per `SUBSCRIBED_REFRESH_SECONDS` for the whole process, and at once after this
process changes a subscription), so a subscription made on another worker takes effect within that.

Events are written to the log (`events`) in the same transaction as what they report where there is one,
and the streams of this process are woken at once; other workers' streams find them on their next poll.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.db.models.signals import pre_delete

from lensrelay.docstore.remembered import RememberedDocIds
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore, on_change
from lensrelay.models import Folder
from mcp_tools.notifications.events import events_append
from mcp_tools.notifications.hub import wake_all
from mcp_tools.notifications.subscriptions import (
    Listener,
    listener_of,
    listeners_seeing,
    subscribed_doc_ids,
    subscribers_of,
    subscriptions_generation,
)
from mcp_tools.sessions import LOG_LEVELS

logger = logging.getLogger(__name__)

DEBOUNCE_SECONDS = 0.25
DECISION_LEVEL = "notice"
DECISION_LOGGER = "lens-relay.suggestions"


def _after_commit_wake() -> None:
    transaction.on_commit(wake_all)


# ------------------------------------------------------------------------------------------ documents


def updated_message(uri: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}


def document_changed_events(*, doc_id: str) -> int:
    """Log `resources/updated` for every listening subscriber of the document; returns how many."""
    by_uri: dict[str, list[str]] = defaultdict(list)
    told: set[str] = set()
    for session_id, uri in subscribers_of(doc_id=doc_id):
        if session_id not in told:  # one event per session and change, should old rows hold two spellings
            told.add(session_id)
            by_uri[uri].append(session_id)
    made = 0
    with transaction.atomic():
        for uri, session_ids in by_uri.items():
            made += len(events_append(session_ids=session_ids, message=updated_message(uri)))
    return made


SUBSCRIBED_REFRESH_SECONDS = 1.0


class SubscribedDocs(RememberedDocIds):
    """Per store: the documents anyone subscribed to, from memory."""

    def __init__(self, store: DocStore) -> None:
        super().__init__(store)
        # Documents changed while this memory said nobody subscribed: told after all should the next read
        # find a subscription another worker made meanwhile.
        self._passed: set[str] = set()

    def refresh_seconds(self) -> float:
        return SUBSCRIBED_REFRESH_SECONDS

    def generation(self) -> int:
        return subscriptions_generation()

    def read(self) -> frozenset[str]:
        return subscribed_doc_ids()

    def passed_over(self, doc_id: str) -> None:
        self._passed.add(doc_id)
        self.recheck_when_due()

    async def _refresh(self) -> None:
        passed, self._passed = self._passed, set()
        await super()._refresh()
        for doc_id in passed & self.doc_ids:
            content_notifier(self.store).changed(doc_id)


def subscribed_docs(store: DocStore) -> SubscribedDocs:
    return store.attached(SubscribedDocs)


class ContentNotifier:
    """Debounces one process's document edits into `resources/updated` events."""

    def __init__(self, store: DocStore) -> None:
        self.store = store
        self._last: dict[str, float] = {}
        self._waiting: set[str] = set()

    def changed(self, doc_id: str) -> None:
        known = subscribed_docs(self.store)
        if not known.stale() and doc_id not in known.doc_ids:
            known.passed_over(doc_id)
            return  # nobody listens: no task, no query
        if doc_id in self._waiting:
            return  # the trailing event is already due
        now = time.monotonic()
        wait = self._last.get(doc_id, float("-inf")) + DEBOUNCE_SECONDS - now
        if wait <= 0:
            self._emit(doc_id, now)
            return
        self._waiting.add(doc_id)
        self.store.loop.call_later(wait, self._trailing, doc_id)

    def _trailing(self, doc_id: str) -> None:
        self._waiting.discard(doc_id)
        self._emit(doc_id, time.monotonic())

    def _emit(self, doc_id: str, now: float) -> None:
        self._last[doc_id] = now
        if len(self._last) > 10_000:  # forget documents whose window has long passed
            self._last = {d: t for d, t in self._last.items() if now - t < DEBOUNCE_SECONDS}
        self.store.spawn(self._write(doc_id))

    async def _write(self, doc_id: str) -> None:
        if doc_id not in await subscribed_docs(self.store).current():
            return
        if await self.store.db(document_changed_events, doc_id=doc_id):
            wake_all()


def content_notifier(store: DocStore) -> ContentNotifier:
    return store.attached(ContentNotifier)


@on_change
def _content_changed(room: Room, updates: Sequence[bytes]) -> None:
    if room.kind == "content" and room.changed_here:  # once, by the process where the edit happened
        content_notifier(room.store).changed(room.doc_id)


# ------------------------------------------------------------------------------------ document lists

LIST_CHANGED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}


def folder_documents_changed(sender: Any, *, folder_id: int, **kwargs: Any) -> None:
    """Receiver: a folder's markdown documents appeared, went or moved (inside the mirroring transaction)."""
    with _failures_contained("list_changed for folder %s", folder_id):
        listeners = listeners_seeing(folder_id=folder_id)
        if listeners and events_append(
            session_ids=[lst.session_id for lst in listeners], message=LIST_CHANGED
        ):
            _after_commit_wake()


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
    }
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
)


def suggestion_decided(sender: Any, *, pks: Sequence[int], **kwargs: Any) -> None:
    """Receiver: suggestions were decided (inside the transaction that records it)."""
    from suggestions.models import Suggestion

    with _failures_contained("decision notifications for %s", list(pks)):
        rows = Suggestion.objects.filter(pk__in=list(pks)).exclude(session_id="")
        made = 0
        for row in rows.values(*DECISION_FIELDS):
            listener = listener_of(session_id=row["session_id"])
            if listener is not None and _wants(listener, DECISION_LEVEL):
                made += len(events_append(session_ids=[listener.session_id], message=decision_message(row)))
        if made:
            _after_commit_wake()


class _failures_contained:
    """A notification that cannot be made is logged; the change it reports goes ahead regardless (a
    savepoint keeps a failed statement from spoiling the caller's transaction)."""

    def __init__(self, what: str, *args: Any) -> None:
        self.what, self.args = what, args
        self._atomic = transaction.atomic()

    def __enter__(self) -> None:
        self._atomic.__enter__()

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        self._atomic.__exit__(kind, exc, tb)
        if exc is not None and isinstance(exc, Exception):
            logger.exception("could not make " + self.what, *self.args)
            return True
        return False


def connect_notification_signals() -> None:
    from lensrelay.vault.folders import folder_documents_changed as documents_signal
    from suggestions.signals import suggestion_decided as decided_signal

    documents_signal.connect(folder_documents_changed, dispatch_uid="mcp_tools.notifications.documents")
    pre_delete.connect(folder_deleted, sender=Folder, dispatch_uid="mcp_tools.notifications.folder_deleted")
    decided_signal.connect(suggestion_decided, dispatch_uid="mcp_tools.notifications.decided")
