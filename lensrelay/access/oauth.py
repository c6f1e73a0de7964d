"""OAuth grants: what a person let an assistant (an OAuth client) do, kept as an `ApiToken` row.

A grant is an `ApiToken` with `user` and `oauth_application` set: its role and folders are what the person
chose on the consent page, within their own staff rights (`auth.role_ceiling`). The client's OAuth access
tokens stand for it (`auth.oauth_token_access`), so a grant lists, revokes, narrows and cuts open sessions
and sockets exactly like an API token. One active grant per person and client: consenting again replaces
the previous one. Revoking a grant also deletes the client's OAuth tokens for that person.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest
from oauth2_provider.models import Application

from lensrelay.access.actor_names import grant_name
from lensrelay.access.auth import ROLE_ORDER, role_ceiling
from lensrelay.access.tokens import token_revoke
from lensrelay.models import ApiToken, Folder
from lensrelay.text.names import CLIENT_NAME_LIMIT, clean_name

SURFACES = ("mcp", "api")


class GrantRefused(ValueError):
    """A consent asked for more than the person may give; nothing was granted."""


def public_base(request: HttpRequest) -> str:
    """This server's origin as clients reach it: LENSRELAY_PUBLIC_URL when set, else the request's."""
    configured = str(getattr(settings, "LENSRELAY_PUBLIC_URL", "") or "")
    if configured:
        return configured.rstrip("/")
    return request.build_absolute_uri("/").rstrip("/")


def resource_identifiers(request: HttpRequest) -> dict[str, str]:
    """The RFC 8707 resource URIs a token may be issued for: this server's root, /mcp and /api."""
    base = public_base(request)
    return {"": base, **{surface: f"{base}/{surface}" for surface in SURFACES}}


def resource_metadata_url(request: HttpRequest, *, surface: str = "mcp") -> str:
    """Where a client reads the RFC 9728 metadata of `surface` (named in every 401 challenge)."""
    return f"{public_base(request)}/.well-known/oauth-protected-resource/{surface}"


def grantable_roles(user: Any) -> list[str]:
    """The roles this person may hand an assistant, narrowest first (empty: not active staff)."""
    ceiling = role_ceiling(user)
    if ceiling is None:
        return []
    return [str(role) for role in ROLE_ORDER[: ROLE_ORDER.index(ApiToken.Role(ceiling)) + 1]]


def client_label(application: Application) -> str:
    return clean_name(application.name or application.client_id, limit=CLIENT_NAME_LIMIT)


def grant_create(*, user: Any, application: Application, role: str, folders: Iterable[Folder]) -> ApiToken:
    """Record a person's consent: `application` may act for `user` with `role` in `folders` (none: all).

    Refuses (GrantRefused) a role above the person's own ceiling or a non-staff person, whatever the
    form said. Replaces (revokes) the previous grant of the same person to the same client."""
    if role not in grantable_roles(user):
        raise GrantRefused(f"You cannot grant the role {role!r}: it is above your own rights.")
    chosen = list(folders)
    name = grant_name(
        person=clean_name(user.get_username()), application=application, client=client_label(application)
    )
    with transaction.atomic():
        for previous in ApiToken.objects.filter(
            user=user, oauth_application=application, revoked_at__isnull=True
        ):
            token_revoke(token=previous)
        grant = ApiToken(name=name, role=role, user=user, oauth_application=application)
        # Never a bearer value: the raw token is thrown away at once (the client uses OAuth tokens).
        grant.set_raw(ApiToken.generate_raw())
        grant.prefix = "oauth"
        grant.save()
        grant.folders.set(chosen)
    return grant
