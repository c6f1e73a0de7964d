"""The suggestions' Prometheus metrics: created and decided (counted once their transaction commits),
how long a decision took, and how many wait (read from the database when `/metrics` is scraped).

Counted from the app's own signals, so every path that proposes or decides is counted without knowing it:
a row created (`post_save`), a row leaving pending (`suggestion_decided`, which every decision path sends:
reviewers, editors removing the markup, clean-ups, restores, superseding proposals). A transaction that
rolls back counts nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.models.signals import post_save

from lensrelay.observability.metrics import (
    DECISION_OUTCOMES,
    suggestion_created_observe,
    suggestion_decided_observe,
)
from lensrelay.observability.scrape import scrape_gauge
from suggestions.models import Suggestion
from suggestions.signals import suggestion_decided

logger = logging.getLogger(__name__)

PENDING_GAUGE = "lensrelay_suggestions_pending"


def suggestions_pending() -> float:
    return float(Suggestion.objects.filter(status=Suggestion.Status.PENDING).count())


def _created(sender: Any, *, instance: Suggestion, created: bool, raw: bool = False, **kwargs: Any) -> None:
    if created and not raw:
        kind = str(instance.kind)
        transaction.on_commit(lambda: suggestion_created_observe(kind=kind), robust=True)


def decisions_observe(*, pks: Sequence[int]) -> None:
    """Count the decisions of rows `pks` as they now stand (an undo, back to pending, is not one)."""
    try:
        rows = Suggestion.objects.filter(pk__in=list(pks), status__in=DECISION_OUTCOMES)
        for status, created, decided_at in rows.values_list("status", "created", "decided_at"):
            seconds = (decided_at - created).total_seconds() if decided_at and created else None
            suggestion_decided_observe(outcome=str(status), seconds=seconds)
    except Exception:  # a number missed must never fail a decision
        logger.exception("could not count the decisions of suggestions %s", list(pks))


def _decided(sender: Any, *, pks: Sequence[int], **kwargs: Any) -> None:
    decided = list(pks)
    # Read after the commit: what the decision recorded, and nothing if it rolled back.
    transaction.on_commit(lambda: decisions_observe(pks=decided), robust=True)


def connect_metrics() -> None:
    post_save.connect(_created, sender=Suggestion, dispatch_uid="suggestions.metrics.created")
    suggestion_decided.connect(_decided, dispatch_uid="suggestions.metrics.decided")
    scrape_gauge(
        name=PENDING_GAUGE,
        documentation="Suggestions waiting for a decision.",
        read=suggestions_pending,
    )
