"""The first update of a new text document, encoded directly (an import writes one per note).

Building it through pycrdt (a Doc, a Text, an insert, `get_update`) cost 50 µs a note, a tenth of a
10,000-note import. The update is one Yjs v1 struct: a string item at clock 0 of one client, in the
root type `contents`, with no origins and an empty delete set; `tests/lensrelay/docstore/test_firstupdate.py`
holds it byte for byte to what pycrdt encodes.
"""

from __future__ import annotations

import random

# The largest client id a JavaScript peer reads exactly (pycrdt draws below it too).
_CLIENT_LIMIT = 2**53


def _var_uint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    out.append(value)
    return bytes(out)


def text_update(text: str, *, name: str = "contents", client_id: int | None = None) -> bytes:
    """A Yjs v1 update that turns an empty document into one whose Y.Text `name` holds `text`."""
    if not text:
        return b"\x00\x00"  # no struct, no deletion: what an empty Doc encodes
    client = random.randrange(_CLIENT_LIMIT) if client_id is None else client_id
    key = name.encode("utf-8")
    data = text.encode("utf-8")
    return b"".join(
        (
            b"\x01\x01",  # one client, one struct
            _var_uint(client),
            b"\x00",  # clock 0
            b"\x04\x01",  # a string item without origins; its parent is a root type, named next
            _var_uint(len(key)),
            key,
            _var_uint(len(data)),
            data,
            b"\x00",  # empty delete set
        )
    )
