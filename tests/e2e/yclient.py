"""Drive a real npm ``yjs`` + ``y-websocket`` client (``node/yclient.mjs``) from async Python tests.

Each :class:`YClient` is one Node process simulating one user. Commands go to its stdin as JSON lines and
each gets exactly one reply; unsolicited ``{"event": ...}`` lines (synced, status, connection-close, closed,
permission-denied, message, ...) are collected in :attr:`YClient.events`.

Text indices are UTF-16 code units, as in JavaScript; convert Python string indices with
:func:`utf16_index`.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import json
import os
import shutil
import signal
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE_MODULES = NODE_DIR / "node_modules"
CLIENT_SCRIPT = NODE_DIR / "yclient.mjs"

DEFAULT_TIMEOUT = 10.0
# A reply may carry a whole encoded document; asyncio's default line limit (64 KiB) is too small.
_LINE_LIMIT = 256 * 1024 * 1024
_STDERR_LINES_KEPT = 200

Event = dict[str, Any]


class YClientError(RuntimeError):
    """A command failed in the Node client, or the client process died."""


def utf16_index(text: str, index: int) -> int:
    """The JavaScript (UTF-16) index of the Python (code point) ``index`` in ``text``."""
    return len(text[:index].encode("utf-16-le")) // 2


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def node_executable() -> str:
    found = shutil.which("node")
    if found is None:
        raise YClientError("`node` is not on PATH; the e2e tests need Node.js 20 or newer")
    return found


def _kill_if_running(process: asyncio.subprocess.Process) -> None:
    # Runs from a finalizer or at interpreter exit, possibly after the event loop closed: signal directly.
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(process.pid, signal.SIGKILL)


class YClient:
    """One simulated user: create with :meth:`start` (or :meth:`spawn` + :meth:`connect`).

    The Node process is SIGKILLed by :meth:`close`/:meth:`kill`, or by a finalizer at interpreter exit.
    """

    def __init__(self, process: asyncio.subprocess.Process, *, label: str) -> None:
        self.label = label
        self.events: list[Event] = []
        self.client_id: int | None = None
        self._process = process
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._event_added = asyncio.Condition()
        self._stderr: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES_KEPT)
        self._dead_reason: str | None = None
        self._finalizer = weakref.finalize(self, _kill_if_running, process)
        self._readers = [
            asyncio.create_task(self._read_stdout(), name=f"yclient-{label}-stdout"),
            asyncio.create_task(self._read_stderr(), name=f"yclient-{label}-stderr"),
        ]

    # ----------------------------------------------------------------- lifecycle

    @classmethod
    async def spawn(cls, *, label: str = "client") -> YClient:
        """Start the Node process without connecting (then call :meth:`connect`)."""
        if not CLIENT_SCRIPT.is_file() or not (NODE_MODULES / "y-websocket").is_dir():
            raise YClientError(f"node packages missing: run `npm ci` in {NODE_DIR}")
        process = await asyncio.create_subprocess_exec(
            node_executable(),
            str(CLIENT_SCRIPT),
            cwd=str(NODE_DIR),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=_LINE_LIMIT,
        )
        client = cls(process, label=label)
        try:
            ready = await client.wait_event("ready", timeout=DEFAULT_TIMEOUT)
        except BaseException:
            await client.kill()
            raise
        client.client_id = int(ready["clientId"])
        return client

    @classmethod
    async def start(
        cls,
        server_url: str,
        room: str,
        *,
        params: Mapping[str, str] | None = None,
        awareness: Any = None,
        wait_synced: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        report_updates: bool = False,
        label: str = "client",
    ) -> YClient:
        """Spawn a client, connect it to ``server_url/room?params`` and (by default) wait until synced."""
        client = await cls.spawn(label=label)
        try:
            await client.connect(
                server_url, room, params=params, awareness=awareness, report_updates=report_updates
            )
            if wait_synced:
                await client.wait_synced(timeout=timeout)
        except BaseException:
            await client.kill()
            raise
        return client

    async def connect(
        self,
        server_url: str,
        room: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        awareness: Any = None,
        report_updates: bool = False,
    ) -> dict[str, Any]:
        args: dict[str, Any] = {"serverUrl": server_url, "room": room, "params": dict(params or {})}
        if headers:
            args["headers"] = dict(headers)
        if awareness is not None:
            args["awarenessState"] = awareness
        if report_updates:
            args["reportUpdates"] = True
        result: dict[str, Any] = await self.call("connect", **args)
        return result

    @property
    def running(self) -> bool:
        return self._process.returncode is None

    @property
    def pid(self) -> int:
        return self._process.pid

    async def close(self, *, timeout: float = 2.0) -> None:
        """Ask the client to disconnect and exit; SIGKILL it if it has not gone within ``timeout``."""
        if self.running and self._process.stdin is not None and not self._process.stdin.is_closing():
            with contextlib.suppress(Exception):
                await self.call("exit", timeout=timeout)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._process.wait(), timeout)
        await self.kill()

    async def kill(self) -> None:
        """SIGKILL the Node process at once (a crashed client: its socket just drops)."""
        _kill_if_running(self._process)
        await self._process.wait()
        if self._process.stdin is not None:
            self._process.stdin.close()
        for task in self._readers:
            task.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)
        self._finalizer.detach()
        self._fail_pending(f"client {self.label} was closed")

    async def __aenter__(self) -> YClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ----------------------------------------------------------------- commands

    async def call(self, cmd: str, /, *, timeout: float | None = None, **args: Any) -> Any:
        """Send one command and return its ``result``; raise :class:`YClientError` on ``{"error"}``."""
        if self._dead_reason is not None:
            raise YClientError(self._dead_reason)
        stdin = self._process.stdin
        assert stdin is not None
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        if timeout is None:
            inner_ms = args.get("timeoutMs")
            timeout = DEFAULT_TIMEOUT if inner_ms is None else inner_ms / 1000 + 5
        try:
            stdin.write((json.dumps({"id": request_id, "cmd": cmd, **args}) + "\n").encode())
            await stdin.drain()
            return await asyncio.wait_for(future, timeout)
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise YClientError(f"client {self.label} is gone ({cmd}): {exc}{self._stderr_tail()}") from exc
        except TimeoutError as exc:
            raise YClientError(f"client {self.label}: no reply to {cmd} within {timeout} s") from exc
        finally:
            self._pending.pop(request_id, None)

    async def text(self, name: str = "contents") -> str:
        result: str = await self.call("getText", name=name)
        return result

    async def insert(self, index: int, text: str, *, name: str = "contents") -> None:
        """Insert at a UTF-16 index (see :func:`utf16_index`)."""
        await self.call("insert", index=index, text=text, name=name)

    async def insert_at_code_point(self, index: int, text: str, *, name: str = "contents") -> None:
        """Insert before the ``index``-th code point of the text as the client holds it when the command
        arrives (an index worked out from an earlier read may split a surrogate pair typed since)."""
        await self.call("insert", index=index, text=text, name=name, codePoints=True)

    async def delete(self, index: int, length: int, *, name: str = "contents") -> None:
        """Delete ``length`` UTF-16 units at a UTF-16 index."""
        await self.call("delete", index=index, length=length, name=name)

    async def wait_text(
        self,
        *,
        equals: str | None = None,
        contains: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        name: str = "contents",
    ) -> str:
        args: dict[str, Any] = {"name": name, "timeoutMs": int(timeout * 1000)}
        if equals is not None:
            args["equals"] = equals
        if contains is not None:
            args["contains"] = contains
        result: str = await self.call("waitForText", **args)
        return result

    async def get_map(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("getMap", name=name)
        return result

    async def map_set(self, name: str, key: str, value: Any) -> None:
        await self.call("mapSet", name=name, key=key, value=value)

    async def map_delete(self, name: str, key: str) -> None:
        await self.call("mapDelete", name=name, key=key)

    async def authorship(self, name: str = "contents") -> list[dict[str, Any]]:
        """Runs of the text by the client id that wrote them: ``{"client", "user", "text"}``, ``user`` as
        Yjs's PermanentUserData names that client (None when no one registered it)."""
        runs: list[dict[str, Any]] = await self.call("authorship", name=name)
        return runs

    async def register_user(self, user: str) -> int:
        """Map this client's id to ``user`` in the `users` map with Yjs's PermanentUserData (as Relay.md
        clients do); returns the client id."""
        client_id: int = await self.call("registerUser", user=user)
        return client_id

    async def transact(self, ops: list[dict[str, Any]]) -> None:
        """Several ops in one Y transaction: ``{"op": "insert"|"delete"|"mapSet"|"mapDelete", ...}``."""
        await self.call("transact", ops=ops)

    async def wait_map(
        self,
        name: str,
        key: str,
        *,
        present: bool = True,
        value: Any = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        """Wait until ``key`` is (or is no longer) in map ``name``; optionally equal to ``value``."""
        args: dict[str, Any] = {
            "name": name,
            "key": key,
            "present": present,
            "timeoutMs": int(timeout * 1000),
        }
        if value is not None:
            args["value"] = value
        result: dict[str, Any] = await self.call("waitForMap", **args)
        return result

    async def wait_synced(self, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        await self.call("waitSynced", timeoutMs=int(timeout * 1000))

    async def info(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("info")
        return result

    async def awareness_states(self) -> dict[int, Any]:
        states: dict[str, Any] = await self.call("awarenessStates")
        return {int(client_id): state for client_id, state in states.items()}

    async def resolve_position(self, position: Any) -> int | None:
        """The UTF-16 index in ``contents`` a Yjs relative position (its JSON form) points at, if any."""
        found = await self.call("resolvePosition", position=position)
        return int(found["index"]) if found and found["type"] == "contents" else None

    async def wait_awareness(self, count: int, *, timeout: float = DEFAULT_TIMEOUT) -> dict[int, Any]:
        """Wait until at least ``count`` awareness states (own included) are known."""
        states: dict[str, Any] = await self.call(
            "waitForAwareness", count=count, timeoutMs=int(timeout * 1000)
        )
        return {int(client_id): state for client_id, state in states.items()}

    async def set_awareness(self, state: Any) -> None:
        await self.call("setAwareness", state=state)

    async def renew_awareness(self) -> None:
        """Renew this client's unchanged state, as y-protocols does every 15 s."""
        await self.call("renewAwareness")

    async def awareness_clocks(self) -> tuple[dict[int, int], int]:
        """The clock this client knows for every awareness client, and how many awareness messages from
        the server changed or renewed anything so far."""
        found: dict[str, Any] = await self.call("awarenessClocks")
        return {int(c): int(clock) for c, clock in found["clocks"].items()}, int(found["messages"])

    async def state_vector(self) -> bytes:
        return base64.b64decode(await self.call("stateVector"))

    async def encode_state(self, state_vector: bytes | None = None) -> bytes:
        """``Y.encodeStateAsUpdate(doc[, stateVector])`` as bytes."""
        args: dict[str, Any] = {}
        if state_vector is not None:
            args["stateVector"] = base64.b64encode(state_vector).decode()
        return base64.b64decode(await self.call("encodeState", **args))

    async def apply_update(self, update: bytes) -> None:
        await self.call("applyUpdate", update=base64.b64encode(update).decode())

    async def send_raw(self, data: bytes) -> None:
        """Send raw bytes as one binary frame on the provider's open socket (malformed-frame tests)."""
        await self.call("sendRaw", data=base64.b64encode(data).decode())

    async def disconnect(self) -> None:
        await self.call("disconnect")

    async def reconnect(self) -> None:
        await self.call("reconnect")

    # ----------------------------------------------------------------- events

    async def wait_event(
        self,
        name: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        predicate: Callable[[Event], bool] | None = None,
        since: int = 0,
    ) -> Event:
        """The first event ``name`` at or after index ``since`` of :attr:`events` matching ``predicate``."""

        def find() -> Event | None:
            for event in self.events[since:]:
                if event.get("event") == name and (predicate is None or predicate(event)):
                    return event
            return None

        async def wait() -> Event:
            async with self._event_added:
                while (found := find()) is None:
                    if self._dead_reason is not None:
                        raise YClientError(self._dead_reason)
                    await self._event_added.wait()
                return found

        try:
            return await asyncio.wait_for(wait(), timeout)
        except TimeoutError as exc:
            seen = [event.get("event") for event in self.events[since:]]
            raise YClientError(
                f"client {self.label}: no {name!r} event within {timeout} s; saw {seen}"
            ) from exc

    def events_named(self, name: str, *, since: int = 0) -> list[Event]:
        return [event for event in self.events[since:] if event.get("event") == name]

    # ----------------------------------------------------------------- plumbing

    async def _read_stdout(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        try:
            while line := await stdout.readline():
                try:
                    message = json.loads(line)
                except json.JSONDecodeError:
                    self._stderr.append(f"[stdout, not JSON] {line.decode(errors='replace').rstrip()}")
                    continue
                if "event" in message:
                    async with self._event_added:
                        self.events.append(message)
                        self._event_added.notify_all()
                    continue
                future = self._pending.get(message.get("id"))
                if future is None or future.done():
                    continue
                if "error" in message:
                    future.set_exception(YClientError(f"client {self.label}: {message['error']}"))
                else:
                    future.set_result(message.get("result"))
        finally:
            returncode = await self._process.wait()
            self._dead_reason = f"client {self.label} exited with code {returncode}{self._stderr_tail()}"
            self._fail_pending(self._dead_reason)
            async with self._event_added:
                self._event_added.notify_all()

    async def _read_stderr(self) -> None:
        stderr = self._process.stderr
        assert stderr is not None
        while line := await stderr.readline():
            self._stderr.append(line.decode(errors="replace").rstrip())

    def _fail_pending(self, reason: str) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(YClientError(reason))

    def _stderr_tail(self, lines: int = 20) -> str:
        tail = list(self._stderr)[-lines:]
        return "\nstderr:\n" + "\n".join(tail) if tail else ""

    @property
    def stderr_lines(self) -> list[str]:
        return list(self._stderr)
