"""The admin's folder form applies the same name rules as every other way in."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lensrelay.models import Folder

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.org", "pw"))
    return client


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        (".hidden", "hidden or dot-only name"),
        ("Pay\u202egpj", "U+202E"),
        ("\ufeffLens", "U+FEFF"),
        ("a/b", "contains &#x27;/&#x27;"),
    ],
)
def test_a_folder_name_breaking_the_rules_is_refused(admin_client: Client, name: str, rule: str) -> None:
    response = admin_client.post("/admin/lensrelay/folder/add/", {"name": name})
    assert response.status_code == 200  # the form again, with the error
    assert rule in response.content.decode()
    assert not Folder.objects.exists()


def test_a_decomposed_folder_name_is_stored_in_nfc(admin_client: Client) -> None:
    response = admin_client.post("/admin/lensrelay/folder/add/", {"name": "Cafe\u0301"})
    assert response.status_code == 302
    assert list(Folder.objects.values_list("name", flat=True)) == ["Caf\u00e9"]
