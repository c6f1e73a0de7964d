"""RFC 9207: every authorization response the consent page sends back to the client, the code or an error,
carries `iss`, equal to the `issuer` the authorization server metadata states, which says it does so."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.auth.models import User
from django.test.utils import override_settings

from lensrelay.access.oauth_server import with_issuer
from tests.lensrelay.access.test_oauth_server import (
    BASE,
    CALLBACK,
    authorize_params,
    browser,
    code_from,
    consent,
    exchange,
    hidden_fields,
    register,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice() -> User:
    return User.objects.create_superuser("alice", password="pw")


def metadata(host: str = "localhost") -> dict[str, Any]:
    reply = browser().get("/.well-known/oauth-authorization-server", HTTP_HOST=host)
    assert reply.status_code == 200
    data: dict[str, Any] = reply.json()
    return data


def query(reply: Any) -> dict[str, list[str]]:
    assert reply.status_code == 302, reply.content
    location = reply["Location"]
    assert location.startswith(CALLBACK + "?"), location
    return parse_qs(urlparse(location).query)


def test_the_metadata_says_responses_carry_iss() -> None:
    data = metadata()
    assert data["authorization_response_iss_parameter_supported"] is True
    assert data["issuer"] == BASE
    # Everything else is as django-oauth-toolkit states it, CORS header included.
    assert data["response_types_supported"] == ["code"]
    assert browser().get("/.well-known/oauth-authorization-server")["Access-Control-Allow-Origin"] == "*"


def test_the_code_comes_back_with_the_metadata_issuer(alice: User) -> None:
    client_id = register()
    reply = consent(alice, client_id)
    params = query(reply)
    assert params["iss"] == [metadata()["issuer"]]
    assert params["state"] == ["state-1"]
    # The code still works.
    assert exchange(client_id, code_from(reply)).status_code == 200


def test_access_denied_comes_back_with_the_issuer_too(alice: User) -> None:
    client_id = register()
    client = browser(alice)
    page = client.get("/oauth/authorize/", authorize_params(client_id))
    form: dict[str, Any] = hidden_fields(page.content.decode())
    form.update(role="edit")  # no "allow": the person declined
    params = query(client.post("/oauth/authorize/", form))
    assert params["error"] == ["access_denied"]
    assert params["iss"] == [metadata()["issuer"]]
    assert params["state"] == ["state-1"]


def test_an_error_on_the_authorization_request_names_the_issuer(alice: User) -> None:
    client_id = register()
    reply = browser(alice).get("/oauth/authorize/", authorize_params(client_id, scope="nope"))
    params = query(reply)
    assert params["error"] == ["invalid_scope"]
    assert params["iss"] == [BASE]


def test_the_issuer_follows_the_host_as_the_metadata_does(alice: User) -> None:
    with override_settings(ALLOWED_HOSTS=["localhost", "relay.example.org"]):
        client_id = register()
        client = browser(alice)
        page = client.get(
            "/oauth/authorize/",
            authorize_params(client_id, resource="http://relay.example.org/mcp"),
            HTTP_HOST="relay.example.org",
        )
        assert page.status_code == 200, page.content
        form: dict[str, Any] = hidden_fields(page.content.decode())
        form.update(role="edit", allow="Allow")
        reply = client.post("/oauth/authorize/", form, HTTP_HOST="relay.example.org")
        assert (
            query(reply)["iss"] == [metadata("relay.example.org")["issuer"]] == ["http://relay.example.org"]
        )


def test_a_forged_iss_in_the_registered_redirect_uri_is_replaced(alice: User) -> None:
    forged = CALLBACK + "?next=%2Fhome&iss=https%3A%2F%2Fevil.example&i%73s=x"
    client_id = register([forged])
    reply = consent(alice, client_id, redirect_uri=forged)
    assert reply.status_code == 302, reply.content
    params = parse_qs(urlparse(reply["Location"]).query)
    assert params["iss"] == [BASE]
    assert params["next"] == ["/home"] and "code" in params
    # The client's own parameters keep their spelling.
    assert reply["Location"].startswith(CALLBACK + "?next=%2Fhome&")


def test_with_issuer() -> None:
    assert with_issuer("https://c.example/cb?code=1&state=s", "https://i") == (
        "https://c.example/cb?code=1&state=s&iss=https%3A%2F%2Fi"
    )
    assert with_issuer("https://c.example/cb", "https://i") == "https://c.example/cb?iss=https%3A%2F%2Fi"
    assert with_issuer("https://c.example/cb?iss=x&a=b+c", "I") == "https://c.example/cb?a=b+c&iss=I"
    assert (
        with_issuer("https://c.example/cb#access_token=t&iss=x", "I")
        == "https://c.example/cb#access_token=t&iss=I"
    )
