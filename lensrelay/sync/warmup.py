"""Work done once at start-up that the first client of a fresh server would otherwise wait for.

A first sync on a freshly started server used to take several times as long as one a moment later: the
document store and its database thread were created, that thread opened its connection, and the
connect-time lookups ran their code for the first time, all while the first client waited. The launcher
(`lensrelay.serve`) runs `warm_up` as soon as the event loop turns, before any client can have connected
in practice; it reads nothing a client could see and changes nothing. If it fails, clients simply pay
the cost themselves, as before.
"""

from __future__ import annotations

import logging

from pycrdt import Doc, Text

from lensrelay.docstore import persistence
from lensrelay.docstore.store import get_store

logger = logging.getLogger(__name__)

# No document has this id, and no token this value: the lookups run their queries and find nothing.
_NOBODY = "lensrelay-warm-up"


async def warm_up() -> None:
    from lensrelay.sync.consumer import token_access_and_scope

    try:
        store = get_store()  # the store of the server's loop, and its threads
        await store.db(persistence.doc_kind, _NOBODY)
        await store.db(persistence.load_state, _NOBODY)
        await store.db(persistence.feed_origin, window=store.CATCH_UP_WINDOW)
        await token_access_and_scope(_NOBODY, _NOBODY)
        doc: Doc = Doc()
        doc.get("contents", type=Text).insert(0, _NOBODY)
        Doc().apply_update(doc.get_update())
    except Exception:
        logger.warning("warming up the sync path failed; the first clients will wait for it", exc_info=True)
