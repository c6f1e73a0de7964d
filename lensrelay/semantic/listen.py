"""The semantic index's hooks into the document store, safe to import without the optional extra.

Every hook does nothing unless a model is configured and loadable; only then is the maintainer (and
with it NumPy) imported. Importing this module registers the derived view "vectors".
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.conf import settings

from lensrelay.docstore.derived import Follows, derived_view
from lensrelay.docstore.store import DocStore
from lensrelay.semantic.config import VIEW, semantic_enabled

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


# With a derive process (the default) it embeds what changed, once per pass; inline, every process embeds
# the notes it sees change (its own edits and other processes'), gathered for a while: embedding is costly.
derived_view(
    VIEW,
    handle=_derive,
    follows=Follows(elsewhere=True, when=semantic_enabled),
    delay=lambda: float(settings.LENSRELAY_SEMANTIC_DEBOUNCE_SECONDS),
)
