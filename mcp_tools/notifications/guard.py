"""What every notification receiver needs: its failure never undoes the change it reports, and the streams
of this process hear of what it logged once that change is committed."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from mcp_tools.notifications.hub import wake_all

logger = logging.getLogger(__name__)


def after_commit_wake() -> None:
    transaction.on_commit(wake_all)


class failures_contained:
    """A notification that cannot be made is logged; the change it reports goes ahead regardless (a
    savepoint keeps a failed statement from spoiling the caller's transaction)."""

    def __init__(self, what: str, *args: Any) -> None:
        self.what, self.args = what, args
        self._atomic = transaction.atomic()

    def __enter__(self) -> None:
        self._atomic.__enter__()

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        self._atomic.__exit__(kind, exc, tb)
        if exc is not None and isinstance(exc, Exception):
            logger.exception("could not make " + self.what, *self.args)
            return True
        return False
