"""One token check for WebSocket, /api and /mcp: who is calling and which folders they may see.

Two kinds of bearer value resolve here into an `Access`: API tokens (`lr_…`, made in the admin or with
`manage.py token`) and OAuth access tokens (issued by django-oauth-toolkit to an assistant a person
consented to). An OAuth access token stands for its grant: the `ApiToken` row of kind "OAuth grant" that
holds the role and folders the person chose (lensrelay/access/oauth.py), so revoking, narrowing, live
revocation and last use work the same for both. An OAuth token is valid only for the resource it was
issued for (RFC 8707): `/mcp` or `/api` of this server.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlparse

from asgiref.sync import sync_to_async
from django.utils import timezone
from oauth2_provider.models import AccessToken

from lensrelay.docstore.acting import Actor
from lensrelay.models import ApiToken

WRITE_ROLES = frozenset({ApiToken.Role.EDIT, ApiToken.Role.ADMIN})
SUGGEST_ROLES = frozenset({ApiToken.Role.SUGGEST, ApiToken.Role.EDIT, ApiToken.Role.ADMIN})
EDIT_LIVE_PERMISSION = "lensrelay.edit_live"
SUGGEST_PERMISSION = "lensrelay.suggest"
VIEW_DOCUMENT_PERMISSION = "lensrelay.view_document"
# As the admin's document pages decide who may view them (ModelAdmin.has_view_permission).
DOCUMENT_READING_PERMISSIONS = (VIEW_DOCUMENT_PERMISSION, "lensrelay.change_document", EDIT_LIVE_PERMISSION)
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


ROLE_ORDER = (ApiToken.Role.VIEW, ApiToken.Role.SUGGEST, ApiToken.Role.EDIT, ApiToken.Role.ADMIN)
# suggestions.permissions.REVIEW_PERMISSION (lensrelay does not import the apps built on it; a test holds
# the two together). Not *change suggestion*: that right alone decides nothing.
SUGGESTION_REVIEW_PERMISSION = "suggestions.review_suggestion"
REGISTRATION_SCOPE = "oauth2_provider:registration"


def role_ceiling(user: Any) -> str | None:
    """The widest role a person may hand an assistant: what their own staff rights allow (None: no role,
    they are not active staff). Superusers: admin; people who may edit live: edit; people who review
    suggestions or may suggest themselves: suggest; other staff: view."""
    if user is None or not getattr(user, "is_active", False) or not getattr(user, "is_staff", False):
        return None
    if user.is_superuser:
        return ApiToken.Role.ADMIN
    if user.has_perm(EDIT_LIVE_PERMISSION):
        return ApiToken.Role.EDIT
    if user.has_perm(SUGGESTION_REVIEW_PERMISSION) or user.has_perm(SUGGEST_PERMISSION):
        return ApiToken.Role.SUGGEST
    return ApiToken.Role.VIEW


def lower_role(a: str, b: str) -> str:
    return min(a, b, key=lambda role: ROLE_ORDER.index(ApiToken.Role(role)))


def is_api_token(raw: str) -> bool:
    return raw.startswith(ApiToken.TOKEN_PREFIX)


def resource_serves(resource: str, surface: str) -> bool:
    """Whether a token issued for `resource` (an RFC 8707 URI of this server: the issuer checked its host)
    may be used on `surface` ("mcp" or "api"); the server's root stands for both."""
    path = urlparse(resource).path.rstrip("/")
    return path in ("", f"/{surface}")


@dataclass(frozen=True)
class OAuthAccess:
    access: Access
    expires_at: datetime
    last_used_at: datetime | None


def oauth_token_access(raw: str, *, surface: str) -> OAuthAccess | None:
    """What an OAuth access token grants on `surface` now, and until when (None: unknown, expired,
    revoked, for another resource, or its grant was revoked or its person lost their staff rights).

    The grant's role never exceeds what the person may hand out today (`role_ceiling`)."""
    checksum = hashlib.sha256(raw.encode("utf-8")).hexdigest()
    token = AccessToken.objects.filter(token_checksum=checksum).select_related("user").first()
    now = timezone.now()
    # The registration endpoint's own tokens (RFC 7592) act for no one and open nothing here.
    if (
        token is None
        or token.expires <= now
        or token.user is None
        or REGISTRATION_SCOPE in token.scope.split()
    ):
        return None
    if token.resource and not any(resource_serves(r, surface) for r in token.resource):
        return None
    ceiling = role_ceiling(token.user)
    grant = (
        ApiToken.objects.filter(user_id=token.user_id, oauth_application_id=token.application_id)
        .filter(revoked_at__isnull=True)
        .prefetch_related("folders")
        .order_by("-created")
        .first()
    )
    if grant is None or ceiling is None:
        return None
    access = token_access(grant, frozenset(f.pk for f in grant.folders.all()))
    if access is None:
        return None
    role = lower_role(access.role, ceiling)
    if role != access.role:
        access = replace(access, role=role)
    # History names a grant by its client and the person it acts for (docstore.acting).
    access = replace(access, kind="grant", person=token.user.get_username())
    expires_at = token.expires if grant.expires_at is None else min(token.expires, grant.expires_at)
    return OAuthAccess(access=access, expires_at=expires_at, last_used_at=grant.last_used_at)


def touch_last_used(token_id: int, now: datetime, last_used_at: datetime | None) -> None:
    if last_used_at is None or now - last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token_id).update(last_used_at=now)


def authenticate_token(raw: str | None, *, oauth_surface: str | None = None) -> Access | None:
    """The access a raw bearer token grants, or None if it is missing, unknown, expired or revoked.

    OAuth access tokens count only where `oauth_surface` names the surface ("api"); Yjs sync takes API
    tokens only."""
    if not raw:
        return None
    raw = raw.strip()
    if not is_api_token(raw):
        if oauth_surface is None:
            return None
        found = oauth_token_access(raw, surface=oauth_surface)
        if found is None:
            return None
        assert found.access.token_id is not None
        touch_last_used(found.access.token_id, timezone.now(), found.last_used_at)
        return found.access
    token = ApiToken.objects.filter(token_hash=ApiToken.hash_token(raw)).first()
    if token is None or not token.active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token_access(token, frozenset(token.folders.values_list("id", flat=True)))


def access_for_user(user: Any) -> Access | None:
    """Active staff signed in to the admin who may view documents (or edit them live) sync every
    document; read-write only with the permission to edit live (which also lets them decide suggestions
    inline by editing the markup away), suggesting with the permission to suggest. Other staff read
    nothing over a socket, as in the admin."""
    if (
        user is None
        or not getattr(user, "is_authenticated", False)
        or not user.is_active
        or not user.is_staff
    ):
        return None
    if not any(user.has_perm(permission) for permission in DOCUMENT_READING_PERMISSIONS):
        return None
    if user.has_perm(EDIT_LIVE_PERMISSION):
        role = ApiToken.Role.EDIT
    elif user.has_perm(SUGGEST_PERMISSION):
        role = ApiToken.Role.SUGGEST  # a socket in suggesting mode (lensrelay.sync.suggesting)
    else:
        role = ApiToken.Role.VIEW
    return Access(name=user.get_username(), role=role, folder_ids=None, user_id=user.pk)


aauthenticate_token = sync_to_async(authenticate_token)
atoken_refusal = sync_to_async(token_refusal)
aaccess_for_user = sync_to_async(access_for_user)
