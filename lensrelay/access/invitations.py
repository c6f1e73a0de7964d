"""Inviting a person: a staff user in the product's groups, with a link to choose their own password
(Django's password-reset machinery: the link works once, since choosing a password spends it, and expires
after ``PASSWORD_RESET_TIMEOUT``, three days by default)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode


class InvitationRefused(ValueError):
    """Why nobody was invited; nothing was changed."""


@dataclass(frozen=True)
class Invitation:
    user: User
    link: str
    sent: bool


def _refusal(*, email: str, username: str, groups: Sequence[str]) -> str | None:
    try:
        validate_email(email)
    except ValidationError:
        return f"{email!r} is not an email address"
    missing = sorted(set(groups) - set(Group.objects.filter(name__in=groups).values_list("name", flat=True)))
    if missing:
        known = ", ".join(Group.objects.order_by("name").values_list("name", flat=True)) or "none"
        return f"no group named {', '.join(missing)} (groups: {known})"
    existing = User.objects.filter(username=username).first()
    if existing is not None and existing.has_usable_password():
        return (
            f"{username!r} already has an account with a password (an administrator can set a new one on "
            "their page)"
        )
    return None


def password_link(*, user: User, base_url: str) -> str:
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    token = default_token_generator.make_token(user)
    path = reverse("password_reset_confirm", kwargs={"uidb64": uid, "token": token})
    return base_url.rstrip("/") + path


def person_invite(
    *, email: str, groups: Sequence[str], username: str = "", base_url: str = "", send: bool = False
) -> Invitation:
    """Make (or, while they have not chosen a password, renew) a staff user in ``groups`` and the link
    that lets them choose a password; with ``send`` the link goes by the configured email backend."""
    username = username or email.split("@", 1)[0]
    refusal = _refusal(email=email, username=username, groups=groups)
    if refusal is not None:
        raise InvitationRefused(refusal)
    with transaction.atomic():
        user, _ = User.objects.get_or_create(username=username, defaults={"email": email})
        user.email, user.is_staff, user.is_active = email, True, True
        user.set_unusable_password()
        user.save()
        user.groups.add(*Group.objects.filter(name__in=groups))
    base = base_url or settings.LENSRELAY_PUBLIC_URL or "http://127.0.0.1:8000"
    link = invitation_send(user=user, base_url=base) if send else password_link(user=user, base_url=base)
    return Invitation(user=user, link=link, sent=send)


def invitation_refusal(user: User) -> str | None:
    """Why this person cannot be sent an invitation, or None."""
    if not user.is_active:
        return "is inactive"
    if not user.email:
        return "has no email address"
    if user.has_usable_password():
        return "already has a password"
    return None


def invitation_send(*, user: User, base_url: str) -> str:
    """Email ``user`` a fresh link to choose a password; returns the link."""
    link = password_link(user=user, base_url=base_url)
    days = settings.PASSWORD_RESET_TIMEOUT // 86400
    send_mail(
        subject="You are invited to Lens Relay",
        message=(
            f"Choose your password here (the link works once, for {days} days):\n\n{link}\n\n"
            f"Your username is {user.get_username()}."
        ),
        from_email=None,
        recipient_list=[user.email],
    )
    return link
