"""The text of every content document, held in memory for grep and search; kept current by listeners."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from pycrdt import Text

from lensrelay.docstore import persistence
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore, on_change, on_foreign

CONTENTS = "contents"


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


class TextCache:
    def __init__(self, store: DocStore) -> None:
        self.store = store
        self._texts: dict[str, str] = {}
        # Bumped whenever a kept text goes or comes, so what is derived from texts can be kept until then.
        self.generation = 0

    def invalidate(self, doc_id: str) -> None:
        self.generation += 1
        self._texts.pop(doc_id, None)

    def prime(self, texts: dict[str, str]) -> None:
        """Take texts known to be the stored ones (just written by an import); live rooms still win."""
        for doc_id, text in texts.items():
            if doc_id not in self.store.rooms:
                self._texts[doc_id] = text

    async def get(self, doc_id: str) -> str:
        return (await self.get_many([doc_id]))[doc_id]

    async def get_many(self, doc_ids: Iterable[str]) -> dict[str, str]:
        result: dict[str, str] = {}
        missing: list[str] = []
        for doc_id in doc_ids:
            text = self._texts.get(doc_id)
            if text is None:
                room = self.store.rooms.get(doc_id)
                if room is not None:
                    self.generation += 1
                    text = self._texts[doc_id] = room_text(room)
            if text is None:
                missing.append(doc_id)
            else:
                result[doc_id] = text
        if missing:
            self.generation += 1
            loaded = await self.store.db(_load_texts, missing)
            for doc_id, text in loaded.items():
                # A room may have loaded (and changed) meanwhile: the live Doc wins.
                room = self.store.rooms.get(doc_id)
                result[doc_id] = self._texts[doc_id] = room_text(room) if room is not None else text
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
