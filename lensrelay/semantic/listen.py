"""The semantic index's hooks into the document store, safe to import without the optional extra.

Every hook does nothing unless a model is configured and loadable; only then is the maintainer (and
with it NumPy) imported. Importing this module registers the change listeners.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lensrelay.docstore.derived import derived_inline, derived_view
from lensrelay.docstore.room import Room
from lensrelay.docstore.store import DocStore, on_change, on_foreign
from lensrelay.semantic.config import semantic_enabled

if TYPE_CHECKING:
    from lensrelay.semantic.maintain import SemanticMaintainer

logger = logging.getLogger(__name__)


def _maintainer(store: DocStore) -> SemanticMaintainer:
    # Imported here: the maintainer needs NumPy, which only the optional extra installs.
    from lensrelay.semantic.maintain import maintainer_for

    return maintainer_for(store)


async def semantic_folder_changed(store: DocStore, folder_id: int) -> None:
    """Called by folder mirroring once a folder's document rows are current. Never raises."""
    if not semantic_enabled():
        return
    try:
        await _maintainer(store).folder_changed(folder_id)
    except Exception:
        logger.exception("could not update the semantic index for folder %s", folder_id)


async def semantic_ready(store: DocStore) -> None:
    """Schedule every note whose vectors are missing or stale (a no-op after the first call)."""
    if not semantic_enabled():
        return
    try:
        await _maintainer(store).ready()
    except Exception:
        logger.exception("could not compare the semantic index with the documents")


async def semantic_settled(store: DocStore) -> None:
    if semantic_enabled():
        await _maintainer(store).settled()


async def _derive(store: DocStore, doc_ids: frozenset[str]) -> None:
    if semantic_enabled():
        await _maintainer(store).embed(doc_ids)


# With a derive process (the default) it embeds what changed, once per pass; inline, the listeners below.
derived_view("vectors", _derive)


@on_change
def _content_changed(room: Room, updates: Sequence[bytes]) -> None:
    if room.kind == "content" and semantic_enabled() and derived_inline():
        _maintainer(room.store).schedule([room.doc_id])


@on_foreign
def _changed_elsewhere(store: DocStore, doc_id: str) -> None:
    if semantic_enabled() and derived_inline():
        _maintainer(store).schedule([doc_id])
