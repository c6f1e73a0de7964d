"""Names of actors stay apart: no token, person or OAuth client reads like another.

Every author and label is built from these names (lensrelay.docstore.acting), so a new name that reads
like one already in use (ignoring case) would let one actor pass for another in the review page, the
history and the audit. A token's or an OAuth client's new name is cleaned and numbered when taken
(`claude 2`: a client names itself when it registers, without signing in; the admin and
`manage.py create_token` say which name the token got), and so is a grant's (`alice · Claude 2` for
alice's second client called Claude); a person choosing a username that a token or a client already
goes by is told and chooses again.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models.signals import pre_save
from django.dispatch import receiver
from oauth2_provider.models import Application

from lensrelay.models import ApiToken
from lensrelay.text.names import CLIENT_NAME_LIMIT, SEPARATOR, clean_name, unique_name

NAME_NEEDED = "A token needs a name (it is shown as the author of its suggestions)."


def actor_name_taken(
    name: str,
    *,
    token_id: int | None = None,
    user_id: int | None = None,
    application_id: int | None = None,
    clients: bool = True,
) -> bool:
    """Whether a token, a person or (with `clients`) an OAuth client other than the ones named already
    goes by `name` (ignoring case)."""
    tokens = ApiToken.objects.filter(name__iexact=name)
    people = get_user_model().objects.filter(username__iexact=name)
    # Excluding "pk=None" would exclude nothing, but NULL comparisons differ between databases.
    tokens = tokens if token_id is None else tokens.exclude(pk=token_id)
    people = people if user_id is None else people.exclude(pk=user_id)
    if tokens.exists() or people.exists():
        return True
    if not clients:
        return False
    others = Application.objects.filter(name__iexact=name)
    others = others if application_id is None else others.exclude(pk=application_id)
    return others.exists()


def token_name(*, name: str, token_id: int | None = None) -> str:
    """The name a token will carry: cleaned, numbered when another actor has it; ValueError when nothing
    visible is left."""
    if not clean_name(name):
        raise ValueError(NAME_NEEDED)
    return unique_name(name, taken=lambda candidate: actor_name_taken(candidate, token_id=token_id))


def username_check(*, username: str, user_id: int | None = None) -> str:
    """A person's new username; ValueError when a token or an OAuth client already goes by it."""
    if actor_name_taken(username, user_id=user_id):
        raise ValueError(f"A token or an assistant is already named {username!r}: choose another username.")
    return username


def application_name(application: Application) -> str:
    """What an OAuth client is called everywhere: its cleaned name (or client id), numbered when a person
    or a token goes by it. Clients may share a name (every claude.ai connector registers as "Claude"):
    a grant names its person too, and `grant_name` numbers the rare person with two such clients."""
    return unique_name(
        application.name or application.client_id or "OAuth client",
        taken=lambda candidate: actor_name_taken(candidate, application_id=application.pk, clients=False),
        limit=CLIENT_NAME_LIMIT,
    )


def grant_name(*, person: str, application: Application, client: str) -> str:
    """`person · client`, the client's part numbered when another client of the same person already
    makes that name (the person's earlier grants to this same client keep it)."""

    def taken(candidate: str) -> bool:
        name = f"{person}{SEPARATOR}{candidate}"
        return ApiToken.objects.filter(name__iexact=name).exclude(oauth_application=application).exists()

    return f"{person}{SEPARATOR}{unique_name(client, taken=taken, limit=CLIENT_NAME_LIMIT)}"


@receiver(pre_save, sender=Application, dispatch_uid="lensrelay-oauth-client-name")
def _name_application(sender: Any, instance: Application, **kwargs: Any) -> None:
    # Every way an application is saved (dynamic registration, client metadata documents, the admin).
    instance.name = application_name(instance)
