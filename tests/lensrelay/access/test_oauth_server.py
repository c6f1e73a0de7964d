"""The OAuth authorization server's refusals, each with nothing issued, and the consent page's defences.

Driven through Django's test client the way a client and a browser would: register (RFC 7591), authorize
(the consent page, signed in), exchange the code (PKCE S256), refresh, revoke.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from datetime import timedelta
from html import unescape
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.test.utils import override_settings
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken

from lensrelay.access.auth import authenticate_token, oauth_token_access
from lensrelay.access.oauth_server import consent_csp
from lensrelay.access.tokens import token_revoke
from lensrelay.models import ApiToken, Folder

pytestmark = pytest.mark.django_db

HOST = "localhost"
BASE = f"http://{HOST}"
CALLBACK = "http://127.0.0.1:7777/callback"
VERIFIER = "v" * 64


def challenge(verifier: str = VERIFIER) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


def browser(user: User | None = None, *, csrf: bool = False) -> Client:
    client = Client(HTTP_HOST=HOST, enforce_csrf_checks=csrf)
    if user is not None:
        client.force_login(user)
    return client


def register(redirect_uris: list[str] | None = None) -> str:
    reply = browser().post(
        "/oauth/register/",
        data=json.dumps(
            {
                "client_name": "Claude",
                "redirect_uris": redirect_uris or [CALLBACK],
                "grant_types": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_method": "none",
            }
        ),
        content_type="application/json",
    )
    assert reply.status_code == 201, reply.content
    return str(reply.json()["client_id"])


def authorize_params(client_id: str, **overrides: str) -> dict[str, str]:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CALLBACK,
        "state": "state-1",
        "code_challenge": challenge(),
        "code_challenge_method": "S256",
        "resource": f"{BASE}/mcp",
        "scope": "mcp",
    }
    params.update(overrides)
    return {k: v for k, v in params.items() if v != ""}


def hidden_fields(html: str) -> dict[str, str]:
    return {k: unescape(v) for k, v in re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', html)}


def consent(
    user: User,
    client_id: str,
    *,
    role: str = "edit",
    folders: tuple[Folder, ...] = (),
    **overrides: str,
) -> Any:
    client = browser(user)
    page = client.get("/oauth/authorize/", authorize_params(client_id, **overrides))
    assert page.status_code == 200, page.content
    form: dict[str, Any] = hidden_fields(page.content.decode())
    form.update(role=role, allow="Allow", folders=[f.pk for f in folders])
    return client.post("/oauth/authorize/", form)


def code_from(reply: Any) -> str:
    assert reply.status_code == 302, reply.content
    match = re.search(r"[?&]code=([^&]+)", reply["Location"])
    assert match, reply["Location"]
    return match.group(1)


def exchange(client_id: str, code: str, **overrides: str) -> Any:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": CALLBACK,
        "client_id": client_id,
        "code_verifier": VERIFIER,
        "resource": f"{BASE}/mcp",
    }
    data.update(overrides)
    return browser().post("/oauth/token/", {k: v for k, v in data.items() if v != ""})


def refresh(client_id: str, refresh_token: str) -> Any:
    return browser().post(
        "/oauth/token/",
        {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id},
    )


@pytest.fixture
def alice() -> User:
    return User.objects.create_superuser("alice", password="pw")


@pytest.fixture
def reviewer() -> User:
    user = User.objects.create_user("rita", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="review_suggestion"))
    return user


@pytest.fixture
def folders() -> tuple[Folder, Folder]:
    from lensrelay.vault.folders import folder_create

    return folder_create(name="Alpha"), folder_create(name="Bravo")


def access_tokens() -> Any:
    """Access tokens that act for a person (not the registration endpoint's own, RFC 7592)."""
    return AccessToken.objects.filter(user__isnull=False)


def issued() -> tuple[int, int, int]:
    return Grant.objects.count(), access_tokens().count(), RefreshToken.objects.count()


# ---------------------------------------------------------------------------------------- the good path


def test_the_consent_page_is_headed_lens_relay(alice: User) -> None:
    page = browser(alice).get("/oauth/authorize/", authorize_params(register())).content.decode()
    assert 'id="consent"' in page and "Django administration" not in page
    assert '<div id="site-name"><a href="/admin/">Lens Relay</a></div>' in page
    assert "<title>" in page and "Lens Relay admin</title>" in page


def test_a_consented_client_gets_a_short_lived_resource_bound_token(alice: User, folders: Any) -> None:
    client_id = register()
    code = code_from(consent(alice, client_id, role="suggest", folders=(folders[0],)))
    reply = exchange(client_id, code)
    assert reply.status_code == 200, reply.content
    body = reply.json()
    assert body["expires_in"] <= 3600 and body["refresh_token"]
    found = oauth_token_access(body["access_token"], surface="mcp")
    assert found is not None
    assert found.access.role == "suggest" and found.access.folder_ids == frozenset({folders[0].pk})
    assert found.access.name == "alice · Claude"
    grant = ApiToken.objects.get(pk=int(found.access.token_id or 0))
    assert grant.user == alice and grant.oauth_application is not None
    # Bound to /mcp: not valid on /api, and never on the Yjs sync (API tokens only).
    assert oauth_token_access(body["access_token"], surface="api") is None
    assert authenticate_token(body["access_token"]) is None
    assert authenticate_token(body["access_token"], oauth_surface="api") is None


def test_metadata_documents_name_each_other() -> None:
    client = browser()
    resource = client.get("/.well-known/oauth-protected-resource/mcp").json()
    assert resource["resource"] == f"{BASE}/mcp" and resource["authorization_servers"] == [BASE]
    server = client.get("/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == BASE
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["response_types_supported"] == ["code"]
    assert server["registration_endpoint"] == f"{BASE}/oauth/register/"
    assert server["revocation_endpoint"] == f"{BASE}/oauth/revoke/"
    assert server["client_id_metadata_document_supported"] is True
    assert client.get("/.well-known/oauth-protected-resource/elsewhere").status_code == 404


# ----------------------------------------------------------------------------- refusals, nothing issued


def test_an_unregistered_redirect_uri_is_refused_without_redirecting(alice: User) -> None:
    client_id = register()
    before = issued()
    page = browser(alice).get(
        "/oauth/authorize/", authorize_params(client_id, redirect_uri="https://evil.example/steal")
    )
    assert page.status_code in (200, 400) and "Location" not in page
    assert "evil.example" not in page.get("Location", "")
    assert 'id="consent"' not in page.content.decode()
    # A forged POST with the foreign redirect is refused the same way.
    client = browser(alice)
    good = client.get("/oauth/authorize/", authorize_params(client_id))
    form: dict[str, Any] = hidden_fields(good.content.decode())
    form.update(role="view", allow="Allow", redirect_uri="https://evil.example/steal")
    forged = client.post("/oauth/authorize/", form)
    assert "evil.example" not in forged.get("Location", "")
    assert issued() == before and not ApiToken.objects.filter(user=alice).exists()


def test_a_mismatched_redirect_uri_at_the_token_endpoint_issues_nothing(alice: User) -> None:
    client_id = register([CALLBACK, "http://127.0.0.1:7777/other"])
    code = code_from(consent(alice, client_id))
    reply = exchange(client_id, code, redirect_uri="http://127.0.0.1:7777/other")
    assert reply.status_code == 400 and "access_token" not in reply.json()
    assert access_tokens().count() == 0


def test_pkce_is_required_and_only_s256(alice: User) -> None:
    client_id = register()
    for overrides in (
        {"code_challenge": "", "code_challenge_method": ""},
        {"code_challenge_method": "plain"},
        {"code_challenge_method": ""},
    ):
        page = browser(alice).get("/oauth/authorize/", authorize_params(client_id, **overrides))
        assert 'id="consent"' not in page.content.decode()
        assert "code=" not in page.get("Location", "")
    assert Grant.objects.count() == 0


@pytest.mark.parametrize("verifier", ["", "w" * 64])
def test_a_missing_or_wrong_verifier_issues_nothing(alice: User, verifier: str) -> None:
    client_id = register()
    code = code_from(consent(alice, client_id))
    reply = exchange(client_id, code, code_verifier=verifier)
    assert reply.status_code == 400 and "access_token" not in reply.json()
    assert access_tokens().count() == 0


def test_a_code_works_once(alice: User) -> None:
    client_id = register()
    code = code_from(consent(alice, client_id))
    assert exchange(client_id, code).status_code == 200
    again = exchange(client_id, code)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert access_tokens().count() <= 1


def test_a_token_for_another_resource_is_refused(alice: User) -> None:
    client_id = register()
    page = browser(alice).get(
        "/oauth/authorize/", authorize_params(client_id, resource="https://other.example/mcp")
    )
    assert page.status_code == 400 and 'id="consent"' not in page.content.decode()
    assert Grant.objects.count() == 0
    code = code_from(consent(alice, client_id))
    reply = exchange(client_id, code, resource="https://other.example/mcp")
    assert reply.status_code == 400, reply.content
    assert json.loads(reply.content)["error"] == "invalid_target"
    assert access_tokens().count() == 0


def test_an_api_bound_token_does_not_open_mcp(alice: User) -> None:
    client_id = register()
    code = code_from(consent(alice, client_id, resource=f"{BASE}/api"))
    body = exchange(client_id, code, resource=f"{BASE}/api").json()
    assert oauth_token_access(body["access_token"], surface="mcp") is None
    assert authenticate_token(body["access_token"], oauth_surface="api") is not None


def test_an_expired_token_is_refused(alice: User) -> None:
    client_id = register()
    body = exchange(client_id, code_from(consent(alice, client_id))).json()
    access_tokens().update(expires=timezone.now() - timedelta(seconds=1))
    assert oauth_token_access(body["access_token"], surface="mcp") is None


def test_a_refresh_token_replayed_after_rotation_is_refused_and_ends_its_family(alice: User) -> None:
    client_id = register()
    first = exchange(client_id, code_from(consent(alice, client_id))).json()
    second = refresh(client_id, first["refresh_token"])
    assert second.status_code == 200
    rotated = second.json()
    assert rotated["refresh_token"] != first["refresh_token"]
    assert oauth_token_access(first["access_token"], surface="mcp") is None
    assert oauth_token_access(rotated["access_token"], surface="mcp") is not None
    tokens_before = access_tokens().count()
    replay = refresh(client_id, first["refresh_token"])
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert access_tokens().count() <= tokens_before
    # The replay revoked the family: the newest refresh token is refused too.
    assert refresh(client_id, rotated["refresh_token"]).status_code == 400


def test_the_revocation_endpoint_ends_a_token(alice: User) -> None:
    client_id = register()
    body = exchange(client_id, code_from(consent(alice, client_id))).json()
    reply = browser().post("/oauth/revoke/", {"token": body["access_token"], "client_id": client_id})
    assert reply.status_code == 200
    assert oauth_token_access(body["access_token"], surface="mcp") is None


def test_revoking_the_grant_deletes_its_oauth_tokens(alice: User) -> None:
    client_id = register()
    body = exchange(client_id, code_from(consent(alice, client_id))).json()
    found = oauth_token_access(body["access_token"], surface="mcp")
    assert found is not None
    token_revoke(token=ApiToken.objects.get(pk=int(found.access.token_id or 0)))
    assert oauth_token_access(body["access_token"], surface="mcp") is None
    assert not access_tokens().exists()
    assert refresh(client_id, body["refresh_token"]).status_code == 400


# --------------------------------------------------------------------------- the consent page's defences


def test_a_non_staff_person_is_refused(folders: Any) -> None:
    bob = User.objects.create_user("bob", password="pw")
    client_id = register()
    page = browser(bob).get("/oauth/authorize/", authorize_params(client_id))
    assert page.status_code == 403 and 'id="consent"' not in page.content.decode()
    forged = browser(bob).post(
        "/oauth/authorize/", {**authorize_params(client_id), "role": "view", "allow": "1"}
    )
    assert forged.status_code == 403
    assert Grant.objects.count() == 0 and not ApiToken.objects.filter(user=bob).exists()


def test_the_role_stops_at_the_persons_rights(reviewer: User) -> None:
    client_id = register()
    page = browser(reviewer).get("/oauth/authorize/", authorize_params(client_id))
    offered = re.findall(r'<option value="(\w+)"', page.content.decode())
    assert offered == ["view", "suggest"]
    forged = consent(reviewer, client_id, role="edit")
    assert forged.status_code == 200 and "code=" not in forged.get("Location", "")
    assert Grant.objects.count() == 0 and not ApiToken.objects.filter(user=reviewer).exists()


def test_a_grant_is_capped_when_the_person_loses_rights(reviewer: User) -> None:
    client_id = register()
    body = exchange(client_id, code_from(consent(reviewer, client_id, role="suggest"))).json()
    reviewer.user_permissions.clear()
    reviewer = User.objects.get(pk=reviewer.pk)  # permissions are cached per instance
    found = oauth_token_access(body["access_token"], surface="mcp")
    assert found is not None and found.access.role == "view"
    reviewer.is_staff = False
    reviewer.save()
    assert oauth_token_access(body["access_token"], surface="mcp") is None


def test_the_consent_page_needs_its_csrf_token(alice: User) -> None:
    client_id = register()
    client = browser(alice, csrf=True)
    page = client.get("/oauth/authorize/", authorize_params(client_id))
    form: dict[str, Any] = hidden_fields(page.content.decode())
    form.pop("csrfmiddlewaretoken")
    form.update(role="view", allow="Allow")
    assert client.post("/oauth/authorize/", form).status_code == 403
    assert Grant.objects.count() == 0


def test_the_consent_page_has_the_strict_policy(alice: User) -> None:
    client_id = register()
    page = browser(alice).get("/oauth/authorize/", authorize_params(client_id))
    policy = page["Content-Security-Policy"]
    assert (
        "script-src 'self'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    )
    assert "form-action 'self' http://127.0.0.1:7777" in policy
    assert page["X-Frame-Options"] == "DENY"
    assert "<script>" not in page.content.decode()


def test_consent_csp_refuses_to_widen_for_odd_redirects() -> None:
    assert "evil" not in consent_csp(host=HOST, redirect_uri="https://a.example; script-src evil")
    assert "form-action 'self' com.example.app:" in consent_csp(host=HOST, redirect_uri="com.example.app:/cb")


def test_signed_out_people_go_to_the_admin_login(folders: Any) -> None:
    client_id = register()
    page = browser().get("/oauth/authorize/", authorize_params(client_id))
    assert page.status_code == 302 and page["Location"].startswith("/admin/login/")


def test_consenting_again_replaces_the_previous_grant(alice: User) -> None:
    client_id = register()
    first = exchange(client_id, code_from(consent(alice, client_id, role="view"))).json()
    exchange(client_id, code_from(consent(alice, client_id, role="edit", state="s2")))
    assert oauth_token_access(first["access_token"], surface="mcp") is None
    active = ApiToken.objects.filter(user=alice, revoked_at__isnull=True)
    assert [grant.role for grant in active] == ["edit"]


# ------------------------------------------------------------------------------------------ registration


def test_the_registration_token_opens_nothing() -> None:
    reply = browser().post(
        "/oauth/register/",
        data=json.dumps(
            {"client_name": "x", "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"}
        ),
        content_type="application/json",
    )
    registration_token = reply.json()["registration_access_token"]
    assert oauth_token_access(registration_token, surface="mcp") is None
    assert authenticate_token(registration_token, oauth_surface="api") is None


def test_registration_refuses_too_many_redirect_uris() -> None:
    reply = browser().post(
        "/oauth/register/",
        data=json.dumps({"client_name": "x", "redirect_uris": [f"https://a.example/{i}" for i in range(11)]}),
        content_type="application/json",
    )
    assert reply.status_code in (401, 403) and Application.objects.count() == 0


@override_settings(LENSRELAY_OAUTH_REGISTRATIONS_PER_HOUR=2)
def test_registration_is_limited_per_hour() -> None:
    register()
    register()
    reply = browser().post(
        "/oauth/register/",
        data=json.dumps(
            {"client_name": "x", "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"}
        ),
        content_type="application/json",
    )
    assert reply.status_code in (401, 403) and Application.objects.count() == 2
