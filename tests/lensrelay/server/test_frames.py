"""Client frames read by lensrelay.server.direct.read_frames: the same messages, replies, refusals and closes
as autobahn's own parser gives for the same bytes, however they are split, and the common frame never reaches
autobahn's parser."""

from __future__ import annotations

import os
import random
import struct
from typing import Any

import pytest
from autobahn.twisted.websocket import WebSocketServerFactory, WebSocketServerProtocol
from twisted.internet.testing import StringTransport

from lensrelay.server.direct import read_frames

HANDSHAKE = (
    b"GET /d/doc HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


class Transport(StringTransport):  # type: ignore[misc]
    """Tolerates autobahn's unregistering of a producer it never registered here, and records a drop."""

    dropped = False

    def unregisterProducer(self) -> None:
        self.producer = None

    def abortConnection(self) -> None:
        self.dropped = True
        self.loseConnection()


class Recorder(WebSocketServerProtocol):  # type: ignore[misc]
    def onConnect(self, request: Any) -> None:
        return None

    def onMessage(self, payload: bytes, isBinary: bool) -> None:
        self.messages.append((bytes(payload), isBinary))
        if payload == b"close me":
            self.sendClose(4400, "asked to")


def opened(*, limit: int = 0) -> tuple[Any, Transport]:
    factory = WebSocketServerFactory("ws://relay")
    factory.setProtocolOptions(
        maxFramePayloadSize=limit,
        maxMessagePayloadSize=limit,
        openHandshakeTimeout=0,
        closeHandshakeTimeout=0,
    )
    factory.protocol = Recorder
    protocol = factory.buildProtocol(None)
    protocol.messages = []
    transport = Transport()
    protocol.makeConnection(transport)
    protocol._dataReceived(HANDSHAKE)
    assert protocol.state == protocol.STATE_OPEN
    transport.clear()
    return protocol, transport


def frame(payload: bytes, *, opcode: int = 2, fin: bool = True, masked: bool = True, rsv: int = 0) -> bytes:
    head = bytes([(0x80 if fin else 0) | (rsv << 4) | opcode])
    n = len(payload)
    mask_bit = 0x80 if masked else 0
    if n < 126:
        head += bytes([mask_bit | n])
    elif n < 65536:
        head += bytes([mask_bit | 126]) + struct.pack("!H", n)
    else:
        head += bytes([mask_bit | 127]) + struct.pack("!Q", n)
    if not masked:
        return head + payload
    mask = os.urandom(4)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def feed(stream: bytes, cuts: list[int], *, ours: bool, limit: int = 0) -> tuple[Any, bytes, int]:
    protocol, transport = opened(limit=limit)
    parsed_by_autobahn = 0
    own = protocol._dataReceived

    def counted(data: bytes) -> None:
        nonlocal parsed_by_autobahn
        parsed_by_autobahn += len(data)
        own(data)

    protocol._dataReceived = counted
    previous = 0
    for cut in [*cuts, len(stream)]:
        chunk = stream[previous:cut]
        previous = cut
        if chunk:
            if ours:
                read_frames(protocol, chunk)
            else:
                protocol._dataReceived(chunk)
    return protocol, transport.value() + b"dropped" * transport.dropped, parsed_by_autobahn


def same_as_autobahn(stream: bytes, cuts: list[int], *, limit: int = 0) -> int:
    ours, ours_out, parsed = feed(stream, cuts, ours=True, limit=limit)
    theirs, theirs_out, _ = feed(stream, cuts, ours=False, limit=limit)
    assert ours.messages == theirs.messages
    assert ours_out == theirs_out  # pongs, close frames and their reasons
    assert ours.state == theirs.state
    assert ours.data == theirs.data
    return parsed


def test_whole_binary_frames_are_read_without_autobahn() -> None:
    payloads = [b"", b"\x00\x00", os.urandom(125), os.urandom(126), os.urandom(3000), os.urandom(65535)]
    stream = b"".join(frame(p) for p in payloads)
    protocol, _out, parsed = feed(stream, [], ours=True)
    assert protocol.messages == [(p, True) for p in payloads]
    assert parsed == 0
    # One frame per read, as a client usually sends them: still none through autobahn.
    cuts = []
    at = 0
    for p in payloads[:-1]:
        at += len(frame(p))
        cuts.append(at)
    assert same_as_autobahn(stream, cuts) == 0


@pytest.mark.parametrize(
    "kind",
    [
        "text",
        "ping",
        "fragmented",
        "unmasked",
        "rsv",
        "big",
        "close",
        "reserved-opcode",
        "continuation-alone",
        "non-minimal-length",
    ],
)
def test_other_frames_go_to_autobahn_from_their_first_byte(kind: str) -> None:
    before = frame(b"first")
    after = frame(b"after")
    other = {
        "text": frame("héllo".encode(), opcode=1),
        "ping": frame(b"are you there", opcode=9),
        "fragmented": frame(b"part one ", fin=False) + frame(b"part two", opcode=0),
        "unmasked": frame(b"plain", masked=False),
        "rsv": frame(b"deflated?", rsv=4),
        "big": frame(os.urandom(70_000)),
        "close": frame(struct.pack("!H", 1000) + b"bye", opcode=8),
        "reserved-opcode": frame(b"?", opcode=3),
        "continuation-alone": frame(b"orphan", opcode=0),
        # 5 bytes announced in the 16-bit form: autobahn calls it a protocol violation.
        "non-minimal-length": b"\x82\xfe\x00\x05" + b"\x00\x00\x00\x00" + b"12345",
    }[kind]
    stream = before + other + after
    parsed = same_as_autobahn(stream, [])
    assert parsed == len(other + after)


def test_a_frame_split_across_reads_is_left_to_autobahn_then_the_reader_resumes() -> None:
    first, second, third = frame(b"one" * 50), frame(b"two" * 50), frame(b"three")
    stream = first + second + third
    # The second frame arrives in two reads: autobahn buffers its start and finishes it; the third is ours.
    cut = len(first) + 10
    protocol, _out, parsed = feed(stream, [cut, len(first + second)], ours=True)
    assert [m for m, _ in protocol.messages] == [b"one" * 50, b"two" * 50, b"three"]
    assert parsed == len(second)


def test_a_whole_frame_inside_a_fragmented_message_is_refused_by_autobahn() -> None:
    # A new data frame where a continuation must come: a protocol violation, even in a read of its own.
    start = frame(b"part one", fin=False)
    stream = start + frame(b"not a continuation")
    assert same_as_autobahn(stream, [len(start)]) == len(stream)


def test_frames_over_the_limit_are_refused_by_autobahn_as_before() -> None:
    stream = frame(b"small") + frame(os.urandom(200)) + frame(b"never read")
    parsed = same_as_autobahn(stream, [], limit=100)
    assert parsed == len(stream) - len(frame(b"small"))


def test_a_close_from_on_message_hands_the_rest_to_autobahn() -> None:
    stream = frame(b"close me") + frame(b"after the close")
    same_as_autobahn(stream, [])


def test_random_streams_and_splits_match_autobahn() -> None:
    rng = random.Random(11)
    makers = [
        lambda: frame(rng.randbytes(rng.choice([0, 1, 5, 125, 126, 127, 300, 2048, 2049, 5000]))),
        lambda: frame(rng.randbytes(rng.randrange(0, 40))),
        lambda: frame(b"text", opcode=1),
        lambda: frame(rng.randbytes(10), opcode=9),
        lambda: frame(rng.randbytes(10), opcode=10),
        lambda: frame(b"a", fin=False) + frame(b"b", opcode=0, fin=False) + frame(b"c", opcode=0),
        lambda: frame(rng.randbytes(70_000)),
    ]
    rare = [
        lambda: frame(b"x", masked=False),
        lambda: frame(b"x", rsv=rng.randrange(1, 8)),
        lambda: rng.randbytes(rng.randrange(2, 12)),  # garbage
        lambda: frame(rng.randbytes(150)),  # over the limit when there is one
    ]
    for _ in range(300):
        parts = [rng.choice(makers)() for _ in range(rng.randrange(1, 8))]
        if rng.random() < 0.3:
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(rare)())
        stream = b"".join(parts)
        cuts = sorted(rng.sample(range(1, len(stream)), min(len(stream) - 1, rng.randrange(0, 6))))
        same_as_autobahn(stream, cuts, limit=rng.choice([0, 0, 100_000, 140]))
