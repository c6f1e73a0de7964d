"""Pure pieces of the transport: Accept and Origin parsing, header decoding, JSON-RPC classification, version
negotiation, the JSON-or-SSE decision, log filtering and server-to-client replies."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncGenerator
from typing import Any, cast

import pytest
from asgiref.sync import sync_to_async
from django.http import HttpResponseBase, StreamingHttpResponse
from django.test import RequestFactory

from lensrelay.access.auth import Access
from mcp_tools.transport import outbound
from mcp_tools.transport.context import CallScope
from mcp_tools.transport.exchange import Outbox, answer, sse_event
from mcp_tools.transport.headers import decode_header_value, origin_allowed, parse_accept
from mcp_tools.transport.jsonrpc import Invalid, Notification, Reply, Request, RpcError, classify, decode_json
from mcp_tools.transport.outbound import ClientRequestError
from mcp_tools.transport.versions import negotiate
from tests.mcp_tools.test_transport_support import parse_sse

ACCESS = Access(name="t", role="edit", folder_ids=None, token_id=1)


# --------------------------------------------------------------------------------------------- headers


@pytest.mark.parametrize(
    ("header", "json", "sse"),
    [
        ("application/json, text/event-stream", True, True),
        ("application/json", True, False),
        ("text/event-stream", False, True),
        ("text/html", False, False),
        ("*/*", True, True),
        ("application/*;q=0.9", True, False),
        ("text/*", False, True),
        ("application/json;q=0, text/event-stream", False, True),
        ("APPLICATION/JSON; charset=utf-8", True, False),
        (None, True, True),
        ("", True, True),
    ],
)
def test_parse_accept(header: str | None, json: bool, sse: bool) -> None:
    accepts = parse_accept(header)
    assert (accepts.json, accepts.sse) == (json, sse)


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        (None, True),
        ("http://localhost", True),
        ("http://localhost:3000", True),
        ("https://127.0.0.1:8443", True),
        ("http://[::1]:8000", True),
        ("http://evil.example.com", False),
        ("http://localhost.evil.example.com", False),
        ("null", False),
        ("javascript:alert(1)", False),
        ("http://", False),
    ],
)
def test_origin_allowed_against_allowed_hosts(origin: str | None, allowed: bool, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"]
    headers = {} if origin is None else {"Origin": origin}
    request = RequestFactory().post("/mcp", headers=headers)
    assert origin_allowed(request) is allowed


def test_origin_allowed_by_the_extra_list(settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["localhost"]
    settings.LENSRELAY_MCP_ALLOWED_ORIGINS = ["https://claude.example/"]
    assert origin_allowed(RequestFactory().post("/mcp", HTTP_ORIGIN="https://claude.example"))
    assert not origin_allowed(RequestFactory().post("/mcp", HTTP_ORIGIN="https://claude.example.evil"))


def test_decode_header_value() -> None:
    assert decode_header_value("plain") == "plain"
    assert decode_header_value(None) is None
    wrapped = "=?base64?" + base64.b64encode("Über/Ideen.md".encode()).decode() + "?="
    assert decode_header_value(wrapped) == "Über/Ideen.md"
    assert decode_header_value("=?base64?!!!?=") is None


# -------------------------------------------------------------------------------------------- JSON-RPC


def test_classify_each_kind_of_message() -> None:
    assert classify({"jsonrpc": "2.0", "id": 1, "method": "ping"}) == Request(1, "ping", None)
    assert classify({"jsonrpc": "2.0", "id": "a", "method": "x", "params": {"k": 1}}) == Request(
        "a", "x", {"k": 1}
    )
    assert classify({"jsonrpc": "2.0", "method": "n"}) == Notification("n", None)
    reply = classify({"jsonrpc": "2.0", "id": 3, "result": {}})
    assert isinstance(reply, Reply) and reply.id == 3
    assert isinstance(classify({"jsonrpc": "2.0", "id": 3, "error": {"code": 1, "message": "m"}}), Reply)


@pytest.mark.parametrize(
    ("message", "readable_id"),
    [
        ([], None),
        ({"jsonrpc": "2.0"}, None),
        ({"jsonrpc": "2.0", "id": 7}, 7),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 2, "method": 5}, 2),
        ({"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": "m"}}, None),
        ({"id": "q", "method": "ping"}, "q"),
    ],
)
def test_classify_rejects_what_is_not_json_rpc(message: Any, readable_id: Any) -> None:
    result = classify(message)
    assert isinstance(result, Invalid)
    assert result.id == readable_id


def test_decode_json_raises_a_parse_error() -> None:
    assert decode_json(b'{"a": [1]}') == {"a": [1]}
    with pytest.raises(RpcError) as caught:
        decode_json(b"{")
    assert caught.value.code == -32700


@pytest.mark.parametrize(
    ("requested", "answer"),
    [
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2024-11-05", "2025-11-25"),
        (None, "2025-11-25"),
    ],
)
def test_negotiate(requested: Any, answer: str) -> None:
    assert negotiate(requested) == answer


# ----------------------------------------------------------------------------------------- JSON or SSE


def ok(request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {}}


async def body_of(response: HttpResponseBase) -> str:
    assert isinstance(response, StreamingHttpResponse)
    chunks = [chunk async for chunk in cast(AsyncGenerator[bytes, None], response.streaming_content)]
    return b"".join(chunks).decode()


async def test_a_quiet_handler_is_answered_with_json() -> None:
    async def run() -> dict[str, Any]:
        return ok()

    response = await answer(
        run(), outbox=Outbox(streaming=True), accepts=parse_accept(None), status_of=lambda m: 207
    )
    assert response["Content-Type"] == "application/json"
    assert response.status_code == 207


async def test_a_handler_that_emits_commits_to_sse() -> None:
    outbox = Outbox(streaming=True)

    async def run() -> dict[str, Any]:
        outbox.send(
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": 1}}
        )
        await asyncio.sleep(0.01)
        outbox.send(
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": 2}}
        )
        return ok()

    response = await answer(
        run(), outbox=outbox, accepts=parse_accept(None), status_of=lambda m: 200, session_id="s"
    )
    assert response["Content-Type"] == "text/event-stream"
    assert response["Mcp-Session-Id"] == "s"
    messages = parse_sse(await body_of(response))
    assert [m.get("params", {}).get("data") for m in messages[:2]] == [1, 2]
    assert messages[-1] == ok()


async def test_a_slow_quiet_handler_commits_to_sse_and_still_answers() -> None:
    async def run() -> dict[str, Any]:
        await asyncio.sleep(0.05)
        return ok(5)

    response = await answer(
        run(),
        outbox=Outbox(streaming=True),
        accepts=parse_accept(None),
        status_of=lambda m: 200,
        commit_after=0.01,
    )
    assert response["Content-Type"] == "text/event-stream"
    assert parse_sse(await body_of(response)) == [ok(5)]


async def test_sse_only_clients_get_a_one_event_stream() -> None:
    async def run() -> dict[str, Any]:
        return ok()

    response = await answer(
        run(),
        outbox=Outbox(streaming=True),
        accepts=parse_accept("text/event-stream"),
        status_of=lambda m: 200,
    )
    assert parse_sse(await body_of(response)) == [ok()]


async def test_a_json_only_outbox_drops_notifications() -> None:
    outbox = Outbox(streaming=False)
    assert outbox.send({"jsonrpc": "2.0", "method": "x"}) is False
    assert outbox.queue.empty()


async def _streaming_a_waiting_handler() -> tuple[StreamingHttpResponse, asyncio.Event]:
    """An answer streaming a progress event from a handler that then waits; the event is set once the
    handler is cancelled."""
    outbox = Outbox(streaming=True)
    cancelled = asyncio.Event()

    async def run() -> dict[str, Any]:
        outbox.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}})
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return ok()

    response = await answer(run(), outbox=outbox, accepts=parse_accept(None), status_of=lambda m: 200)
    assert isinstance(response, StreamingHttpResponse)
    return response, cancelled


@pytest.mark.django_db  # response.close() sends request_finished, which closes database connections
async def test_closing_the_stream_cancels_the_handler() -> None:
    response, cancelled = await _streaming_a_waiting_handler()
    stream = cast(AsyncGenerator[bytes, None], response.streaming_content)
    first = await stream.__anext__()
    assert b"notifications/progress" in first
    # What Django does once the response is over, also when the client went away.
    await stream.aclose()
    await sync_to_async(response.close)()
    await asyncio.wait_for(cancelled.wait(), 1)


def test_sse_event_framing() -> None:
    assert sse_event({"a": "ü"}) == 'event: message\ndata: {"a":"ü"}\n\n'.encode()


# ------------------------------------------------------------------------------------------ call scope


def scope(**overrides: Any) -> CallScope:
    values: dict[str, Any] = {
        "era": "handshake",
        "protocol_version": "2025-11-25",
        "access": ACCESS,
        "request_id": 1,
        "outbox": Outbox(streaming=True),
    }
    values.update(overrides)
    return CallScope(**values)


def test_logs_are_filtered_by_the_requested_level() -> None:
    quiet = scope()
    assert quiet.log("emergency", "x") is False
    warn = scope(log_level="warning")
    assert warn.log("info", "x") is False
    assert warn.log("warning", "w") is True
    assert warn.log("critical", "c") is True
    assert warn.log("nonsense", "n") is False
    sent = [warn.outbox.queue.get_nowait()["params"]["data"] for _ in range(warn.outbox.queue.qsize())]
    assert sent == ["w", "c"]


def test_progress_needs_a_token() -> None:
    assert scope().progress(1, 2) is False
    tokened = scope(progress_token="p")
    assert tokened.progress(1, 2, "half") is True
    assert tokened.outbox.queue.get_nowait()["params"] == {
        "progressToken": "p",
        "progress": 1,
        "total": 2,
        "message": "half",
    }


def test_stateless_read_key_is_token_and_client() -> None:
    stateless = scope(era="stateless", protocol_version="2026-07-28", client_info={"name": "claude-code"})
    assert stateless.session_key == "token:1:client:claude-code"
    anonymous = scope(era="stateless", access=Access(name="a", role="view", folder_ids=None))
    assert anonymous.session_key == "token:anonymous:client:"


async def test_ask_client_is_refused_in_the_stateless_era() -> None:
    with pytest.raises(ClientRequestError):
        await scope(era="stateless", protocol_version="2026-07-28").ask_client("sampling/createMessage", {})


async def test_a_reply_reaches_the_waiting_request_through_the_channel_layer() -> None:
    class FakeSession:
        id = "session-1"

    asking = scope(session=FakeSession())
    task = asyncio.ensure_future(asking.ask_client("elicitation/create", {"message": "?"}, timeout=5))
    sent = await asyncio.wait_for(asking.outbox.queue.get(), 5)
    assert sent["method"] == "elicitation/create"
    assert sent["id"].startswith(outbound.ID_PREFIX)
    # A reply posted under another session is not delivered to this request.
    await outbound.deliver_reply(
        request_id=sent["id"], session_id="other", message={"result": {"action": "no"}}
    )
    delivered = await outbound.deliver_reply(
        request_id=sent["id"],
        session_id="session-1",
        message={"jsonrpc": "2.0", "id": sent["id"], "result": {"action": "accept"}},
    )
    assert delivered is True
    assert await asyncio.wait_for(task, 5) == {"action": "accept"}
    assert await outbound.deliver_reply(request_id=12, session_id="session-1", message={}) is False


async def test_a_client_error_reply_raises() -> None:
    class FakeSession:
        id = "session-2"

    asking = scope(session=FakeSession())
    task = asyncio.ensure_future(asking.ask_client("sampling/createMessage", {}, timeout=5))
    sent = await asyncio.wait_for(asking.outbox.queue.get(), 5)
    await outbound.deliver_reply(
        request_id=sent["id"],
        session_id="session-2",
        message={"error": {"code": -1, "message": "user said no"}},
    )
    with pytest.raises(ClientRequestError, match="user said no"):
        await asyncio.wait_for(task, 5)


async def test_an_unanswered_request_times_out() -> None:
    class FakeSession:
        id = "session-3"

    with pytest.raises(ClientRequestError, match="in time"):
        await scope(session=FakeSession()).ask_client("sampling/createMessage", {}, timeout=0.05)


async def test_a_disconnect_while_waiting_cancels_the_handler() -> None:
    response, cancelled = await _streaming_a_waiting_handler()

    async def consume() -> None:
        async for _chunk in cast(AsyncGenerator[bytes, None], response.streaming_content):
            pass

    consumer = asyncio.ensure_future(consume())
    await asyncio.sleep(0.05)  # the first event is out; the stream now waits for the handler
    consumer.cancel()  # what Django does when the client disconnects
    await asyncio.wait_for(cancelled.wait(), 1)


async def test_a_client_cancel_and_a_disconnect_together_cancel_the_whole_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcp_tools.transport import dispatch, handshake
    from mcp_tools.transport.jsonrpc import Request

    started = asyncio.Event()

    async def waiting(scope: Any, request: Any) -> dict[str, Any]:
        started.set()
        await asyncio.sleep(60)
        return ok()

    monkeypatch.setattr(dispatch, "run_request", waiting)

    class FakeSession:
        id = "session-c"

    request = Request(id=5, method="tools/call", params={})
    session = cast(Any, FakeSession())
    running = asyncio.ensure_future(handshake._cancellable(session, request, cast(Any, None)))
    await asyncio.wait_for(started.wait(), 1)
    handshake._IN_FLIGHT[("session-c", 5)].cancel_by_client()
    running.cancel()  # the client went away as well: nobody is left to answer
    with pytest.raises(asyncio.CancelledError):
        await running
    assert ("session-c", 5) not in handshake._IN_FLIGHT
