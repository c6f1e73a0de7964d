"""A real webhook receiver for the tests: a threaded `http.server` on 127.0.0.1 that verifies every request
with `standardwebhooks.Webhook(secret).verify` and keeps what arrived.

It can be taken down (its port refuses connections) and brought up again on the same port, answer with
any status, or hold requests unanswered (to kill the sender mid-delivery).
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from standardwebhooks import Webhook, WebhookVerificationError


@dataclass(frozen=True)
class Received:
    msg_id: str
    type: str
    data: dict[str, Any]
    headers: dict[str, str]
    body: bytes


class Receiver:
    def __init__(self, secret: str = "", *, path: str = "/hook") -> None:
        self.secret = secret
        self.path = path
        self.received: list[Received] = []
        self.refused: list[str] = []  # why requests failed verification
        self.broken = 0  # requests whose sender went away before the whole body arrived
        self.status = 200
        self.answer = b"ok"
        self.extra_headers: dict[str, str] = {}
        self.hold = threading.Event()  # set: requests wait (unanswered) until it is cleared
        self.holding = threading.Event()  # set while a request is being held
        self.drop_held = False  # a held request, once let go, is not kept (nor answered)
        self._lock = threading.Lock()
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def start(self) -> Receiver:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                if len(body) < length:
                    # The sender went away mid-request (a SIGKILL in the tests): a broken connection, which
                    # a real receiver never verifies or answers, not a request with a bad signature.
                    receiver.broken += 1
                    self.close_connection = True
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                held = False
                while receiver.hold.is_set():
                    held = True
                    receiver.holding.set()
                    time.sleep(0.05)
                receiver.holding.clear()
                if held and receiver.drop_held:
                    # The sender was killed while this request waited: it never counts as delivered.
                    self.close_connection = True
                    return
                receiver._keep(body, headers)
                self.send_response(receiver.status)
                for name, value in receiver.extra_headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(receiver.answer)))
                self.end_headers()
                self.wfile.write(receiver.answer)

            def log_message(self, format: str, *args: Any) -> None:
                return

        server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="webhook-receiver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Down: the port refuses connections until `start` again."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _keep(self, body: bytes, headers: dict[str, str]) -> None:
        try:
            payload = Webhook(self.secret).verify(body, headers)
        except WebhookVerificationError as exc:
            with self._lock:
                self.refused.append(str(exc))
            return
        with self._lock:
            kind = payload.get("type", "") if isinstance(payload, dict) else ""
            data = payload.get("data", {}) if isinstance(payload, dict) else {}
            self.received.append(Received(headers["webhook-id"], kind, data, headers, body))

    def of_type(self, type: str) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.type == type]

    def ids(self) -> set[str]:
        with self._lock:
            return {r.msg_id for r in self.received}

    def wait_for(self, check: Any, *, timeout: float = 20.0, what: str = "events") -> list[Received]:
        """Poll until `check(received list)` is true; fail with what arrived."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                got = list(self.received)
            if check(got):
                return got
            if time.monotonic() > deadline:
                summary = [(r.type, r.msg_id) for r in got]
                raise AssertionError(
                    f"{what} not received within {timeout} s; got {summary}, refused {self.refused}"
                )
            time.sleep(0.05)


def body_json(received: Received) -> Any:
    return json.loads(received.body)
