"""Email as each person chose: at once (a message per suggestion to review and per mention), an hourly or
daily digest (one per period, none when nothing waits), or never; nothing made twice; a failed send tried
again and kept; the choice page sets only one's own choice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Permission, User
from django.core import mail

from lensrelay.vault.paths import path_index
from suggestions.lifecycle import emailing
from suggestions.lifecycle.commenting import Commenter, thread_start
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.lifecycle.emailing import emails_make, emails_send
from suggestions.models import EmailChoice, EmailMessage
from suggestions.selectors import pending_suggestions
from tests.suggestions.test_admin import CHANGELIST, client_for, propose

pytestmark = pytest.mark.django_db(transaction=True)


def person(name: str, *codenames: str, frequency: str | None = None, email: str = "") -> User:
    user = User.objects.create_user(name, email=email or f"{name}@example.org", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    if frequency is not None:
        EmailChoice.objects.create(
            user=user, frequency=frequency, told_until=datetime(2000, 1, 1, tzinfo=UTC)
        )
    return user


def outbox(name: str) -> list[EmailMessage]:
    return list(EmailMessage.objects.filter(user__username=name).order_by("created"))


async def test_at_once_one_message_per_suggestion_and_mention_never_twice(store: Any, fox: Any) -> None:
    await sync_to_async(person)(
        "rita", "view_document", "view_suggestion", "review_suggestion", frequency="at_once"
    )
    await sync_to_async(person)("nora", "view_document", "review_suggestion", frequency="never")
    row = await propose(store, fox, ("quick brown", "slow red"))
    index = path_index(store)
    await index.ensure()
    await thread_start(
        store=store,
        entry=index.by_doc_id(fox.doc_id),
        commenter=Commenter(author="ana"),
        passage="lazy dog",
        body="@rita <b>look</b>",
    )
    assert await sync_to_async(emails_make)() == 2
    assert await sync_to_async(emails_make)() == 0  # nothing twice
    sent = await sync_to_async(emails_send)()
    assert sent == 2 and {tuple(m.to) for m in mail.outbox} == {("rita@example.org",)}
    subjects = sorted(m.subject for m in mail.outbox)
    assert subjects == ["[Lens Relay] To review: Lens/Fox.md", "[Lens Relay] ana mentioned you"]
    review = next(m for m in mail.outbox if "To review" in m.subject)
    assert f"/document/{fox.doc_id}/edit/#suggestion-{row.uid}" in review.body
    assert await sync_to_async(emails_send)() == 0
    assert await sync_to_async(lambda: outbox("nora"))() == []


async def test_a_digest_once_per_period_and_none_when_nothing_waits(store: Any, fox: Any) -> None:
    await sync_to_async(person)(
        "dora", "view_document", "view_suggestion", "review_suggestion", frequency="daily"
    )
    await sync_to_async(person)("hugo", "view_document", "review_suggestion", frequency="hourly")
    noon = datetime(2026, 11, 28, 12, 5, tzinfo=UTC)
    assert await sync_to_async(emails_make)(now=noon) == 0  # nothing waits: no digest
    await propose(store, fox, ("quick brown", "slow red"))
    assert await sync_to_async(emails_make)(now=noon) == 2
    assert await sync_to_async(emails_make)(now=noon + timedelta(minutes=30)) == 0
    # The next hour: hugo's next digest; dora's waits for the next day.
    assert await sync_to_async(emails_make)(now=noon + timedelta(hours=1)) == 1
    assert await sync_to_async(emails_make)(now=noon + timedelta(days=1)) == 2
    digest = (await sync_to_async(outbox)("dora"))[0]
    assert digest.subject == "[Lens Relay] Your daily digest" and "Lens/Fox.md: 1 pending" in digest.body


async def test_a_digest_counts_each_pending_suggestion_once_and_a_decided_one_drops_out(
    store: Any, fox: Any
) -> None:
    dora = await sync_to_async(person)(
        "dora", "view_document", "view_suggestion", "review_suggestion", frequency="hourly"
    )
    first = await propose(store, fox, ("quick brown", "slow red"))
    await propose(store, fox, ("lazy dog", "sleepy cat"))
    noon = datetime(2026, 11, 28, 12, 5, tzinfo=UTC)

    async def digest_at(moment: datetime) -> str | None:
        if not await sync_to_async(emails_make)(now=moment):
            return None
        return (await sync_to_async(outbox)("dora"))[-1].body

    assert "Lens/Fox.md: 2 pending" in (await digest_at(noon) or "")
    await suggestion_decide(store=store, suggestion=first, user=dora, accept=True)
    body = await digest_at(noon + timedelta(hours=1)) or ""
    assert "Lens/Fox.md: 1 pending" in body and body.count("Lens/Fox.md") == 1
    second = await sync_to_async(lambda: pending_suggestions().get())()
    await suggestion_decide(store=store, suggestion=second, user=dora, accept=False)
    assert await digest_at(noon + timedelta(hours=2)) is None  # nothing waits: no digest


async def test_no_address_no_email_and_a_failed_send_is_kept_and_retried(
    store: Any, fox: Any, monkeypatch: Any
) -> None:
    await sync_to_async(person)("anon", "view_document", "review_suggestion", frequency="at_once", email="")
    await sync_to_async(User.objects.filter(username="anon").update)(email="")
    await sync_to_async(person)("rita", "view_document", "review_suggestion", frequency="at_once")
    await propose(store, fox, ("quick brown", "slow red"))
    assert await sync_to_async(emails_make)() == 1

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise ConnectionRefusedError("mail server down")

    monkeypatch.setattr(emailing, "send_mail", refuse)
    assert await sync_to_async(emails_send)() == 0
    [kept] = await sync_to_async(outbox)("rita")
    assert kept.sent_at is None and kept.attempts == 1 and "mail server down" in kept.error
    monkeypatch.undo()
    assert await sync_to_async(emails_send)() == 1
    assert len(mail.outbox) == 1


async def test_the_choice_page_sets_ones_own_choice_only(store: Any, transactional_db: None) -> None:
    page = f"{CHANGELIST}email/"
    ana = await client_for("ana", "view_document")
    assert 'value="daily" checked' in (await ana.get(page)).content.decode()
    assert (await ana.post(page, {"frequency": "at_once"})).status_code == 302
    assert (await ana.post(page, {"frequency": "whenever"})).status_code == 400
    ben = await client_for("ben", "view_document")
    await ben.post(page, {"frequency": "never", "user": "ana"})
    choices = await sync_to_async(
        lambda: dict(EmailChoice.objects.values_list("user__username", "frequency"))
    )()
    assert choices == {"ana": "at_once", "ben": "never"}
    blind = await client_for("bea", "view_suggestion")
    assert (await blind.get(page)).status_code == 403
    guarded = await client_for("cid", "view_document", csrf=True)
    assert (await guarded.post(page, {"frequency": "never"})).status_code == 403
