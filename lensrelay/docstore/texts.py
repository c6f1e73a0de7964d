"""Texts of content documents held in memory for grep and search, within a byte budget; kept current by
listeners."""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

from django.conf import settings
from pycrdt import Text

from lensrelay.docstore import persistence
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore, on_change, on_foreign

CONTENTS = "contents"
# Texts loaded from the database per query: the database thread is shared, so one big load (the first
# grep over 100,000 notes) must not hold it for seconds in one go.
LOAD_BATCH = 2000


# What readers (tools, search) see of a raw text. The suggestions app installs the accepted view
# (the text as if pending suggestions were accepted); the core does not depend on it.
def _unchanged(raw: str) -> str:
    return raw


_view: Callable[[str], str] = _unchanged


def set_view(transform: Callable[[str], str]) -> None:
    global _view
    _view = transform


def view_of(raw: str) -> str:
    return _view(raw)


def room_text(room: Room) -> str:
    return str(room.doc.get(CONTENTS, type=Text))


def _load_texts(doc_ids: list[str]) -> dict[str, str]:
    return persistence.stored_texts(doc_ids)


def text_bytes(text: str) -> int:
    """What a text costs in memory: its characters at the width CPython stores them, plus the header."""
    return sys.getsizeof(text)


class TextCache:
    """Texts by document id, least recently used first, within `LENSRELAY_TEXT_CACHE_BYTES`.

    Only a cache: every text can be loaded again from the stored state (a live room wins), so evicting
    one never loses anything. Edits anywhere invalidate (listeners below), so a kept text is current.
    """

    def __init__(self, store: DocStore, *, budget: int | None = None) -> None:
        self.store = store
        self.budget = settings.LENSRELAY_TEXT_CACHE_BYTES if budget is None else budget
        self._texts: OrderedDict[str, str] = OrderedDict()
        # The readers' view of kept texts, once asked for: mostly the raw string itself (no pending
        # suggestions), which costs nothing more; remembered so it is not worked out on every scan.
        self._views: dict[str, str] = {}
        self.bytes = 0
        # Bumped whenever a kept text goes or comes, so what is derived from texts can be kept until then.
        self.generation = 0
        # Bumped whenever a text is evicted for room. Whoever keeps texts beyond this cache (the list handed
        # to grep) keeps them in `derived`, emptied on every eviction, so the budget bounds them too.
        self.evictions = 0
        self.derived: dict[object, object] = {}
        # What entries of `derived` kept with `keep_derived` cost (copies of texts, such as grep's joined
        # chunks): counted against the budget with the texts, and the first to go when it is short.
        self.derived_bytes = 0
        self._derived_sizes: dict[object, int] = {}
        # Documents changed while a load from the database was under way: what that load read may be
        # older than the change, so it is handed out once but not kept.
        self._loads = 0
        self._changed_while_loading: set[str] = set()

    def set_budget(self, budget: int) -> None:
        self.budget = budget
        self._evict()

    def _keep(self, doc_id: str, text: str) -> None:
        self._drop(doc_id)
        size = text_bytes(text)
        if size > self.budget:
            return
        self._texts[doc_id] = text
        self.bytes += size
        self._evict()

    def _evict(self) -> None:
        if self.derived_bytes and self.bytes + self.derived_bytes > self.budget:
            self.clear_derived()
        while self.bytes > self.budget and self._texts:
            self._drop(next(iter(self._texts)))
            self.evictions += 1
            self.clear_derived()

    def clear_derived(self) -> None:
        self.derived.clear()
        self._derived_sizes.clear()
        self.derived_bytes = 0

    def keep_derived(self, key: object, value: object, size: int) -> bool:
        """Keep ``value`` in `derived` when its ``size`` (bytes beyond the texts it is made of) fits in the
        budget beside the texts; it goes with the next eviction, or sooner when texts need the room."""
        self.derived_bytes -= self._derived_sizes.pop(key, 0)
        self.derived.pop(key, None)
        if self.bytes + self.derived_bytes + size > self.budget:
            return False
        self.derived[key] = value
        self._derived_sizes[key] = size
        self.derived_bytes += size
        return True

    def _drop(self, doc_id: str) -> None:
        old = self._texts.pop(doc_id, None)
        if old is not None:
            self.bytes -= text_bytes(old)
        view = self._views.pop(doc_id, None)
        if view is not None and view is not old:
            self.bytes -= text_bytes(view)

    def invalidate(self, doc_id: str) -> None:
        self.generation += 1
        self._drop(doc_id)
        if self._loads:
            self._changed_while_loading.add(doc_id)

    def prime(self, texts: dict[str, str]) -> None:
        """Take texts known to be the stored ones (just written by an import); live rooms still win."""
        for doc_id, text in texts.items():
            if doc_id not in self.store.rooms:
                self._keep(doc_id, text)

    def holds(self, doc_ids: Iterable[str]) -> bool:
        """Whether every one of these texts is in memory now."""
        texts = self._texts
        return all(doc_id in texts for doc_id in doc_ids)

    async def views_many(self, doc_ids: Iterable[str]) -> dict[str, str]:
        """The readers' view (`view_of`) of each text, computed once per kept text."""
        raw = await self.get_many(doc_ids)
        texts, views = self._texts, self._views
        result: dict[str, str] = {}
        for doc_id, text in raw.items():
            view = views.get(doc_id)
            if view is None:
                view = view_of(text)
                # Only for a text still kept as it is: one evicted or changed meanwhile is not tracked.
                if texts.get(doc_id) is text:
                    views[doc_id] = view
                    if view is not text:
                        self.bytes += text_bytes(view)
            result[doc_id] = view
        return result

    async def get(self, doc_id: str) -> str:
        return (await self.get_many([doc_id]))[doc_id]

    async def get_many(self, doc_ids: Iterable[str]) -> dict[str, str]:
        result: dict[str, str] = {}
        missing: list[str] = []
        texts, rooms = self._texts, self.store.rooms
        for doc_id in doc_ids:
            text = texts.get(doc_id)
            if text is None:
                room = rooms.get(doc_id)
                if room is not None:
                    self.generation += 1
                    text = room_text(room)
                    self._keep(doc_id, text)
            else:
                texts.move_to_end(doc_id)
            if text is None:
                missing.append(doc_id)
            else:
                result[doc_id] = text
        for start in range(0, len(missing), LOAD_BATCH):
            self.generation += 1
            batch = missing[start : start + LOAD_BATCH]
            self._loads += 1
            try:
                loaded = await self.store.db(_load_texts, batch)
            finally:
                self._loads -= 1
            changed = self._changed_while_loading
            if not self._loads:
                self._changed_while_loading = set()
            for doc_id in batch:  # in the order asked: the last asked is the most recently used
                stored = loaded.get(doc_id)
                if stored is None:
                    continue
                # A room may have loaded (and changed) meanwhile: the live Doc wins.
                room = rooms.get(doc_id)
                result[doc_id] = text = room_text(room) if room is not None else stored
                if room is not None or doc_id not in changed:
                    self._keep(doc_id, text)
        return result


def text_cache(store: DocStore) -> TextCache:
    return store.attached(TextCache)


@on_change
def _content_changed(room: Room, updates: Sequence[bytes]) -> None:
    if room.kind == "content":
        text_cache(room.store).invalidate(room.doc_id)


@on_foreign
def _changed_elsewhere(store: DocStore, doc_id: str) -> None:
    text_cache(store).invalidate(doc_id)
