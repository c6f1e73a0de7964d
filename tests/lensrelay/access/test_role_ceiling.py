"""The consent page offers an assistant at most what the person's own rights allow, read from the right
permission: reviewers may hand out `suggest`; the *change suggestion* right alone is not a reviewer's (the
fourth finding of the third trust round)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User

from lensrelay.access.auth import SUGGESTION_REVIEW_PERMISSION, role_ceiling
from suggestions.permissions import REVIEW_PERMISSION

from .test_oauth_server import authorize_params, browser, code_from, consent, register

pytestmark = pytest.mark.django_db


def staff(name: str, *codenames: str) -> User:
    user = User.objects.create_user(name, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return User.objects.get(pk=user.pk)


def offered(user: User) -> list[str]:
    page = browser(user).get("/oauth/authorize/", authorize_params(register()))
    assert page.status_code == 200, page.content
    return re.findall(r'<option value="(\w+)"', page.content.decode())


def test_the_ceiling_reads_the_review_permission() -> None:
    assert SUGGESTION_REVIEW_PERMISSION == REVIEW_PERMISSION
    reviewer = staff("rita", "review_suggestion")
    changer = staff("chad", "change_suggestion", "view_suggestion")
    editor = staff("eve", "edit_live")
    reader = staff("rob", "view_document")
    assert [role_ceiling(u) for u in (reviewer, changer, editor, reader)] == [
        "suggest",
        "view",
        "edit",
        "view",
    ]
    assert offered(reviewer) == ["view", "suggest"]
    assert offered(changer) == ["view"]
    assert offered(editor) == ["view", "suggest", "edit"]
    # A forged role above the ceiling grants nothing.
    forged = consent(changer, register(), role="suggest")
    assert forged.status_code == 200 and "code=" not in forged.get("Location", "")
    assert code_from(consent(reviewer, register(), role="suggest"))
