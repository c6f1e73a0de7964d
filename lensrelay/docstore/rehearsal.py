"""Applying a Yjs update all or nothing.

pycrdt can fail halfway through integrating an update that decodes: a block whose parent is not a shared
type raises RuntimeError, a Rust panic surfaces as pyo3's PanicException (a BaseException), and the blocks
integrated before the faulty one stay in the Doc. So every update is first tried on a rehearsal Doc that
holds the same state as the live one; only an update that applies there cleanly reaches the live Doc.

One gap remains: structs waiting for missing dependencies ("pending") are not part of `get_update()`, so a
rehearsal Doc rebuilt after a refusal lacks the live Doc's pending structs; an update that completes them
could pass here and still fail live. Room.apply_update then refuses it too, and what did apply is logged and
broadcast like any change, so the log, the peers and the clients still agree.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pycrdt import Doc

logger = logging.getLogger(__name__)


class UpdateRefused(ValueError):
    """An update that does not decode or cannot be applied; the Doc it was meant for is unchanged."""


class UpdateDeclined(ValueError):
    """A well-formed update its sender may not make (a suggesting session's edit of plain text, say); the
    Doc it was meant for is unchanged. The message says why, in words for the sender."""


def apply_or_refuse(doc: Doc[Any], update: bytes) -> None:
    """`doc.apply_update(update)`, with every failure (panics included) raised as UpdateRefused."""
    try:
        doc.apply_update(update)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        raise UpdateRefused(f"{type(exc).__name__}: {exc}"[:200]) from exc


class Rehearsal:
    """A second Doc that follows a live one, to try updates on before the live Doc sees them.

    Built lazily from the live Doc (rooms nobody writes to never pay for it) and rebuilt after a refused
    update, which may have left part of itself behind in it.
    """

    def __init__(self, live: Doc[Any]) -> None:
        self._live = live
        self._doc: Doc[Any] | None = None

    def attempt(self, update: bytes, check: Callable[[Doc[Any], Doc[Any]], None] | None = None) -> None:
        """Apply `update` here; raises UpdateRefused if the live Doc must not get it. `check(live, tried)`
        sees both Docs, the update applied only to the second, and raises UpdateDeclined to refuse it."""
        doc = self._doc if self._doc is not None else self._rebuild()
        try:
            apply_or_refuse(doc, update)
            if check is not None:
                check(self._live, doc)
        except (UpdateRefused, UpdateDeclined):
            self._doc = None
            raise

    def follow(self, update: bytes) -> None:
        """Take a change the live Doc made without a rehearsal (the server's own transactions)."""
        if self._doc is None:
            return
        try:
            apply_or_refuse(self._doc, update)
        except UpdateRefused:
            logger.warning("rehearsal doc could not follow a live change; rebuilding it on next use")
            self._doc = None

    def _rebuild(self) -> Doc[Any]:
        doc: Doc[Any] = Doc()
        doc.apply_update(self._live.get_update())
        self._doc = doc
        return doc
