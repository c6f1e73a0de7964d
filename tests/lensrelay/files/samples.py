"""Sample file contents for the files tests (unit and end-to-end)."""

from __future__ import annotations

import struct
import zlib


def png(seed: int, size: int = 4) -> bytes:
    """A real PNG (valid chunks and CRCs) of size x size pixels, different for each seed."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes((seed * 7 + x * y) % 256 for x in range(size * 3)) for y in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
