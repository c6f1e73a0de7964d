"""Changing a token in the admin goes through the token services: taking rights away is announced (and so
ends the token's MCP sessions), giving rights is not."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lensrelay.access.tokens import token_create, token_narrowed
from lensrelay.models import ApiToken, Folder

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def admin_client(transactional_db: None) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.org", "pw"))
    return client


@pytest.fixture
def heard() -> Any:
    calls: list[int] = []

    def listen(sender: Any, *, token_id: int, **kwargs: Any) -> None:
        calls.append(token_id)

    token_narrowed.connect(listen)
    yield calls
    token_narrowed.disconnect(listen)


def change(client: Client, token: ApiToken, *, role: str, folders: list[Folder]) -> None:
    response = client.post(
        f"/admin/lensrelay/apitoken/{token.pk}/change/",
        {
            "name": token.name,
            "role": role,
            "folders": [f.pk for f in folders],
            "expires_at_0": "",
            "expires_at_1": "",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]


def test_the_change_form_narrows_through_the_services(admin_client: Client, heard: list[int]) -> None:
    a, b = Folder.objects.create(name="A"), Folder.objects.create(name="B")
    token, _ = token_create(name="t", role="suggest", folders=[a])

    change(admin_client, token, role="edit", folders=[a, b])  # more rights: nothing to end
    token.refresh_from_db()
    assert (token.role, sorted(f.name for f in token.folders.all())) == ("edit", ["A", "B"])
    assert heard == []

    change(admin_client, token, role="edit", folders=[b])  # lost A
    assert list(token.folders.values_list("name", flat=True)) == ["B"] and heard == [token.pk]

    change(admin_client, token, role="view", folders=[b])  # a lower role
    token.refresh_from_db()
    assert token.role == "view" and heard == [token.pk, token.pk]


def test_the_add_form_creates_a_token_with_its_folders(admin_client: Client) -> None:
    a = Folder.objects.create(name="A")
    response = admin_client.post(
        "/admin/lensrelay/apitoken/add/",
        {"name": "new", "role": "view", "folders": [a.pk], "expires_at_0": "", "expires_at_1": ""},
        follow=True,
    )
    assert response.status_code == 200
    token = ApiToken.objects.get(name="new")
    assert list(token.folders.values_list("name", flat=True)) == ["A"]
    # the raw token is shown once, on the page that follows the save
    assert "claude mcp add --transport http" in response.content.decode()
