"""grep, read and search stay right when the text cache is too small for the vault and evicts."""

from __future__ import annotations

import time
from typing import Any

import pytest

from lensrelay.docstore import texts as texts_module
from lensrelay.docstore.texts import TextCache, text_cache
from lensrelay.vault.paths import path_index
from mcp_tools import kb
from mcp_tools.engines import grep as grep_engine
from mcp_tools.tools import grep as grep_tool
from tests.editing import append_text
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
    await append_text(store, target.doc_id, "\nQuixoticEvicted line\n")
    store.rooms.pop(target.doc_id)

    text, error = await call("grep", {"pattern": "QuixoticEvicted", "output_mode": "content"})
    assert not error and target.user_path in text and "QuixoticEvicted line" in text
    read, error = await call("read", {"file_path": target.user_path}, who=access("view"))
    assert not error and "QuixoticEvicted line" in read
    assert cache.bytes <= cache.budget


def _forget_all(store: Any) -> Any:
    """A process that has not loaded any text yet (or evicted them all), keeping its budget."""
    cache = text_cache(store)
    for doc_id in list(cache._texts):
        cache._drop(doc_id)
    cache.clear_derived()
    return cache


async def test_grep_over_texts_not_in_memory_loads_them_a_batch_at_a_time(
    demo: Any, call: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = demo
    full, error = await call("grep", {"pattern": "[e]", "output_mode": "count", "head_limit": 0})
    assert not error
    cache = _forget_all(store)
    cache.set_budget(1)  # nothing is kept: every grep loads every text it scans
    monkeypatch.setattr(kb, "STREAM_BATCH", 2)
    asked: list[int] = []
    alive: list[int] = []
    views_many = TextCache.views_many

    async def counted(self: TextCache, doc_ids: Any) -> dict[str, str]:
        ids = list(doc_ids)
        asked.append(len(ids))
        return await views_many(self, ids)

    monkeypatch.setattr(TextCache, "views_many", counted)
    original_join = grep_engine._join

    def join(docs: list[tuple[str, str]]) -> Any:
        # The scanner joins what it was handed so far: with streaming that is never the whole vault.
        alive.append(len(docs))
        return original_join(docs)

    monkeypatch.setattr(grep_engine, "_join", join)
    monkeypatch.setattr(grep_engine, "CHUNK_CHARS", 1)

    again, error = await call("grep", {"pattern": "[e]", "output_mode": "count", "head_limit": 0})
    assert not error and again == full
    notes = len([e for e in path_index(store).all_entries() if e.is_markdown])
    assert asked and max(asked) <= 2 and sum(asked) == notes
    assert max(alive) <= 2
    assert cache.bytes <= cache.budget

    # It stops loading once the page is full.
    asked.clear()
    page, error = await call("grep", {"pattern": "e", "head_limit": 1})
    assert not error and len(page.splitlines()) >= 1
    assert sum(asked) < notes


async def test_a_streamed_grep_deadline_leaves_out_the_time_spent_loading(
    demo: Any, call: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = demo
    cache = _forget_all(store)
    cache.set_budget(1)
    monkeypatch.setattr(kb, "STREAM_BATCH", 1)
    monkeypatch.setattr(grep_tool, "GREP_TIMEOUT_SECONDS", 0.3)
    load = texts_module._load_texts

    def slow(doc_ids: list[str]) -> dict[str, str]:
        time.sleep(0.1)
        return load(doc_ids)

    monkeypatch.setattr(texts_module, "_load_texts", slow)
    await path_index(store).ensure()
    notes = len([e for e in path_index(store).all_entries() if e.is_markdown])
    assert notes * 0.1 > 0.3  # the loads alone outlast the deadline
    text, error = await call("grep", {"pattern": "e+", "output_mode": "count", "head_limit": 0})
    assert not error, text
    assert len(text.splitlines()) > 1
    # A scan that itself runs past the deadline is still stopped, loads or not.
    last = max((e for e in path_index(store).all_entries() if e.is_markdown), key=lambda e: e.user_path)
    await append_text(store, last.doc_id, "\n" + "a" * 40 + "!\n")
    store.rooms.pop(last.doc_id)
    _forget_all(store)
    text, error = await call("grep", {"pattern": "(a|aa)+$", "output_mode": "count", "head_limit": 0})
    assert error and "took longer" in text


async def test_the_joined_copy_grep_keeps_counts_against_the_budget(demo: Any, call: Any) -> None:
    store = demo
    first, error = await call("grep", {"pattern": "e", "output_mode": "count", "head_limit": 0})
    assert not error
    cache = text_cache(store)
    # Texts in memory: the next grep joins them once and keeps the copy beside them, within the budget.
    again, error = await call("grep", {"pattern": "e", "output_mode": "count", "head_limit": 0})
    assert not error and again == first
    joined = cache.derived.get(kb._JOINED_KEPT)
    assert isinstance(joined, grep_engine.Joined) and cache.derived_bytes == joined.bytes > 0
    assert cache.bytes + cache.derived_bytes <= cache.budget
    again, error = await call("grep", {"pattern": "e", "output_mode": "count", "head_limit": 0})
    assert not error and again == first and cache.derived.get(kb._JOINED_KEPT) is joined  # reused

    # Room for the texts but not for the copy: the copy goes first, no text is evicted, grep still answers.
    evictions = cache.evictions
    cache.set_budget(cache.bytes + cache.derived_bytes - 1)
    assert cache.derived_bytes == 0 and kb._JOINED_KEPT not in cache.derived
    assert cache.evictions == evictions
    again, error = await call("grep", {"pattern": "e", "output_mode": "count", "head_limit": 0})
    assert not error and again == first
    assert cache.derived_bytes == 0 and cache.bytes <= cache.budget

    # An edit makes a new list of documents: the next grep sees it (joined afresh once there is room).
    cache.set_budget(10 * 1024 * 1024)
    entry = next(e for e in path_index(store).all_entries() if e.is_markdown)
    await append_text(store, entry.doc_id, "\nQuixoticJoined line\n")
    for _ in range(2):
        text, error = await call("grep", {"pattern": "Quixotic\\w+ line", "output_mode": "content"})
        assert not error and entry.user_path in text and "QuixoticJoined line" in text
    assert isinstance(cache.derived.get(kb._JOINED_KEPT), grep_engine.Joined)


async def test_a_repeated_grep_reuses_the_kept_notes_until_something_changes(
    demo: Any, call: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = demo
    scoped: list[object] = []
    original = grep_tool._scoped

    def counted(ctx: Any, kb_: Any, path: Any) -> Any:
        scoped.append(path)
        return original(ctx, kb_, path)

    monkeypatch.setattr(grep_tool, "_scoped", counted)
    for _ in range(2):
        first, error = await call("grep", {"pattern": "e", "output_mode": "count", "head_limit": 0})
        assert not error
    scoped.clear()
    again, error = await call("grep", {"pattern": "e", "output_mode": "count", "head_limit": 0})
    assert not error and again == first and scoped == []  # nothing worked out again
    # Other arguments name other documents: worked out.
    _, error = await call("grep", {"pattern": "e", "glob": "**/*.md"})
    assert not error and len(scoped) == 1
    # An edit: worked out again, and seen.
    entry = next(e for e in path_index(store).all_entries() if e.is_markdown)
    await append_text(store, entry.doc_id, "\nQuixoticKept line\n")
    scoped.clear()
    text, error = await call("grep", {"pattern": "QuixoticKept", "output_mode": "content"})
    assert not error and "QuixoticKept line" in text and len(scoped) == 1
