"""pycrdt counts text positions in UTF-8 bytes; Python counts code points.

Every text mutation goes through these helpers: an index that falls inside a multi-byte character
silently corrupts the document.
"""

from __future__ import annotations

from pycrdt import Text


def byte_offset(text: str, index: int) -> int:
    """The UTF-8 byte offset of Python string index `index` in `text`."""
    if index < 0 or index > len(text):
        raise IndexError(f"index {index} outside a text of {len(text)} characters")
    return len(text[:index].encode())


def char_index(text: str, offset: int) -> int:
    """The Python string index at UTF-8 byte offset `offset`; refuses offsets inside a character."""
    encoded = text.encode()
    if offset < 0 or offset > len(encoded):
        raise IndexError(f"byte offset {offset} outside a text of {len(encoded)} bytes")
    try:
        return len(encoded[:offset].decode())
    except UnicodeDecodeError as exc:
        raise IndexError(f"byte offset {offset} falls inside a character") from exc


def text_insert(ytext: Text, *, current: str, index: int, value: str) -> None:
    """Insert `value` at Python index `index`; `current` is `str(ytext)` as read in this transaction."""
    if value:
        ytext.insert(byte_offset(current, index), value)


def text_delete(ytext: Text, *, current: str, start: int, end: int) -> None:
    """Delete Python indices [start, end) of `current` (`str(ytext)` in this transaction)."""
    if end > start:
        del ytext[byte_offset(current, start) : byte_offset(current, end)]


def text_replace(ytext: Text, *, current: str, start: int, end: int, value: str) -> str:
    """Replace [start, end) with `value`; returns the new text so callers can chain edits."""
    text_delete(ytext, current=current, start=start, end=end)
    after_delete = current[:start] + current[end:]
    text_insert(ytext, current=after_delete, index=start, value=value)
    return after_delete[:start] + value + after_delete[start:]
