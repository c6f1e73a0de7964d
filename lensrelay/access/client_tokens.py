"""y-sweet client tokens: short-lived, signed, for one document, minted from a server-side credential.

`POST /doc/<id>/auth` (lensrelay.sync.ysweet) mints one for a caller holding an API token (or a staff
session); the y-sweet client then uses it on the document's socket (`?token=`) and on
`/d/<id>/as-update` and `/d/<id>/update` (bearer). Nothing is stored: the token is the signed claim
`{document, credential, write?, expiry}` (Django's signing with SECRET_KEY). At every use the minting
credential is read again, so a client token is never wider than what minted it *now*: revoking, expiring
or narrowing the API token ends its client tokens too, and an open socket follows the minting token
through the live access watch (lensrelay.access.liveaccess) with the client token's caps kept.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.core import signing

from lensrelay.access.auth import Access, access_for_user, token_access
from lensrelay.models import ApiToken

CLIENT_TOKEN_PREFIX = "lrc_"
_SALT = "lensrelay.access.client_tokens"


class ClientTokenRefused(Exception):
    """A client token that may not be used; `reason` is one word (malformed, expired, revoked, unknown,
    other-document) and the message says it in a sentence."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class ClientToken:
    raw: str
    doc_id: str
    read_only: bool
    expires_at: float  # unix seconds


def is_client_token(raw: str | None) -> bool:
    return bool(raw) and raw.startswith(CLIENT_TOKEN_PREFIX)  # type: ignore[union-attr]


def client_token_mint(
    *, access: Access, doc_id: str, read_only: bool, valid_for_seconds: int | None, now: float | None = None
) -> ClientToken:
    """A client token for `doc_id`, no wider than `access` (the caller checked that it sees the document
    and may write if `read_only` is False). Lives `valid_for_seconds` (default and cap from the settings),
    and never past the minting token's own expiry."""
    if access.token_id is None and access.user_id is None:
        raise ValueError("Only an API token or a signed-in user can mint client tokens.")
    now = time.time() if now is None else now
    lifetime = settings.LENSRELAY_CLIENT_TOKEN_SECONDS if valid_for_seconds is None else valid_for_seconds
    lifetime = min(lifetime, settings.LENSRELAY_CLIENT_TOKEN_MAX_SECONDS)
    expires_at = now + lifetime
    if access.token_id is not None:
        minting_expiry = (
            ApiToken.objects.filter(pk=access.token_id).values_list("expires_at", flat=True).first()
        )
        if minting_expiry is not None:
            expires_at = min(expires_at, minting_expiry.timestamp())
    claim = {
        "d": doc_id,
        "k": "t" if access.token_id is not None else "u",
        "i": access.token_id if access.token_id is not None else access.user_id,
        "w": not read_only and access.can_write_live,
        "x": int(expires_at),
    }
    raw = CLIENT_TOKEN_PREFIX + signing.dumps(claim, salt=_SALT, compress=True)
    return ClientToken(raw=raw, doc_id=doc_id, read_only=not claim["w"], expires_at=int(expires_at))


def client_token_access(raw: str, doc_id: str, *, now: float | None = None) -> Access:
    """What a client token grants on `doc_id` now; raises ClientTokenRefused saying why not."""
    try:
        claim = signing.loads(raw.removeprefix(CLIENT_TOKEN_PREFIX), salt=_SALT)
        doc, kind, ident, write, expiry = claim["d"], claim["k"], claim["i"], claim["w"], claim["x"]
    except (signing.BadSignature, KeyError, TypeError, ValueError) as exc:
        raise ClientTokenRefused(
            "malformed", "The client token is malformed or its signature is wrong."
        ) from exc
    if doc != doc_id:
        raise ClientTokenRefused("other-document", "The client token is for another document.")
    if (time.time() if now is None else now) >= expiry:
        raise ClientTokenRefused("expired", "The client token has expired; ask for a new one.")
    minted: Access | None
    if kind == "t":
        token = ApiToken.objects.filter(pk=ident).first()
        if token is None:
            raise ClientTokenRefused("revoked", "The token that minted this client token no longer exists.")
        minted = token_access(token, frozenset(token.folders.values_list("id", flat=True)))
    else:
        from django.contrib.auth import get_user_model

        minted = access_for_user(get_user_model().objects.filter(pk=ident).first())
    if minted is None:
        raise ClientTokenRefused(
            "revoked", "The token that minted this client token has been revoked or has expired."
        )
    return Access(
        name=minted.name,
        role=minted.role,
        folder_ids=minted.folder_ids,
        token_id=minted.token_id,
        user_id=minted.user_id,
        doc_id=doc_id,
        read_only=not bool(write),
    )
