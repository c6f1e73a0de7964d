"""Email: each person hears of what waits for them as they chose (at once, an hourly or a daily digest, or
never): suggestions to review, for who may review, and open threads that @mention them, for who reads notes.

Messages are made into an outbox (`EmailMessage`), each once: its key names what it is about (a suggestion,
a comment, a digest's period), and a key already made is never made again. The derive process makes and
sends them on each pass ("email", a feed view); `manage.py send_email` does the same once (inline
deployments, tests). Sending goes through Django's email backend: the console unless
`LENSRELAY_EMAIL_HOST` is set. A message that fails is tried again on later passes, at most `MAX_ATTEMPTS`
times, its last error kept.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from lensrelay.access.auth import access_for_user
from lensrelay.docstore.derived import FeedStep, derived_view
from lensrelay.docstore.store import DocStore
from suggestions.models import EmailChoice, EmailMessage, ThreadComment
from suggestions.permissions import can_review
from suggestions.selectors import pending_suggestions, review_inbox, threads_mentioning

logger = logging.getLogger(__name__)

SUBJECT_PREFIX = "[Lens Relay] "
MAX_ATTEMPTS = 5
SEND_BATCH = 50
Frequency = EmailChoice.Frequency


def _base_url() -> str:
    return (settings.LENSRELAY_PUBLIC_URL or "http://127.0.0.1:8000").rstrip("/")


def _editor(doc_id: str, anchor: str) -> str:
    return f"{_base_url()}{reverse('admin:suggestions_suggestion_editor', args=[doc_id])}#{anchor}"


def _make(user: Any, *, key: str, to: str, subject: str, body: str) -> bool:
    """One outbox row, unless its key was made before (by this pass or an earlier one, anywhere)."""
    try:
        with transaction.atomic():
            EmailMessage.objects.create(
                user=user, key=key, to=to, subject=SUBJECT_PREFIX + subject, body=body
            )
    except IntegrityError:
        return False
    return True


def period_start(frequency: str, now: datetime) -> datetime:
    """The hour (or the UTC day) a digest made now belongs to: one digest per period."""
    start = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return start.replace(hour=0) if frequency == Frequency.DAILY else start


@dataclass(frozen=True)
class Person:
    user: Any
    frequency: str
    told_until: datetime


def people() -> list[Person]:
    """Active staff with an email address and their choice (a daily digest until they choose)."""
    users = get_user_model().objects.filter(is_active=True, is_staff=True).exclude(email="")
    choices = {c.user_id: c for c in EmailChoice.objects.filter(user__in=users)}
    found = []
    for user in users:
        choice = choices.get(user.pk)
        frequency = choice.frequency if choice is not None else Frequency.DAILY
        found.append(Person(user, frequency, choice.told_until if choice is not None else timezone.now()))
    return found


def _at_once(person: Person, now: datetime) -> int:
    user = person.user
    made = 0
    if can_review(user):
        fresh = (
            pending_suggestions().exclude(doc_id="").filter(created__gt=person.told_until, created__lte=now)
        )
        for s in fresh.order_by("created"):
            body = (
                f"{s.author} suggests a change to {s.path} ({s.get_kind_display().lower()}).\n\n"
                f"Review it: {_editor(s.doc_id, f'suggestion-{s.uid}')}\n"
            )
            made += _make(
                user,
                key=f"suggestion:{s.uid}:{user.pk}",
                to=user.email,
                subject=f"To review: {s.path}",
                body=body,
            )
    if access_for_user(user) is not None:
        name = user.get_username()
        comments = (
            ThreadComment.objects.select_related("thread")
            .filter(created__gt=person.told_until, created__lte=now)
            .exclude(mentions=[])
        )
        for c in comments.order_by("created"):
            if name not in (c.mentions or []):
                continue
            body = (
                f"{c.author} mentioned you in a thread on {c.thread.path}:\n\n{c.body}\n\n"
                f"Open it: {_editor(c.thread.doc_id, f'thread-{c.thread.uid}')}\n"
            )
            made += _make(
                user,
                key=f"mention:{c.uid}:{user.pk}",
                to=user.email,
                subject=f"{c.author} mentioned you",
                body=body,
            )
    EmailChoice.objects.filter(user=user).update(told_until=now)
    return made


def _digest(person: Person, now: datetime) -> int:
    user = person.user
    start = period_start(person.frequency, now)
    key = f"digest:{user.pk}:{person.frequency}:{start.isoformat()}"
    if EmailMessage.objects.filter(key=key).exists():
        return 0
    lines: list[str] = []
    if can_review(user):
        notes = review_inbox(limit=200)
        if notes:
            lines.append("Suggestions wait for your review:")
            for note in notes:
                lines.append(
                    f"- {note.path}: {len(note.suggestions)} pending, {_editor(note.doc_id, '')}".rstrip("#")
                )
    if access_for_user(user) is not None:
        threads = threads_mentioning(username=user.get_username())
        if threads:
            lines += ["", "Open threads that mention you:"] if lines else ["Open threads that mention you:"]
            lines += [
                f"- {t.path}: “{t.passage[:80]}”, {_editor(t.doc_id, f'thread-{t.uid}')}" for t in threads
            ]
    if not lines:
        return 0
    every = "hourly" if person.frequency == Frequency.HOURLY else "daily"
    body = (
        "\n".join(lines)
        + f"\n\nYou get this {every} digest as you chose; change it in your inbox's email settings.\n"
    )
    return int(_make(user, key=key, to=user.email, subject=f"Your {every} digest", body=body))


def emails_make(*, now: datetime | None = None) -> int:
    """Outbox rows for what is due now; returns how many were made."""
    moment = now or timezone.now()
    made = 0
    for person in people():
        if person.frequency == Frequency.NEVER:
            continue
        made += _at_once(person, moment) if person.frequency == Frequency.AT_ONCE else _digest(person, moment)
    return made


def _due(limit: int) -> list[EmailMessage]:
    return list(
        EmailMessage.objects.filter(sent_at=None, attempts__lt=MAX_ATTEMPTS).order_by("created")[:limit]
    )


def _record(message: EmailMessage, error: str) -> None:
    if error:
        EmailMessage.objects.filter(pk=message.pk).update(attempts=message.attempts + 1, error=error[:2000])
    else:
        EmailMessage.objects.filter(pk=message.pk).update(
            sent_at=timezone.now(), attempts=message.attempts + 1, error=""
        )


def _send(message: EmailMessage) -> str:
    try:
        send_mail(message.subject, message.body, None, [message.to])
    except Exception as exc:  # a refused address or a broken server: kept, tried again later
        logger.warning("could not send email %s: %s", message.pk, exc)
        return f"{type(exc).__name__}: {exc}"
    return ""


def emails_send(*, limit: int = SEND_BATCH) -> int:
    """Send what the outbox holds unsent (sync: the command and tests); returns how many were sent."""
    sent = 0
    for message in _due(limit):
        error = _send(message)
        _record(message, error)
        sent += not error
    return sent


class EmailView:
    """The derive process's email pass, at most every `EVERY_SECONDS` (it reads every person's choice):
    make what is due, then send it, off the database thread."""

    EVERY_SECONDS = 30.0

    def __init__(self, store: DocStore) -> None:
        self.store = store
        self.last = 0.0

    async def step(self, feed: FeedStep) -> None:
        if time.monotonic() - self.last < self.EVERY_SECONDS:
            return
        self.last = time.monotonic()
        await self.store.db(emails_make)
        for message in await self.store.db(_due, SEND_BATCH):
            error = await asyncio.to_thread(_send, message)
            await self.store.db(_record, message, error)


EMAIL = derived_view("email", feed=EmailView)
