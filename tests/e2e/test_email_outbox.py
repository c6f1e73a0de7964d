"""The email outbox survives a kill of the process that sends it: `manage.py send_email` stuck on a mail
server that never answers is SIGKILLed; nothing is lost and nothing counted as sent; the next run, with the
server answering, delivers each message exactly once, and a run after that delivers nothing. A server that
never answers holds a sender only for `LENSRELAY_EMAIL_TIMEOUT`: the message stays for a later try."""

from __future__ import annotations

import email
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .liveserver import REPO_ROOT
from .relay import Relay

pytestmark = pytest.mark.e2e

MARKER = "OUTBOX "


class MailServer:
    """A minimal SMTP server on 127.0.0.1 (the mail server is a boundary we do not own): it keeps each
    message it is given, or, while ``stalled``, accepts connections and never says a word."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.stalled = True
        self.connections = 0
        self.messages: list[Message] = []
        self._held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            if self.stalled:
                self._held.append(conn)
            else:
                threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as lines:
            conn.sendall(b"220 test ESMTP\r\n")
            for raw in lines:
                verb = raw.decode().strip().split(" ")[0].upper()
                if verb == "DATA":
                    conn.sendall(b"354 go on\r\n")
                    body = b""
                    for line in lines:
                        if line == b".\r\n":
                            break
                        body += line
                    self.messages.append(email.message_from_bytes(body))
                    conn.sendall(b"250 kept\r\n")
                elif verb == "QUIT":
                    conn.sendall(b"221 bye\r\n")
                    return
                else:
                    conn.sendall(b"250 ok\r\n")

    def close(self) -> None:
        self.listener.close()
        for conn in self._held:
            conn.close()


@pytest.fixture
def mail_server() -> Iterator[MailServer]:
    server = MailServer()
    yield server
    server.close()


def _outbox(relay: Relay) -> list[dict[str, object]]:
    script = (
        "import json; from suggestions.models import EmailMessage; "
        f"print({MARKER!r} + json.dumps(list(EmailMessage.objects.order_by('pk')"
        ".values('to', 'subject', 'sent_at', 'attempts')), default=str))"
    )
    [line] = [x for x in relay.manage("shell", "-c", script).splitlines() if x.startswith(MARKER)]
    return list(json.loads(line[len(MARKER) :]))


def _send_email(relay: Relay, port: int, **extra: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        **relay.server.env,
        "LENSRELAY_EMAIL_HOST": "127.0.0.1",
        "LENSRELAY_EMAIL_PORT": str(port),
        "LENSRELAY_EMAIL_TLS": "false",
        **extra,
    }
    return subprocess.Popen(
        [sys.executable, "manage.py", "send_email"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_a_killed_sender_loses_nothing_and_sends_nothing_twice(
    relay: Relay, mail_server: MailServer, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Plan.md").write_text("# Plan\n\nThe quick fox.\n", encoding="utf-8")
    relay.setup(imports=[(vault, "Mail")])
    relay.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import Group, User; from suggestions.models import EmailChoice; "
        "import datetime; "
        "u = User.objects.create_user('rita', email='rita@example.org', is_staff=True); "
        "u.groups.add(Group.objects.get(name='Reviewers')); "
        "EmailChoice.objects.create(user=u, frequency='at_once', "
        "told_until=datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC))",
    )
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {relay.tokens['suggest']}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{relay.http_url}/mcp", http_client=http)) as client:
        await client.call_tool("read", {"file_path": "Mail/Plan.md"})
        for old, new in (("quick", "swift"), ("fox", "hare")):
            result = await client.call_tool(
                "edit", {"file_path": "Mail/Plan.md", "old_string": old, "new_string": new}
            )
            assert not result.is_error, result

    # The sender makes the two messages, then hangs on the mail server; it is killed there.
    stuck = _send_email(relay, mail_server.port)
    deadline = time.monotonic() + 60
    while mail_server.connections == 0:
        assert stuck.poll() is None and time.monotonic() < deadline, stuck.communicate()
        time.sleep(0.05)
    stuck.send_signal(signal.SIGKILL)
    stuck.wait(10)
    kept = [m for m in _outbox(relay) if m["to"] == "rita@example.org"]
    assert len(kept) == 2
    assert all(m["sent_at"] is None for m in kept) and mail_server.messages == []

    # With the mail server answering: each message once, then nothing more.
    mail_server.stalled = False
    done = _send_email(relay, mail_server.port)
    out, err = done.communicate(timeout=60)
    assert done.returncode == 0 and "Email: 0 made, 2 sent." in out, (out, err)
    assert sorted(m["Subject"] for m in mail_server.messages) == ["[Lens Relay] To review: Mail/Plan.md"] * 2
    assert all(m["sent_at"] is not None for m in _outbox(relay) if m["to"] == "rita@example.org")
    again = _send_email(relay, mail_server.port)
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0 and "Email: 0 made, 0 sent." in out, (out, err)
    assert len(mail_server.messages) == 2


async def test_a_mail_server_that_never_answers_holds_the_sender_only_until_the_timeout(
    relay: Relay, mail_server: MailServer
) -> None:
    relay.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User; from suggestions.models import EmailMessage; "
        "u = User.objects.create_user('tim', email='tim@example.org', is_staff=True); "
        "EmailMessage.objects.create(user=u, key='test:timeout', to=u.email, subject='Hello', body='Hi')",
    )
    started = time.monotonic()
    sender = _send_email(relay, mail_server.port, LENSRELAY_EMAIL_TIMEOUT="1")
    out, err = sender.communicate(timeout=60)
    assert sender.returncode == 0 and "sent." in out, (out, err)
    assert time.monotonic() - started < 30  # not the forever Django waits without a timeout
    [message] = [m for m in _outbox(relay) if m["to"] == "tim@example.org"]
    assert message["sent_at"] is None and message["attempts"] == 1
    relay.manage(  # the module's other test counts what is sent
        "shell",
        "-c",
        "from suggestions.models import EmailMessage; "
        "EmailMessage.objects.filter(to='tim@example.org').delete()",
    )
