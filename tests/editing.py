"""Edits made the way an editor's client makes them, for tests of what follows an edit."""

from __future__ import annotations

from typing import Any

from pycrdt import Text

from lensrelay.docstore.offsets import text_insert
from lensrelay.docstore.texts import CONTENTS


async def append_text(store: Any, doc_id: str, value: str) -> None:
    """Add ``value`` at the end of a note through its room; wait until it is stored."""
    room = await store.get(doc_id)
    ytext = room.doc.get(CONTENTS, type=Text)
    with room.transact():
        current = str(ytext)
        text_insert(ytext, current=current, index=len(current), value=value)
    await room.flushed()
