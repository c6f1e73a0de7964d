"""The suggestions' metrics (suggestions/metrics.py): created and decided once committed, the decision's
latency, pending read when scraped; an undo and a rolled-back transaction count nothing."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from prometheus_client import REGISTRY

from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import path_index
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.lifecycle.proposing import EditSpec, Proposer, suggestion_propose_edits
from suggestions.lifecycle.undoing import suggestions_undo_decided
from suggestions.metrics import PENDING_GAUGE, suggestions_pending
from suggestions.models import Suggestion
from suggestions.signals import suggestion_decided

pytestmark = pytest.mark.django_db(transaction=True)


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
async def world(store: Any, make_folder: Any) -> dict[str, Any]:
    folder = await sync_to_async(make_folder)("Lens")
    fox = await document_create(store=store, folder=folder, path="/Fox.md", text="The quick brown fox.\n")
    index = path_index(store)
    await index.ensure()
    alice = await sync_to_async(User.objects.create_superuser)("alice", "a@example.org", "pw")
    return {"entry": index.by_doc_id(fox.doc_id), "alice": alice}


async def propose(store: Any, world: dict[str, Any], old: str, new: str) -> Suggestion:
    outcome = await suggestion_propose_edits(
        store=store,
        entry=world["entry"],
        proposer=Proposer(author="claude"),
        specs=[EditSpec(old, new)],
        tool="edit",
    )
    assert outcome.suggestion is not None
    return outcome.suggestion


async def test_proposals_and_decisions_are_counted_with_their_latency(
    store: Any, world: dict[str, Any]
) -> None:
    created = sample("lensrelay_suggestions_created_total", kind="edit")
    accepted = sample("lensrelay_suggestions_decided_total", outcome="accepted")
    rejected = sample("lensrelay_suggestions_decided_total", outcome="rejected")
    latency_count = sample("lensrelay_suggestion_decision_seconds_count", outcome="accepted")
    latency_sum = sample("lensrelay_suggestion_decision_seconds_sum", outcome="accepted")

    quick = await propose(store, world, "quick", "slow")
    brown = await propose(store, world, "brown", "red")
    assert sample("lensrelay_suggestions_created_total", kind="edit") - created == 2
    assert await sync_to_async(suggestions_pending)() == 2

    # Created an hour ago, as far as the latency is concerned.
    await Suggestion.objects.filter(pk=quick.pk).aupdate(created=timezone.now() - timedelta(hours=1))
    decision = await suggestion_decide(store=store, suggestion=quick, user=world["alice"], accept=True)
    assert decision.ok, decision.reason
    decision = await suggestion_decide(store=store, suggestion=brown, user=world["alice"], accept=False)
    assert decision.ok, decision.reason

    assert sample("lensrelay_suggestions_decided_total", outcome="accepted") - accepted == 1
    assert sample("lensrelay_suggestions_decided_total", outcome="rejected") - rejected == 1
    assert sample("lensrelay_suggestion_decision_seconds_count", outcome="accepted") - latency_count == 1
    assert 3590 < sample("lensrelay_suggestion_decision_seconds_sum", outcome="accepted") - latency_sum < 3700
    assert await sync_to_async(suggestions_pending)() == 0

    # Undone, the rejection is pending again: the signal is sent, but nothing new was decided.
    row = await Suggestion.objects.aget(pk=brown.pk)
    undone = await suggestions_undo_decided(store=store, suggestions=[row], user=world["alice"])
    assert undone.ok, undone.message
    assert sample("lensrelay_suggestions_decided_total", outcome="rejected") - rejected == 1
    assert sample("lensrelay_suggestions_decided_total", outcome="accepted") - accepted == 1
    assert await sync_to_async(suggestions_pending)() == 1


def _decide_then_fail(pk: int) -> None:
    with transaction.atomic():
        Suggestion.objects.filter(pk=pk).update(status=Suggestion.Status.REJECTED, decided_at=timezone.now())
        suggestion_decided.send(sender=Suggestion, pks=[pk])
        Suggestion.objects.create(doc_id="x", path="Lens/X.md", author="claude", tool="edit")
        raise RuntimeError("rolled back")


async def test_a_rolled_back_transaction_counts_nothing(store: Any, world: dict[str, Any]) -> None:
    quick = await propose(store, world, "quick", "slow")
    created = sample("lensrelay_suggestions_created_total", kind="edit")
    rejected = sample("lensrelay_suggestions_decided_total", outcome="rejected")
    with pytest.raises(RuntimeError):
        await sync_to_async(_decide_then_fail)(quick.pk)
    assert sample("lensrelay_suggestions_created_total", kind="edit") == created
    assert sample("lensrelay_suggestions_decided_total", outcome="rejected") == rejected
    assert (await Suggestion.objects.aget(pk=quick.pk)).status == Suggestion.Status.PENDING


def test_the_pending_gauge_is_registered_for_scrapes() -> None:
    from lensrelay.observability.scrape import scrape_gauges

    assert PENDING_GAUGE in {gauge.name for gauge in scrape_gauges()}
