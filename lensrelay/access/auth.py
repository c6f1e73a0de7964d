"""One token check for WebSocket, /api and /mcp: who is calling and which folders they may see."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.utils import timezone

from lensrelay.docstore.acting import Actor
from lensrelay.models import ApiToken

WRITE_ROLES = frozenset({ApiToken.Role.EDIT, ApiToken.Role.ADMIN})
SUGGEST_ROLES = frozenset({ApiToken.Role.SUGGEST, ApiToken.Role.EDIT, ApiToken.Role.ADMIN})
EDIT_LIVE_PERMISSION = "lensrelay.edit_live"
# Writing last_used_at on every call would turn every read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class Access:
    name: str
    role: str
    folder_ids: frozenset[int] | None  # None: every folder
    token_id: int | None = None
    user_id: int | None = None
    # A y-sweet client token (lensrelay.access.client_tokens) narrows its minting credential to one
    # document, and possibly to reading it.
    doc_id: str | None = None
    read_only: bool = False
    # An OAuth grant is an ApiToken row too: kind "grant", and `person` is whom it acts for.
    kind: str = ""
    person: str = ""

    @property
    def actor(self) -> Actor:
        """Who history names for what this access does (see docstore.acting)."""
        if self.user_id is not None and self.token_id is None:
            return Actor("staff", self.name, user_id=self.user_id)
        return Actor(self.kind or "token", self.name, token_id=self.token_id, person=self.person)

    @property
    def can_write_live(self) -> bool:
        return self.role in WRITE_ROLES and not self.read_only

    def sees_document(self, doc_id: str) -> bool:
        return self.doc_id is None or self.doc_id == doc_id

    def capped_like(self, other: Access) -> Access:
        """This (the minting credential's current) access, kept within `other`'s document and read-only
        caps: a client token never grows back to its minting token's reach."""
        return replace(self, doc_id=other.doc_id, read_only=other.read_only)

    @property
    def can_suggest(self) -> bool:
        return self.role in SUGGEST_ROLES

    def sees_folder(self, folder_id: int | None) -> bool:
        if self.folder_ids is None:
            return True
        return folder_id is not None and folder_id in self.folder_ids


def token_access(token: ApiToken, folder_ids: frozenset[int]) -> Access | None:
    """What a token row grants now (None once revoked or expired); `folder_ids` are its folders."""
    if not token.active:
        return None
    return Access(name=token.name, role=token.role, folder_ids=folder_ids or None, token_id=token.pk)


def token_refusal(raw: str | None) -> str:
    """Why a bearer token is refused, in words a client can act on (for a token that was refused)."""
    if not raw or not raw.strip():
        return "missing"
    token = ApiToken.objects.filter(token_hash=ApiToken.hash_token(raw.strip())).first()
    if token is None:
        return "unknown"
    if token.revoked:
        return "revoked"
    if token.expired:
        return "expired"
    return "unknown"


REFUSALS = {
    "missing": "The bearer token is missing: send Authorization: Bearer <token>.",
    "malformed": "The Authorization header is malformed: send Authorization: Bearer <token>.",
    "unknown": "The bearer token is unknown.",
    "expired": "The bearer token has expired.",
    "revoked": "The bearer token has been revoked.",
}


def authenticate_token(raw: str | None) -> Access | None:
    """The access a raw bearer token grants, or None if it is missing, unknown, expired or revoked."""
    if not raw:
        return None
    token = ApiToken.objects.filter(token_hash=ApiToken.hash_token(raw.strip())).first()
    if token is None or not token.active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token_access(token, frozenset(token.folders.values_list("id", flat=True)))


def access_for_user(user: Any) -> Access | None:
    """Active staff signed in to the admin sync every document; read-write only with the permission to
    edit live (which also lets them decide suggestions inline by editing the markup away)."""
    if (
        user is None
        or not getattr(user, "is_authenticated", False)
        or not user.is_active
        or not user.is_staff
    ):
        return None
    role = ApiToken.Role.EDIT if user.has_perm(EDIT_LIVE_PERMISSION) else ApiToken.Role.VIEW
    return Access(name=user.get_username(), role=role, folder_ids=None, user_id=user.pk)


aauthenticate_token = sync_to_async(authenticate_token)
atoken_refusal = sync_to_async(token_refusal)
aaccess_for_user = sync_to_async(access_for_user)
