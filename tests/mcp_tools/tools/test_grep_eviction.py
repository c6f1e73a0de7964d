"""grep, read and search stay right when the text cache is too small for the vault and evicts."""

from __future__ import annotations

from typing import Any

from pycrdt import Text

from lensrelay.docstore.offsets import text_insert
from lensrelay.paths import path_index
from lensrelay.texts import CONTENTS, text_cache
from tests.mcp_tools.tools.conftest import access


async def test_grep_over_a_vault_larger_than_the_cache_sees_an_edit_to_an_evicted_note(
    demo: Any, call: Any
) -> None:
    store = demo
    index = path_index(store)
    await index.ensure()
    entries = [e for e in index.all_entries() if e.is_markdown]
    assert len(entries) >= 5
    first, _ = await call("grep", {"pattern": "e", "output_mode": "count", "head_limit": 0})
    cache = text_cache(store)
    cache.set_budget(cache.bytes // 3)  # a third of the vault fits
    evicted_before = cache.evictions
    assert evicted_before > 0

    again, error = await call("grep", {"pattern": "e", "output_mode": "count", "head_limit": 0})
    assert not error and again == first  # texts loaded again where evicted: the same answer
    assert cache.bytes <= cache.budget

    # Edit a note whose text is not in memory, through its room; then close the room.
    target = next(e for e in entries if not cache.holds([e.doc_id]))
    room = await store.get(target.doc_id)
    ytext = room.doc.get(CONTENTS, type=Text)
    with room.transact():
        current = str(ytext)
        text_insert(ytext, current=current, index=len(current), value="\nQuixoticEvicted line\n")
    await room.flushed()
    store.rooms.pop(target.doc_id)

    text, error = await call("grep", {"pattern": "QuixoticEvicted", "output_mode": "content"})
    assert not error and target.user_path in text and "QuixoticEvicted line" in text
    read, error = await call("read", {"file_path": target.user_path}, who=access("view"))
    assert not error and "QuixoticEvicted line" in read
    assert cache.bytes <= cache.budget
