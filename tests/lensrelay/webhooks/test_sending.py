"""One attempt against real sockets: signed so `standardwebhooks` verifies it, the same body and id on every
attempt, and bounded whatever the receiver does (a huge answer, garbage instead of HTTP, silence, a
redirect to a private address)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from lensrelay.webhooks.models import new_secret
from lensrelay.webhooks.sending import EXCERPT_CHARS, READ_LIMIT, body_of, post_event
from tests.lensrelay.webhooks.receiver import Receiver


@pytest.fixture(autouse=True)
def _allow_loopback(settings: Any) -> None:
    settings.LENSRELAY_WEBHOOK_ALLOW_PRIVATE = True


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver(new_secret()).start()
    yield started
    started.stop()


def raw_server(reply: Callable[[socket.socket], None]) -> tuple[int, threading.Thread]:
    """A TCP server on 127.0.0.1 that reads a request and lets `reply` do anything with the socket."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(5)
            try:
                conn.recv(65536)
                reply(conn)
            except OSError:
                pass
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return port, thread


def test_every_attempt_verifies_and_keeps_its_id_and_body(receiver: Receiver) -> None:
    created = datetime(2026, 11, 27, 3, 0, tzinfo=UTC)
    body = body_of(
        type="suggestion.created", created=created, data={"suggestion": {"id": "abc", "note": "é"}}
    )
    for _ in range(2):
        result = post_event(url=receiver.url, secret=receiver.secret, msg_id="msg_same", body=body, timeout=5)
        assert result.ok and result.status_code == 200 and result.response_excerpt == "ok"
    assert receiver.refused == []
    assert [r.msg_id for r in receiver.received] == ["msg_same", "msg_same"]
    assert receiver.received[0].body == receiver.received[1].body == body.encode()
    assert receiver.received[0].data == {"suggestion": {"id": "abc", "note": "é"}}
    assert receiver.received[0].headers["webhook-signature"].startswith("v1,")


def test_a_wrong_secret_fails_verification(receiver: Receiver) -> None:
    result = post_event(url=receiver.url, secret=new_secret(), msg_id="msg_bad", body="{}", timeout=5)
    assert result.ok  # the receiver answers 200 regardless; it is what it verified that counts
    assert receiver.received == [] and receiver.refused == ["No matching signature found"]


def test_an_error_status_is_a_failure_with_the_answer_kept(receiver: Receiver) -> None:
    receiver.status, receiver.answer = 503, b"busy, come back later"
    result = post_event(url=receiver.url, secret=receiver.secret, msg_id="msg_503", body="{}", timeout=5)
    assert not result.ok and result.status_code == 503
    assert result.error == "HTTP 503" and result.response_excerpt == "busy, come back later"


def test_a_redirect_is_not_followed(receiver: Receiver) -> None:
    """Even to an address the guard would allow: the redirect's target is never contacted."""
    target = Receiver(receiver.secret, path="/elsewhere").start()
    try:
        receiver.status = 302
        receiver.extra_headers = {"Location": "http://169.254.169.254/latest/meta-data/"}
        result = post_event(url=receiver.url, secret=receiver.secret, msg_id="msg_r1", body="{}", timeout=5)
        assert not result.ok and result.status_code == 302
        assert "not followed" in result.error and "169.254.169.254" in result.error
        receiver.extra_headers = {"Location": target.url}
        result = post_event(url=receiver.url, secret=receiver.secret, msg_id="msg_r2", body="{}", timeout=5)
        assert not result.ok and "not followed" in result.error
        time.sleep(0.2)
        assert target.received == []
    finally:
        target.stop()


def test_an_oversized_answer_is_read_only_up_to_the_limit() -> None:
    huge = b"x" * (50 * 1024 * 1024)

    def reply(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(huge))
        conn.sendall(huge)

    port, _ = raw_server(reply)
    started = time.monotonic()
    result = post_event(
        url=f"http://127.0.0.1:{port}/", secret=new_secret(), msg_id="m", body="{}", timeout=5
    )
    assert result.ok and len(result.response_excerpt) == EXCERPT_CHARS
    assert time.monotonic() - started < 5
    assert len(huge) > READ_LIMIT


@pytest.mark.parametrize(
    "garbage",
    [
        b"NOT HTTP AT ALL\r\n\r\n",
        b"\x00\xff\xfe" * 1000,
        b"HTTP/1.1 200 OK\r\n" + b"X: " + b"y" * 70000 + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"".join(b"H%d: v\r\n" % i for i in range(200)) + b"\r\n",
        b"HTTP/1.1 abc Nope\r\n\r\n",
        b"",
    ],
)
def test_garbage_answers_are_failed_attempts_not_crashes(garbage: bytes) -> None:
    port, _ = raw_server(lambda conn: conn.sendall(garbage))
    result = post_event(
        url=f"http://127.0.0.1:{port}/", secret=new_secret(), msg_id="m", body="{}", timeout=3
    )
    assert not result.ok and result.status_code is None
    assert result.error and len(result.error) <= EXCERPT_CHARS


def test_control_characters_of_an_answer_are_not_kept_as_they_are() -> None:
    body = b"ok\x1b[31m\x00done" + "é".encode()
    port, _ = raw_server(
        lambda conn: conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    )
    result = post_event(
        url=f"http://127.0.0.1:{port}/", secret=new_secret(), msg_id="m", body="{}", timeout=3
    )
    assert result.ok and "\x1b" not in result.response_excerpt and "\x00" not in result.response_excerpt
    assert result.response_excerpt.endswith("doneé")


def test_silence_times_out() -> None:
    port, _ = raw_server(lambda conn: time.sleep(3))
    started = time.monotonic()
    result = post_event(
        url=f"http://127.0.0.1:{port}/", secret=new_secret(), msg_id="m", body="{}", timeout=1
    )
    assert not result.ok and result.status_code is None and "timed out" in result.error
    assert time.monotonic() - started < 2.5


def test_a_trickling_answer_is_cut_at_the_deadline() -> None:
    def reply(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        for _ in range(40):
            conn.sendall(b"z" * 10)
            time.sleep(0.1)

    port, _ = raw_server(reply)
    started = time.monotonic()
    result = post_event(
        url=f"http://127.0.0.1:{port}/", secret=new_secret(), msg_id="m", body="{}", timeout=1
    )
    assert not result.ok and "longer than" in result.error
    assert time.monotonic() - started < 2.5


def test_nothing_listening_is_a_failed_attempt() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()
    result = post_event(
        url=f"http://127.0.0.1:{port}/", secret=new_secret(), msg_id="m", body="{}", timeout=2
    )
    assert not result.ok and result.status_code is None and "ConnectionRefusedError" in result.error
