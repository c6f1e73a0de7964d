"""One signed POST of an event to an endpoint, bounded in time and size; runs in a worker thread.

Signed with `standardwebhooks` (`webhook-id`, `webhook-timestamp`, `webhook-signature`): the id is the
event's, the same on every attempt; the timestamp is the attempt's, since receivers refuse signatures
older than five minutes. The host is resolved and checked here (`guard.check_url`) and the connection
goes to the address that was checked, so a DNS answer changed since the check cannot redirect it.
Redirects are never followed (a 3xx is a failed attempt): following one would reach an unchecked host.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from standardwebhooks import Webhook

from lensrelay.webhooks.guard import Target, UrlRefused, check_url

# Of a response, at most this much is read (the rest is not waited for) and this much kept in the log.
READ_LIMIT = 64 * 1024
EXCERPT_CHARS = 2000
USER_AGENT = "LensRelay-Webhooks/1"


@dataclass(frozen=True)
class SendResult:
    status_code: int | None
    response_excerpt: str
    error: str
    duration_ms: int

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def body_of(*, type: str, created: datetime, data: dict[str, Any]) -> str:
    """The request body (Standard Webhooks' shape), the same bytes on every attempt."""
    envelope = {"type": type, "timestamp": created.astimezone(UTC).isoformat(), "data": data}
    return json.dumps(envelope, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def signed_headers(*, secret: str, msg_id: str, body: str, now: datetime | None = None) -> dict[str, str]:
    at = now or datetime.now(tz=UTC)
    signature = Webhook(secret).sign(msg_id=msg_id, timestamp=at, data=body)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to the checked address, whatever the host name resolves to by now."""

    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout, context=ssl.create_default_context())
        self._address = target.address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        # The certificate is checked against the URL's host name, not the address.
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


def excerpt(raw: bytes) -> str:
    """What the log keeps of a response: text, printable, bounded."""
    text = raw[: EXCERPT_CHARS * 4].decode("utf-8", errors="replace")
    text = "".join(c if c.isprintable() or c in "\n\t" else "\ufffd" for c in text)
    return text[:EXCERPT_CHARS]


def _read_bounded(response: http.client.HTTPResponse, deadline: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < READ_LIMIT:
        if time.monotonic() > deadline:
            break
        chunk = response.read1(min(8192, READ_LIMIT - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def post_event(
    *, url: str, secret: str, msg_id: str, body: str, timeout: float, now: datetime | None = None
) -> SendResult:
    """POST `body` to `url` signed for `msg_id`; never raises (a failure is a result)."""
    started = time.monotonic()
    deadline = started + timeout

    def done(status: int | None, raw: bytes = b"", error: str = "") -> SendResult:
        return SendResult(
            status, excerpt(raw), error[:EXCERPT_CHARS], int((time.monotonic() - started) * 1000)
        )

    try:
        target = check_url(url)
    except UrlRefused as exc:
        return done(None, error=f"refused: {exc}")
    connection: http.client.HTTPConnection = (
        _PinnedHTTPS(target, timeout) if target.scheme == "https" else _PinnedHTTP(target, timeout)
    )
    try:
        headers = signed_headers(secret=secret, msg_id=msg_id, body=body, now=now)
        connection.request("POST", target.path, body=body.encode(), headers=headers)
        response = connection.getresponse()
        raw = _read_bounded(response, deadline)
        status = response.status
        if 300 <= status < 400:
            where = response.getheader("location", "")[:200]
            return done(status, raw, f"redirect to {where!r} not followed")
        if time.monotonic() > deadline:
            return done(None, raw, f"answer took longer than {timeout:g} s")
        return done(status, raw, "" if 200 <= status < 300 else f"HTTP {status}")
    except TimeoutError:
        return done(None, error=f"timed out after {timeout:g} s")
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return done(None, error=f"{type(exc).__name__}: {exc}")
    finally:
        connection.close()
