"""Where webhooks may point: hostile URLs (loopback in every spelling, private, link-local, odd schemes,
credentials) are refused when saved and again before an attempt, which connects only to the address it
checked; LENSRELAY_WEBHOOK_ALLOW_PRIVATE lifts the address rule and nothing else."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from lensrelay.webhooks import guard
from lensrelay.webhooks.guard import UrlRefused, address_refusal, check_url, parse_url
from lensrelay.webhooks.sending import post_event
from tests.lensrelay.webhooks.receiver import Receiver

PUBLIC = "93.184.215.14"

HOSTILE = [
    "http://127.0.0.1/hook",
    "http://127.0.0.1:8000/hook",
    "http://[::1]/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://0x7f000001/",
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://localhost/",
    "http://10.0.0.5/",
    "http://192.168.1.1/",
    "http://172.16.0.1/",
    "http://100.64.0.1/",
    "http://0.0.0.0/",
    "http://[::ffff:127.0.0.1]/",
    "http://[fe80::1]/",
    "http://[fd00::1]/",
    "http://224.0.0.1/",
]


@pytest.fixture
def no_private(settings: Any) -> None:
    settings.LENSRELAY_WEBHOOK_ALLOW_PRIVATE = False


@pytest.mark.parametrize("url", HOSTILE)
def test_non_public_addresses_are_refused(no_private: None, url: str) -> None:
    with pytest.raises(UrlRefused, match="public addresses only"):
        check_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.org/",
        "file:///etc/passwd",
        "gopher://example.org/",
        "javascript:alert(1)",
        "http://user:pw@example.org/",
        "http://user@example.org/",
        "http:///nohost",
        "http://example.org:99999/",
        "http://exa mple.org/",
        "http://example.org/\r\nX-Injected: 1",
        "http://example.org/#frag",
        "",
        "http://" + "a" * 3000 + ".org/",
    ],
)
def test_malformed_and_odd_urls_are_refused_whatever_the_setting(settings: Any, url: str) -> None:
    for allow in (False, True):
        settings.LENSRELAY_WEBHOOK_ALLOW_PRIVATE = allow
        with pytest.raises(UrlRefused):
            check_url(url)


def test_wrong_types_are_refused() -> None:
    for value in (None, 12, b"http://x/"):
        with pytest.raises(UrlRefused):
            parse_url(value)  # type: ignore[arg-type]


def test_a_public_address_passes_and_keeps_its_path(no_private: None) -> None:
    target = check_url(f"https://{PUBLIC}/hooks/lens?x=1")
    assert (target.scheme, target.host, target.port, target.path, target.address) == (
        "https",
        PUBLIC,
        443,
        "/hooks/lens?x=1",
        PUBLIC,
    )


def test_a_host_with_any_private_address_is_refused(
    no_private: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One public and one private answer: the next lookup could pick the private one."""

    def answers(host: str, port: int, **kwargs: Any) -> list[Any]:
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC, port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", port)),
        ]

    monkeypatch.setattr(guard.socket, "getaddrinfo", answers)
    with pytest.raises(UrlRefused, match=r"10\.1\.2\.3 is a private address"):
        check_url("https://mixed.example/")


def test_the_setting_allows_loopback(settings: Any) -> None:
    settings.LENSRELAY_WEBHOOK_ALLOW_PRIVATE = True
    assert check_url("http://127.0.0.1:9/hook").address == "127.0.0.1"


def test_address_refusals_name_the_reason() -> None:
    assert address_refusal("127.0.0.1") == "127.0.0.1 is a loopback address"
    assert "link-local" in (address_refusal("169.254.169.254") or "")
    assert address_refusal(PUBLIC) is None
    assert address_refusal("not-an-ip") == "not-an-ip is not an IP address"


def test_an_attempt_checks_again_and_never_connects_to_a_rebound_address(
    no_private: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saved while the name pointed to a public address; by the attempt it points to loopback (DNS
    rebinding): the attempt is refused before connecting, and the receiver on loopback hears nothing."""
    receiver = Receiver("whsec_" + "A" * 44).start()
    answers = iter([PUBLIC, "127.0.0.1"])

    def rebinding(host: str, port: int, **kwargs: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    monkeypatch.setattr(guard.socket, "getaddrinfo", rebinding)
    try:
        url = f"http://rebind.example:{receiver.port}/hook"
        assert check_url(url).address == PUBLIC  # when it was saved
        result = post_event(url=url, secret=receiver.secret, msg_id="msg_x", body="{}", timeout=2)
        assert not result.ok and result.status_code is None
        assert result.error.startswith("refused: rebind.example resolves to 127.0.0.1 is a loopback address")
        assert receiver.received == [] and receiver.refused == []
    finally:
        receiver.stop()


def test_an_attempt_to_a_loopback_url_saved_when_allowed_is_refused_once_disallowed(settings: Any) -> None:
    settings.LENSRELAY_WEBHOOK_ALLOW_PRIVATE = True
    receiver = Receiver("whsec_" + "A" * 44).start()
    try:
        check_url(receiver.url)
        settings.LENSRELAY_WEBHOOK_ALLOW_PRIVATE = False
        result = post_event(url=receiver.url, secret=receiver.secret, msg_id="msg_y", body="{}", timeout=2)
        assert not result.ok and "loopback" in result.error
        assert receiver.received == []
    finally:
        receiver.stop()
