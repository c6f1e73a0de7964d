"""GET /metrics through Django: refused without the token or an allowed address (never a 500), and when
let in, an exposition prometheus_client's own parsers read."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.test import Client
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families

from lensrelay.observability import scrape, views

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "view-test-metrics-token-0123456789"


@pytest.fixture
def protected(settings: Any) -> Any:
    settings.LENSRELAY_METRICS_TOKEN = TOKEN
    settings.LENSRELAY_METRICS_ALLOW = ["10.0.0.0/8"]
    return settings


def get(path: str = "/metrics", *, token: str | None = None, remote: str = "127.0.0.1", **extra: Any) -> Any:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token is not None else {}
    return Client().get(path, REMOTE_ADDR=remote, **headers, **extra)


def families(text: str) -> dict[str, Any]:
    return {family.name: family for family in text_string_to_metric_families(text)}


def test_by_default_nobody_may_scrape_not_even_loopback() -> None:
    for remote in ("127.0.0.1", "::1"):
        response = get(remote=remote)
        assert response.status_code == 403
        assert b"lensrelay_" not in response.content


def test_the_token_is_asked_for_and_checked(protected: Any) -> None:
    for response in (get(), get(token="wrong"), get(token=TOKEN + "x"), get(f"/metrics?token={TOKEN}")):
        assert response.status_code == 401
        assert response["WWW-Authenticate"].startswith("Bearer")
        assert b"lensrelay_" not in response.content
    response = get(token=TOKEN)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    assert response["Cache-Control"] == "no-store"
    found = families(response.content.decode())
    for name in (
        "lensrelay_open_connections",
        "lensrelay_rooms",
        "lensrelay_updates_received",
        "lensrelay_deliveries",
        "lensrelay_persist_duration_seconds",
        "lensrelay_broadcast_duration_seconds",
        "lensrelay_event_loop_lag_seconds",
        "lensrelay_mcp_tool_calls",
        "lensrelay_suggestions_created",
        "lensrelay_suggestions_decided",
        "lensrelay_suggestion_decision_seconds",
        "lensrelay_suggestions_pending",
        "lensrelay_webhook_deliveries_pending",
        "lensrelay_webhook_attempts_failed",
        "lensrelay_webhook_endpoints_paused",
    ):
        assert name in found, name
    assert found["lensrelay_updates_received"].type == "counter"
    assert found["lensrelay_persist_duration_seconds"].type == "histogram"
    assert found["lensrelay_suggestions_pending"].type == "gauge"
    # The derive process's backlog is only a number when there is a derive process (tests derive inline).
    assert "lensrelay_derive_backlog_rows" not in found


def test_an_allowed_address_needs_no_token(protected: Any) -> None:
    assert get(remote="10.20.30.40").status_code == 200
    assert get(remote="::ffff:10.20.30.40").status_code == 200
    assert get(remote="11.0.0.1").status_code == 401


def test_only_get_and_head(protected: Any) -> None:
    client = Client()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    assert client.head("/metrics", **auth).status_code == 200
    for method in (client.post, client.put, client.delete, client.patch):
        response = method("/metrics", data=b"x", content_type="text/plain", **auth)
        assert response.status_code == 405
        assert response["Allow"] == "GET, HEAD"
        assert b"lensrelay_" not in response.content
    # Unauthenticated, another method is refused for who is asking, before anything else.
    assert client.post("/metrics").status_code == 401


def test_openmetrics_when_the_scraper_asks(protected: Any) -> None:
    response = get(token=TOKEN, HTTP_ACCEPT="application/openmetrics-text; version=1.0.0")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/openmetrics-text")
    names = {family.name for family in openmetrics_families(response.content.decode())}
    assert "lensrelay_updates_received" in names


def test_hostile_headers_get_a_refusal_never_a_500(protected: Any) -> None:
    for authorization in (
        "Bearer " + "A" * 100_000,
        "Bearer \u00e9\u00e8",
        "Bearer\t" + TOKEN,
        "NTLM abc",
        ",",
    ):
        response = Client().get("/metrics", HTTP_AUTHORIZATION=authorization, REMOTE_ADDR="127.0.0.1")
        assert response.status_code == 401, authorization[:20]
    for remote in ("", "unix:/run/x.sock", "999.1.1.1", "[::1", "10.0.0.1%eth0"):
        assert get(remote=remote).status_code == 401, remote


def test_a_failing_scrape_time_gauge_is_left_out_and_the_rest_answers(
    protected: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> float:
        raise RuntimeError("the database is away")

    monkeypatch.setattr(scrape, "_gauges", dict(scrape._gauges))
    scrape.scrape_gauge(name="lensrelay_test_broken", documentation="broken", read=broken)
    scrape.scrape_gauge(name="lensrelay_test_silent", documentation="nothing to say", read=lambda: None)
    scrape.scrape_gauge(name="lensrelay_test_answer", documentation="answers", read=lambda: 42)
    with caplog.at_level(logging.ERROR):
        response = get(token=TOKEN)
    assert response.status_code == 200
    found = families(response.content.decode())
    assert "lensrelay_test_broken" not in found and "lensrelay_test_silent" not in found
    assert found["lensrelay_test_answer"].samples[0].value == 42
    assert "lensrelay_suggestions_pending" in found
    assert "could not read the metric lensrelay_test_broken" in caplog.text


def test_an_exposition_that_cannot_be_built_is_a_503(protected: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(**kwargs: Any) -> tuple[bytes, str]:
        raise OSError("metrics directory gone")

    monkeypatch.setattr(views, "metrics_exposition", broken)
    response = get(token=TOKEN)
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert b"directory" not in response.content


@pytest.mark.parametrize(
    "path", ["/metrics/", "/metrics.txt", "/api/metrics", "/admin/metrics", "/ready", "/METRICS", "//metrics"]
)
def test_no_other_route_answers_with_the_metrics(protected: Any, path: str) -> None:
    response = get(path, token=TOKEN)
    assert response.status_code != 200 or b"lensrelay_" not in response.content
    assert b"# TYPE" not in response.content


@pytest.mark.parametrize("role", ["view", "suggest", "edit", "admin"])
def test_api_tokens_of_any_role_are_no_metrics_credential(protected: Any, make_token: Any, role: str) -> None:
    api_token = make_token(role)
    response = get(token=api_token)
    assert response.status_code == 401
    assert b"lensrelay_" not in response.content


def test_a_superuser_session_is_no_metrics_credential(settings: Any, django_user_model: Any) -> None:
    settings.LENSRELAY_METRICS_TOKEN = ""
    settings.LENSRELAY_METRICS_ALLOW = []
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("root", "r@example.org", "pw"))
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 403
    assert b"lensrelay_" not in response.content
