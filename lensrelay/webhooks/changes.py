"""`document.changed` from the update log: the delivery loop follows the log from a durable cursor of its
own and records one event per document, debounced.

The change itself is durable in the log before anyone sees it, so deriving the event from the log loses
nothing and adds no work to the live path. Each pass reads the rows after the cursor and, in one
transaction, moves the cursor and records the events: a kill at any point leaves both as they were. A
document still being edited keeps one waiting event whose `not_before` moves on with each pass (by
LENSRELAY_WEBHOOK_DEBOUNCE_SECONDS, at most ten times that after its first change), so a typing burst is
one event, sent once the typing pauses.

The first start ever begins at the log's end: endpoints hear of changes made from then on, not of the
whole vault's history.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from lensrelay.docstore.derived import STEP_ROWS, WINDOW, cursor_load, cursor_save
from lensrelay.docstore.trashdoc import is_trashed
from lensrelay.models import Document, YSnapshot, YUpdate
from lensrelay.webhooks.events import FolderName, document_data, wanted_types
from lensrelay.webhooks.models import EventType, WebhookEvent

CURSOR_NAME = "webhooks"
# While nobody listens the cursor follows the log's end in memory and is stored this often: each store is a
# write transaction, which on SQLite waits for and holds back the live path's update log.
IDLE_SAVE_SECONDS = 10.0
CHANGED = EventType.DOCUMENT_CHANGED
# A document changing without pause still gets an event this many debounce periods after its first change.
MAX_WAIT_PERIODS = 10
AUTHORS_KEPT = 20


@dataclass
class Seen:
    upto: int = 0
    authors: list[str] = field(default_factory=list)

    def add(self, row_id: int, author: str) -> None:
        self.upto = max(self.upto, row_id)
        if author and author not in self.authors and len(self.authors) < AUTHORS_KEPT:
            self.authors.append(author)


class ChangeFollower:
    """Synchronous; the delivery loop runs `step` on its database thread."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.cursor: int | None = None
        self._clock = clock
        self._saved_at = clock()
        self._stored: int | None = None  # the cursor as the database holds it
        self._handled: set[int] = set()
        self._snapshots: dict[str, int] = {}
        self._restarted = True
        # Read from the cursor itself (no window below it): on the first start ever, and after passes that
        # skipped the log because nobody listened, what lies below it is no news to anyone.
        self._from_cursor = False
        self._low = 0  # never read below this (set where the window below the cursor is no news)
        self.nobody_listens = False  # no enabled endpoint at the last pass (of any event type)

    def _start(self) -> tuple[int, bool]:
        """The cursor, and whether it was just made (the first start ever: no window to read again)."""
        made = False
        if self.cursor is None:
            cursor = cursor_load(name=CURSOR_NAME)
            if cursor is None:
                cursor = YUpdate.objects.aggregate(top=Max("id"))["top"] or 0
                cursor_save(last_update_id=cursor, name=CURSOR_NAME)
                made = True
            self.cursor = self._stored = cursor
        return self.cursor, made

    def step(self) -> int:
        """One pass; returns how many documents' events were recorded or moved on."""
        cursor, made = self._start()
        wanted = wanted_types()
        self.nobody_listens = not wanted
        if CHANGED not in wanted:
            # Nobody listens: move the cursor to the log's end without reading it. An endpoint added
            # later hears of changes from then on (after a restart, from at most IDLE_SAVE_SECONDS before).
            newest = max(cursor, YUpdate.objects.aggregate(top=Max("id"))["top"] or 0)
            if newest != self._stored and self._clock() - self._saved_at >= IDLE_SAVE_SECONDS:
                self._save(newest)
            self.cursor, self._restarted, self._handled, self._from_cursor = newest, False, set(), True
            return 0
        if made or self._from_cursor:
            self._low = cursor
        floor = max(self._low, cursor - WINDOW)
        self._from_cursor = False
        rows = list(
            YUpdate.objects.filter(id__gt=floor)
            .order_by("id")
            .values_list("id", "doc_id", "author")[:STEP_ROWS]
        )
        fresh = [row for row in rows if row[0] not in self._handled]
        seen: dict[str, Seen] = {}
        for row_id, doc_id, author in fresh:
            seen.setdefault(doc_id, Seen()).add(row_id, author)
        # Rows a compaction folded away before this pass read them: their documents changed too.
        for doc_id, upto in YSnapshot.objects.filter(upto_update_id__gt=cursor).values_list(
            "doc_id", "upto_update_id"
        ):
            # Each snapshot once: it stays past the cursor while a long backlog is read in steps.
            if self._snapshots.get(doc_id) != upto:
                self._snapshots[doc_id] = upto
                seen.setdefault(doc_id, Seen()).add(upto, "")
        newest = max([cursor, *(row[0] for row in rows)])
        recorded = 0
        if seen or newest != self._stored:
            with transaction.atomic():
                if seen:
                    recorded = _record(seen, restarted=self._restarted)
                cursor_save(last_update_id=newest, name=CURSOR_NAME)
            self._stored, self._saved_at = newest, self._clock()
        self.cursor = newest
        self._restarted = False
        self._handled.update(row[0] for row in fresh)
        self._handled = {row_id for row_id in self._handled if row_id > newest - WINDOW}
        self._snapshots = {doc_id: upto for doc_id, upto in self._snapshots.items() if upto > newest}
        return recorded

    def _save(self, cursor: int) -> None:
        cursor_save(last_update_id=cursor, name=CURSOR_NAME)
        self._stored, self._saved_at = cursor, self._clock()


def _record(seen: dict[str, Seen], *, restarted: bool) -> int:
    documents = {
        row.doc_id: row
        for row in Document.objects.select_related("folder")
        .filter(doc_id__in=list(seen))
        .exclude(type="folder")
    }
    if not documents:
        return 0
    waiting = {
        event.doc_id: event
        for event in WebhookEvent.objects.filter(type=CHANGED, released=False, doc_id__in=list(documents))
    }
    covered: dict[str, int] = {}
    if restarted:
        # After a restart the window below the cursor is read again: what an earlier event already covers
        # is not told twice.
        covered = dict(
            WebhookEvent.objects.filter(type=CHANGED, doc_id__in=list(documents))
            .values("doc_id")
            .annotate(top=Max("upto"))
            .values_list("doc_id", "top")
        )
    now = timezone.now()
    debounce = timedelta(seconds=float(settings.LENSRELAY_WEBHOOK_DEBOUNCE_SECONDS))
    count = 0
    for doc_id, row in documents.items():
        if is_trashed(row.path):
            continue
        change = seen[doc_id]
        if change.upto <= covered.get(doc_id, 0):
            continue
        data: dict[str, Any] = document_data(
            doc_id=doc_id, type=row.type, folder=FolderName(row.folder_id, row.folder.name), path=row.path
        )
        event = waiting.get(doc_id)
        if event is not None:
            authors = [a for a in event.data.get("authors", []) if isinstance(a, str)]
            authors += [a for a in change.authors if a not in authors]
            event.data = {
                **data,
                "authors": authors[:AUTHORS_KEPT],
                "update_id": max(event.upto, change.upto),
            }
            event.upto = max(event.upto, change.upto)
            event.folder_id = row.folder_id
            event.not_before = min(now + debounce, event.created + debounce * MAX_WAIT_PERIODS)
            event.save(update_fields=["data", "upto", "folder_id", "not_before"])
        else:
            WebhookEvent.objects.create(
                type=CHANGED,
                data={**data, "authors": change.authors, "update_id": change.upto},
                folder_id=row.folder_id,
                doc_id=doc_id,
                upto=change.upto,
                created=now,
                not_before=now + debounce,
            )
        count += 1
    return count
