"""The admin's HTML pages (the review pages among them) send a strict CSP and carry no inline script."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client() -> Client:
    user = User.objects.create_superuser("boss", "boss@example.org", "pw")
    client = Client()
    client.force_login(user)
    return client


def test_admin_pages_send_a_strict_csp_and_no_inline_script(staff_client: Client) -> None:
    for path in (
        "/admin/",
        "/admin/lensrelay/apitoken/",
        "/admin/lensrelay/apitoken/add/",
        "/admin/suggestions/suggestion/",
        "/admin/lensrelay/document/",
    ):
        response: Any = staff_client.get(path)
        assert response.status_code == 200, path
        policy = response["Content-Security-Policy"]
        directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
        assert directives["script-src"] == "'self'", path
        assert "unsafe-inline" not in directives["script-src"] and "unsafe-eval" not in policy
        assert directives["object-src"] == "'none'" and directives["base-uri"] == "'self'"
        html = response.content.decode()
        inline = [m for m in re.findall(r"<script\b[^>]*>", html) if "src=" not in m]
        assert inline == [], (path, inline)
        assert not re.search(r"\son[a-z]+=", html), path


def test_signed_out_login_page_has_the_csp_and_other_routes_keep_theirs() -> None:
    client = Client()
    login: Any = client.get("/admin/login/")
    assert "script-src 'self'" in login["Content-Security-Policy"]
    # Not an admin page: the home page and JSON routes are left alone by this middleware.
    assert "Content-Security-Policy" not in client.get("/")


def test_no_template_holds_an_inline_script() -> None:
    from django.conf import settings

    root = settings.BASE_DIR / "templates"
    for template in root.rglob("*.html"):
        text = template.read_text(encoding="utf-8")
        inline = [m for m in re.findall(r"<script\b[^>]*>", text) if "src=" not in m]
        assert inline == [], (template, inline)
