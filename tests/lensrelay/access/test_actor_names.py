"""No token, person or OAuth client reads like another: a token's new name is numbered, a person's new
username that a token or client has is refused on the admin's user pages."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lensrelay.access.tokens import token_create, token_update
from lensrelay.models import ApiToken

pytestmark = pytest.mark.django_db


def root() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    return client


def test_a_username_a_token_already_has_is_refused_in_the_admin() -> None:
    admin = root()
    token_create(name="claude-review", role="edit")
    page = admin.post(
        "/admin/auth/user/add/",
        {
            "username": "Claude-Review",
            "password1": "a-Long-pass-1",
            "password2": "a-Long-pass-1",
            "usable_password": "true",
        },
    )
    assert page.status_code == 200 and "already named" in page.content.decode()
    assert not User.objects.filter(username__iexact="claude-review").exists()
    # Renaming a person onto a token's name is refused the same way.
    ada = User.objects.create_user("ada", is_staff=True)
    page = admin.post(
        f"/admin/auth/user/{ada.pk}/change/",
        {
            "username": "claude-review",
            "is_active": "on",
            "is_staff": "on",
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    )
    assert page.status_code == 200 and "already named" in page.content.decode()
    ada.refresh_from_db()
    assert ada.username == "ada"


def test_a_token_named_like_a_person_is_numbered_in_the_admin_and_the_page_says_so() -> None:
    admin = root()
    page = admin.post("/admin/lensrelay/apitoken/add/", {"name": "root", "role": "view", "folders": []})
    assert page.status_code == 200, page.content
    token = ApiToken.objects.get()
    assert token.name == "root 2" and "root 2" in page.content.decode()
    # Keeping a name keeps it; taking another token's numbers it.
    other, _ = token_create(name="bot", role="view")
    token_update(token=token, name="root 2", role="edit", expires_at=None)
    assert ApiToken.objects.get(pk=token.pk).name == "root 2"
    token_update(token=token, name="BOT", role="edit", expires_at=None)
    assert ApiToken.objects.get(pk=token.pk).name == "BOT 2" and other.name == "bot"
