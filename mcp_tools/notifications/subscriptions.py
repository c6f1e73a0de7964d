"""Who hears about what: resource subscriptions and the sessions listening for notifications.

A listening session is an active session that opened the GET stream at least once (it has an
`McpStream`). Each is told only about folders its token sees now, checked when the notification is made,
so a document moved out of sight, or a token narrowed meanwhile, never leaks a path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from lensrelay.models import ApiToken, Document
from mcp_tools.models import McpStream, McpSubscription
from mcp_tools.sessions import idle_timeout


def subscription_add(*, session_id: str, uri: str, doc_id: str) -> None:
    """Subscribe (idempotent: subscribing again to the same URI keeps one subscription)."""
    try:
        with transaction.atomic():
            McpSubscription.objects.update_or_create(
                session_id=session_id, uri=uri, defaults={"doc_id": doc_id}
            )
    except IntegrityError:  # a concurrent identical subscribe won the race: the outcome is the same
        pass


def subscription_remove(*, session_id: str, uri: str) -> bool:
    """Unsubscribe; False if the session was not subscribed to the URI (not an error)."""
    deleted, _ = McpSubscription.objects.filter(session_id=session_id, uri=uri).delete()
    return deleted > 0


def subscribed_uris(*, session_id: str) -> list[str]:
    return list(
        McpSubscription.objects.filter(session_id=session_id).order_by("uri").values_list("uri", flat=True)
    )


@dataclass(frozen=True)
class Listener:
    session_id: str
    token_id: int | None
    log_level: str


def _active_listening() -> dict[str, Listener]:
    cutoff = timezone.now() - idle_timeout()
    rows = McpStream.objects.filter(
        session__ended_at__isnull=True, session__last_seen_at__gte=cutoff
    ).values_list("session_id", "session__token_id", "session__log_level")
    return {sid: Listener(sid, token_id, level) for sid, token_id, level in rows}


def token_folders(token_ids: Iterable[int | None]) -> dict[int | None, frozenset[int] | None]:
    """The folders each token sees now; None: every folder. Revoked or expired tokens see nothing."""
    ids = {token_id for token_id in token_ids if token_id is not None}
    seen: dict[int | None, frozenset[int] | None] = {None: None}  # the test configuration's anonymous role
    tokens = ApiToken.objects.filter(pk__in=ids).prefetch_related("folders")
    for token in tokens:
        folders = frozenset(folder.pk for folder in token.folders.all())
        seen[token.pk] = (folders or None) if token.active else frozenset()
    for token_id in ids - set(seen):
        seen[token_id] = frozenset()  # deleted
    return seen


def _sees(folders: frozenset[int] | None, folder_id: int | None) -> bool:
    return folders is None or (folder_id is not None and folder_id in folders)


def listeners_seeing(*, folder_id: int | None) -> list[Listener]:
    """Listening sessions whose token sees the folder."""
    listeners = _active_listening()
    folders = token_folders(listener.token_id for listener in listeners.values())
    return [listener for listener in listeners.values() if _sees(folders[listener.token_id], folder_id)]


def subscribers_of(*, doc_id: str) -> list[tuple[str, str]]:
    """(session id, uri) of listening sessions subscribed to the document, if their token sees its folder
    now. One indexed query when nobody subscribed (the common case for an edit)."""
    cutoff = timezone.now() - idle_timeout()
    rows = list(
        McpSubscription.objects.filter(
            doc_id=doc_id, session__ended_at__isnull=True, session__last_seen_at__gte=cutoff
        ).values_list("session_id", "uri", "session__token_id")
    )
    if not rows:
        return []
    folder_id = Document.objects.filter(doc_id=doc_id).values_list("folder_id", flat=True).first()
    listening = set(
        McpStream.objects.filter(session_id__in={row[0] for row in rows}).values_list("session_id", flat=True)
    )
    folders = token_folders(token_id for _, _, token_id in rows)
    return [
        (session_id, uri)
        for session_id, uri, token_id in rows
        if session_id in listening and _sees(folders[token_id], folder_id)
    ]


def listener_of(*, session_id: str) -> Listener | None:
    """The session, if it is active and listening."""
    cutoff = timezone.now() - idle_timeout()
    row = (
        McpStream.objects.filter(
            session_id=session_id, session__ended_at__isnull=True, session__last_seen_at__gte=cutoff
        )
        .values_list("session__token_id", "session__log_level")
        .first()
    )
    return None if row is None else Listener(session_id, row[0], row[1])
