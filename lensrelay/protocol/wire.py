"""lib0 encoding of y-websocket frames, strict enough to reject malformed input before it reaches a Doc."""

from __future__ import annotations

from dataclasses import dataclass

MESSAGE_SYNC = 0
MESSAGE_AWARENESS = 1
MESSAGE_AUTH = 2
MESSAGE_QUERY_AWARENESS = 3
# Relay.md's extension: a folder document's client asks for the state vectors of its notes (7) and is
# answered with a CBOR map of doc id -> state vector (8).
MESSAGE_QUERY_SUBDOCS = 7
MESSAGE_SUBDOCS = 8
MESSAGE_SYNC_STATUS = 102

SYNC_STEP1 = 0
SYNC_STEP2 = 1
SYNC_UPDATE = 2

AUTH_PERMISSION_DENIED = 0


class MalformedFrame(ValueError):
    """A frame that does not decode; the connection is closed and nothing is applied."""


@dataclass
class Reader:
    data: bytes
    pos: int = 0

    def var_uint(self) -> int:
        result = 0
        shift = 0
        while True:
            if self.pos >= len(self.data):
                raise MalformedFrame("frame ends inside a number")
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result
            shift += 7
            if shift > 63:
                raise MalformedFrame("number too large")

    def var_bytes(self) -> bytes:
        length = self.var_uint()
        end = self.pos + length
        if end > len(self.data):
            raise MalformedFrame("frame ends inside a byte string")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def var_string(self) -> str:
        try:
            return self.var_bytes().decode()
        except UnicodeDecodeError as exc:
            raise MalformedFrame("string is not UTF-8") from exc

    def at_end(self) -> bool:
        return self.pos == len(self.data)


def var_uint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def var_bytes(data: bytes) -> bytes:
    return var_uint(len(data)) + data


def sync_step1(state_vector: bytes) -> bytes:
    return var_uint(MESSAGE_SYNC) + var_uint(SYNC_STEP1) + var_bytes(state_vector)


def sync_step2(update: bytes) -> bytes:
    return var_uint(MESSAGE_SYNC) + var_uint(SYNC_STEP2) + var_bytes(update)


def sync_update(update: bytes) -> bytes:
    return var_uint(MESSAGE_SYNC) + var_uint(SYNC_UPDATE) + var_bytes(update)


def awareness_message(update: bytes) -> bytes:
    return var_uint(MESSAGE_AWARENESS) + var_bytes(update)


def permission_denied(reason: str) -> bytes:
    return var_uint(MESSAGE_AUTH) + var_uint(AUTH_PERMISSION_DENIED) + var_bytes(reason.encode())


def subdocs_message(cbor: bytes) -> bytes:
    return var_uint(MESSAGE_SUBDOCS) + var_bytes(cbor)
