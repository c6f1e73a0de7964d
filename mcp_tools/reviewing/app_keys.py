"""The app-only guard: a tool hidden from the model (`_meta.ui.visibility: ["app"]`) must also refuse a call
that did not come from the app, since hiding is the host's courtesy and the protocol marks no call as the
app's (a host proxies the app's `tools/call` on the same connection as the model's).

So each call of an app-only tool carries a key that only the app can have: `issue` makes one when a review
result is built and the result hands it in its `_meta`, which hosts give the app view and never the model
(SEP-1865: the model sees `content`; `_meta` is for the host and the view). A key is random (256 bits), kept
only as its hash, bound to the credential and the MCP session it was issued to, expires after
`KEY_LIFETIME`, and is used once: `consume` deletes its row, so of two calls with one key (a replay, two
workers) exactly one passes. A refused call changes nothing.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.utils import timezone

from mcp_tools.models import AppKey

# Long enough for a person to read a few suggestions; each decision needs a fresh key anyway.
KEY_LIFETIME = timedelta(minutes=15)
KEY_ARGUMENT = "app_key"
KEY_MAX_CHARS = 100


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def issue(*, token_id: int, session_key: str) -> str:
    """A new single-use key for this credential and session (expired keys are swept on the way)."""
    now = timezone.now()
    AppKey.objects.filter(expires_at__lte=now).delete()
    key = secrets.token_urlsafe(32)
    AppKey.objects.create(
        key_hash=_hash(key), token_id=token_id, session_key=session_key, expires_at=now + KEY_LIFETIME
    )
    return key


def consume(*, key: object, token_id: int | None, session_key: str) -> bool:
    """Whether `key` was a live key of this credential and session; it is spent either way."""
    if not isinstance(key, str) or not key or len(key) > KEY_MAX_CHARS or token_id is None:
        return False
    spent, _ = AppKey.objects.filter(
        key_hash=_hash(key), token_id=token_id, session_key=session_key, expires_at__gt=timezone.now()
    ).delete()
    return spent == 1


aissue = sync_to_async(issue)
aconsume = sync_to_async(consume)

REFUSAL = (
    "{name} can only be called by the Lens Relay review app shown in the chat, not by the assistant: this "
    "call carries no valid app key (keys are single-use and expire; the app gets a fresh one when it shows "
    "the suggestions again). Nothing was changed."
)
