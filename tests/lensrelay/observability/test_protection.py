"""Who may scrape /metrics: the rules alone (lensrelay.observability.protection), and the settings check."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lensrelay.observability.protection import (
    MAX_AUTHORIZATION_CHARS,
    Refusal,
    address_allowed,
    bearer_token,
    metrics_refusal,
    parse_networks,
)

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "s3cret-metrics-token-0123456789"


def refusal(
    remote: str | None, authorization: str | None, *, token: str = TOKEN, allow: tuple[str, ...] = ()
) -> Refusal | None:
    return metrics_refusal(remote_addr=remote, authorization=authorization, token=token, allow=allow)


def test_the_default_refuses_everyone_loopback_included() -> None:
    for remote in ("127.0.0.1", "::1", "10.0.0.1", None, ""):
        refused = metrics_refusal(remote_addr=remote, authorization=None, token="", allow=())
        assert refused is not None and refused.status == 403
        # Without a token configured, a bearer token is no credential: still refused.
        refused = metrics_refusal(remote_addr=remote, authorization=f"Bearer {TOKEN}", token="", allow=())
        assert refused is not None and refused.status == 403


def test_the_right_token_is_let_in_from_any_address() -> None:
    for remote in ("203.0.113.9", "::1", None):
        assert refusal(remote, f"Bearer {TOKEN}") is None
        assert refusal(remote, f"bearer   {TOKEN}  ") is None  # the scheme is case-insensitive


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        f"Bearer {TOKEN[:-1]}",  # a prefix
        f"Bearer {TOKEN}x",  # one character more
        f"Bearer {TOKEN.upper()}",
        f"Basic {TOKEN}",
        TOKEN,  # no scheme
        f"Bearer {TOKEN} {TOKEN}",
        "Bearer tökén-ünïcode-😀",
        "Bearer " + "a" * (MAX_AUTHORIZATION_CHARS + 10),
        "Bearer " + TOKEN + "\x00",
    ],
)
def test_anything_but_the_right_token_is_refused_with_401(authorization: str | None) -> None:
    refused = refusal("203.0.113.9", authorization)
    assert refused is not None and refused.status == 401
    assert refused.headers["WWW-Authenticate"].startswith('Bearer realm="metrics"')


def test_allowed_addresses_and_networks() -> None:
    allow = ("10.0.0.0/8", "192.168.1.7", "2001:db8::/32")
    for remote in ("10.1.2.3", "192.168.1.7", "2001:db8::1", "::ffff:10.9.9.9", "[2001:db8::5]"):
        assert refusal(remote, None, token="", allow=allow) is None, remote
    for remote in ("11.0.0.1", "192.168.1.8", "2001:db9::1", "127.0.0.1", "::1", "not-an-ip", "", None):
        refused = refusal(remote, None, token="", allow=allow)
        assert refused is not None and refused.status == 403, remote
    # With a token configured, a refused address is asked for the token instead.
    refused = refusal("11.0.0.1", None, allow=allow)
    assert refused is not None and refused.status == 401


def test_a_wrong_token_is_refused_even_from_an_allowed_address() -> None:
    assert refusal("10.1.2.3", None, allow=("10.0.0.0/8",)) is None
    refused = refusal("10.1.2.3", "Bearer wrong-token", allow=("10.0.0.0/8",))
    assert refused is not None and refused.status == 401


def test_bad_allow_entries_are_named_and_skipped_when_they_reach_the_rules() -> None:
    with pytest.raises(ValueError, match=re.escape("'10.0.0.0/33'")):
        parse_networks(["127.0.0.1", "10.0.0.0/33"])
    with pytest.raises(ValueError, match="'localhost'"):
        parse_networks(["localhost"])
    assert [str(n) for n in parse_networks([" 10.0.0.1/8 ", "", "::1"])] == ["10.0.0.0/8", "::1/128"]
    # Settings are checked at start; entries that still reach the rules unparsed are ignored, not fatal.
    assert address_allowed("10.1.1.1", ["nonsense", "10.0.0.0/8"])
    assert not address_allowed("10.1.1.1", ["nonsense"])


def test_bearer_token_reading() -> None:
    assert bearer_token(None) is None
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("Token abc") == ""
    assert bearer_token("x" * (MAX_AUTHORIZATION_CHARS + 1)) == ""


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LENSRELAY_METRICS_TOKEN": "short"}, "at least 16 characters"),
        ({"LENSRELAY_METRICS_ALLOW": "127.0.0.1,10.0.0.0/33"}, "LENSRELAY_METRICS_ALLOW: '10.0.0.0/33'"),
    ],
)
def test_bad_settings_stop_the_start_with_a_reason(env: dict[str, str], message: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "lensrelay.settings",
            "LENSRELAY_DATA_DIR": str(tmp_path),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr
