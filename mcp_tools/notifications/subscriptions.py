"""Who hears about what: resource subscriptions and the sessions listening for notifications.

A listening session is an active session that opened the GET stream at least once (it has an
`McpStream`). Each is told only about folders its token sees now, checked when the notification is made,
so a document moved out of sight, or a token narrowed meanwhile, never leaks a path.

A subscription to a document is kept once per session and document: the caller resolves the URI first
(`resources_documents.canonical_of`), so every spelling of one note (percent-encoded, NFD, `.md` left
out) is the same subscription under the note's canonical URI, and one change makes one event. A session
holds at most `LENSRELAY_MCP_MAX_SUBSCRIPTIONS` of them, so no client can make one change cost a
thousand rows or a thousand events.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from lensrelay.models import ApiToken, Document
from mcp_tools.callers.sessions import idle_timeout
from mcp_tools.models import McpSession, McpStream, McpSubscription


class TooManySubscriptions(Exception):
    """The session holds as many subscriptions as it may; nothing was added."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"Too many subscriptions: this session already has {limit}, the most it may hold "
            "(LENSRELAY_MCP_MAX_SUBSCRIPTIONS). Unsubscribe from one first."
        )


def max_subscriptions() -> int:
    return max(1, int(getattr(settings, "LENSRELAY_MCP_MAX_SUBSCRIPTIONS", 200)))


def _same(*, session_id: str, uri: str, doc_id: str) -> Q:
    """The session's subscriptions to this resource: by document when it is one, else by URI."""
    return Q(session_id=session_id) & (Q(doc_id=doc_id) if doc_id else Q(uri=uri, doc_id=""))


def subscription_add(*, session_id: str, uri: str, doc_id: str, limit: int | None = None) -> None:
    """Subscribe to a resource by its canonical `uri` (a document's as `resources/list` gives it, with its
    `doc_id`). Idempotent: subscribing again to the same document, under any URI, keeps one
    subscription (under the newest canonical URI, should the note have moved). Raises
    TooManySubscriptions past the session's limit."""
    limit = max_subscriptions() if limit is None else limit
    try:
        with transaction.atomic():
            # One subscribe of a session at a time, so concurrent ones cannot together pass the limit.
            list(McpSession.objects.select_for_update().filter(pk=session_id).values_list("pk", flat=True))
            mine = McpSubscription.objects.filter(_same(session_id=session_id, uri=uri, doc_id=doc_id))
            kept = mine.order_by("pk").first()
            if kept is not None:
                mine.exclude(pk=kept.pk).delete()  # spellings stored before subscriptions were canonical
                if kept.uri != uri:
                    McpSubscription.objects.filter(pk=kept.pk).update(uri=uri)
                return
            if McpSubscription.objects.filter(session_id=session_id).count() >= limit:
                raise TooManySubscriptions(limit)
            _make_room(session_id=session_id, uri=uri, doc_id=doc_id)
            McpSubscription.objects.create(session_id=session_id, uri=uri, doc_id=doc_id)
    except IntegrityError:  # a concurrent identical subscribe won the race: the outcome is the same
        pass


def _current_uri(doc_id: str) -> str | None:
    from mcp_tools.resources.documents import document_uri  # the tools' module, loaded on first need

    row = Document.objects.select_related("folder").filter(doc_id=doc_id).first()
    return None if row is None else document_uri(row.user_path)


def _make_room(*, session_id: str, uri: str, doc_id: str) -> None:
    """A held subscription whose document moved away from `uri` (and another now lives there) moves to its
    document's URI now, or goes with its document: the URI is the new document's."""
    clash = McpSubscription.objects.filter(session_id=session_id, uri=uri).exclude(doc_id=doc_id).first()
    if clash is None:
        return
    moved = _current_uri(clash.doc_id) if clash.doc_id else None
    if (
        moved is None
        or moved == uri
        or McpSubscription.objects.filter(session_id=session_id, uri=moved).exists()
    ):
        clash.delete()
    else:
        McpSubscription.objects.filter(pk=clash.pk).update(uri=moved)


def subscription_remove(*, session_id: str, uri: str, doc_id: str = "") -> bool:
    """Unsubscribe from the document `doc_id` (whatever URI it was subscribed under), or from `uri`; False
    if the session was not subscribed (not an error)."""
    wanted = Q(session_id=session_id) & (Q(uri=uri) | (Q(doc_id=doc_id) if doc_id else Q(pk__in=[])))
    deleted, _ = McpSubscription.objects.filter(wanted).delete()
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


# Documents per query when a pass's batch is large (SQLite bounds a statement's parameters).
CHUNK = 500


@dataclass(frozen=True)
class Subscriber:
    session_id: str
    uri: str
    doc_id: str


def subscribers_of(*, doc_ids: Collection[str]) -> list[Subscriber]:
    """Listening sessions subscribed to any of the documents whose token sees the document's folder now,
    once per session and document. One indexed query when nobody subscribed to any of them (the common
    case for a pass of the derive process), whatever the batch's size up to `CHUNK`."""
    wanted = sorted(set(doc_ids))
    q = connection.ops.quote_name
    subscriptions, sessions = q(McpSubscription._meta.db_table), q(McpSession._meta.db_table)
    cutoff = connection.ops.adapt_datetimefield_value(timezone.now() - idle_timeout())
    rows: list[tuple[str, str, str, int | None]] = []
    # Plain SQL: the derive process asks on every pass, and building the ORM's join cost more than the
    # database's answer (0.9 ms of CPU a pass at a note typed into, issue 36).
    with connection.cursor() as cursor:
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start : start + CHUNK]
            cursor.execute(
                f"SELECT s.session_id, s.uri, s.doc_id, m.token_id FROM {subscriptions} s"
                f" JOIN {sessions} m ON m.id = s.session_id"
                f" WHERE s.doc_id IN ({', '.join(['%s'] * len(chunk))})"
                " AND m.ended_at IS NULL AND m.last_seen_at >= %s ORDER BY s.id",
                [*chunk, cutoff],
            )
            rows.extend(cursor.fetchall())
    if not rows:
        return []
    subscribed = {doc_id for _, _, doc_id, _ in rows}
    folder_of = dict(Document.objects.filter(doc_id__in=subscribed).values_list("doc_id", "folder_id"))
    listening = set(
        McpStream.objects.filter(session_id__in={row[0] for row in rows}).values_list("session_id", flat=True)
    )
    folders = token_folders(token_id for _, _, _, token_id in rows)
    found: dict[tuple[str, str], Subscriber] = {}
    for session_id, uri, doc_id, token_id in rows:
        # One per session and document, should old rows hold two spellings of one note.
        if (
            session_id in listening
            and (session_id, doc_id) not in found
            and _sees(folders[token_id], folder_of.get(doc_id))
        ):
            found[session_id, doc_id] = Subscriber(session_id, uri, doc_id)
    return list(found.values())


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
