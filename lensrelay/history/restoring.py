"""Restoring a version: its text becomes the document's text again, as a new change every client receives.

The live Y.Text is edited by the smallest diff from the current text (never replaced whole), through the
store, so the change is logged, broadcast to this worker's sockets and reaches the other workers like any
edit. Apps built on the store (suggestions) hook in around the edit: the rows of suggestions whose markup
the restore removes must say so.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from django.contrib.admin.models import CHANGE, LogEntry
from pycrdt import Text

from lensrelay.docstore.acting import Actor, current_label
from lensrelay.docstore.room import Origin, Room
from lensrelay.docstore.store import DocStore, run_on_store
from lensrelay.history.models import DocVersion
from lensrelay.history.recording import CONTENTS, state_text, version_record_stored
from lensrelay.history.textedits import text_apply_edits, text_edits
from lensrelay.models import Document


class RestoreError(Exception):
    """The version cannot be restored (its document is gone); nothing was changed."""


@dataclass
class Restoring:
    """One restore in progress, as hooks see it; hooks add what they did to `notes`."""

    store: DocStore
    room: Room
    version: DocVersion
    user: Any
    notes: list[str] = field(default_factory=list)


RestoreHook = Callable[[Restoring], AbstractAsyncContextManager[None]]
_hooks: list[RestoreHook] = []


def on_restore(hook: RestoreHook) -> RestoreHook:
    """Register a context manager entered before a restore edits the text and left once it is flushed."""
    _hooks.append(hook)
    return hook


@dataclass(frozen=True)
class Restored:
    version: DocVersion
    edits: int
    characters_before: int
    characters_after: int
    notes: list[str]


def restore_author(user: Any, version: DocVersion) -> str:
    if getattr(user, "pk", None):
        who = Actor("staff", user.get_username(), user_id=user.pk).label
    else:
        who = current_label() or "server"
    return f"{who} restored version {version.pk}"


async def version_restore_in_store(*, store: DocStore, version: DocVersion, user: Any) -> Restored:
    room = await store.get(version.doc_id)
    if room is None:
        raise RestoreError(f"Document {version.doc_id} no longer exists; nothing was restored.")
    target = state_text(bytes(version.state))
    # The text being replaced becomes a version first, so restoring can itself be undone.
    await room.flushed()
    await store.db(version_record_stored, doc_id=version.doc_id)
    restoring = Restoring(store=store, room=room, version=version, user=user)
    async with AsyncExitStack() as hooks:
        for hook in _hooks:
            await hooks.enter_async_context(hook(restoring))
        ytext = room.doc.get(CONTENTS, type=Text)
        # Read and edited in one go on the event loop: no other change can come in between.
        current = str(ytext)
        edits = text_edits(current, target)
        if edits:
            with room.transact(Origin("restore", author=restore_author(user, version))):
                result = text_apply_edits(ytext, current=current, edits=edits)
            if result != target:  # never expected: the edits are checked against the text they came from
                raise RestoreError("the restored text differs from the version's; see the server log")
            await room.flushed()
    if edits:
        await store.db(version_record_stored, doc_id=version.doc_id)  # the restored text is the latest
    await store.db(_log_restore, version=version, user=user, edits=len(edits))
    return Restored(version, len(edits), len(current), len(target), restoring.notes)


def _log_restore(*, version: DocVersion, user: Any, edits: int) -> None:
    document = Document.objects.filter(doc_id=version.doc_id).first()
    if document is None or not getattr(user, "pk", None):
        return
    LogEntry.objects.log_actions(
        user_id=user.pk,
        queryset=[document],
        action_flag=CHANGE,
        change_message=(
            f"Restored version {version.pk} of {version.created:%Y-%m-%d %H:%M:%S} UTC ({edits} edit(s))"
        ),
        single_object=True,
    )


def version_restore(*, version: DocVersion, user: Any) -> Restored:
    """Restore a version from synchronous code (the admin), on the server's loop and store."""
    return run_on_store(lambda store: version_restore_in_store(store=store, version=version, user=user))
