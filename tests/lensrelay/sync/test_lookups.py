"""Connect-time lookups read on the event loop (SQLite) answer exactly what the ORM trip answers, and a
revocation, a narrowing or an expiry committed a moment before a connect is seen by it."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.utils import timezone

from lensrelay.access.tokens import token_revoke, token_set_folders
from lensrelay.models import ApiToken, YDoc
from lensrelay.sync.consumer import token_access_and_scope
from lensrelay.sync.lookups import loop_lookups
from lensrelay.vault.documents import document_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def on_sqlite() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("the loop's own reads are for SQLite only")


async def both(raw: str, doc_id: str) -> Any:
    """The loop's answer (after the trip has written the token's last use), checked against the trip's."""
    trip = await token_access_and_scope(raw, doc_id)
    loop = loop_lookups.token_and_scope(raw, doc_id)
    assert loop is not None, "the loop could not answer"
    assert loop == trip
    return loop


async def test_the_loop_answers_as_the_trip_does(
    on_sqlite: None, store: Any, make_folder: Any, make_token: Any
) -> None:
    lens = await sync_to_async(make_folder)("Lens")
    other = await sync_to_async(make_folder)("Other")
    note = await document_create(store=store, folder=lens, path="/Note.md", text="x")
    standalone = "standalone-doc"
    await YDoc.objects.acreate(doc_id=standalone, kind="content")
    everywhere = await sync_to_async(make_token)("edit")
    only_other = await sync_to_async(make_token)("view", folders=(other,))
    for doc_id, scope in [
        (note.doc_id, (True, lens.pk)),
        (lens.doc_id, (True, lens.pk)),
        (standalone, (True, None)),
        ("no-such-doc", (False, None)),
    ]:
        access, seen = await both(everywhere, doc_id)
        assert seen == scope
        assert access is not None and access.can_write_live and access.folder_ids is None
    access, _ = await both(only_other, note.doc_id)
    assert access is not None and not access.can_write_live and access.folder_ids == frozenset({other.pk})
    assert not access.sees_folder(lens.pk)
    assert await both("not-a-token", note.doc_id) == (None, (True, lens.pk))


async def test_a_change_to_the_token_is_seen_by_the_very_next_connect(
    on_sqlite: None, store: Any, make_folder: Any, make_token: Any
) -> None:
    lens = await sync_to_async(make_folder)("Lens")
    note = await document_create(store=store, folder=lens, path="/Note.md", text="x")
    raw = await sync_to_async(make_token)("edit")
    access, _ = await both(raw, note.doc_id)
    assert access is not None and access.folder_ids is None
    token = await ApiToken.objects.aget(token_hash=ApiToken.hash_token(raw))

    other = await sync_to_async(make_folder)("Other")
    await sync_to_async(token_set_folders)(token=token, folders=[other])
    access, _ = await both(raw, note.doc_id)
    assert access is not None and access.folder_ids == frozenset({other.pk})

    await ApiToken.objects.filter(pk=token.pk).aupdate(expires_at=timezone.now() - timedelta(seconds=1))
    assert await both(raw, note.doc_id) == (None, (True, lens.pk))

    await ApiToken.objects.filter(pk=token.pk).aupdate(expires_at=None)
    await sync_to_async(token_revoke)(token=await ApiToken.objects.aget(pk=token.pk))
    assert await both(raw, note.doc_id) == (None, (True, lens.pk))


async def test_a_last_use_that_is_due_is_written_without_the_connect_waiting(
    on_sqlite: None, store: Any, make_folder: Any, make_token: Any
) -> None:
    raw = await sync_to_async(make_token)("edit")
    token = await ApiToken.objects.aget(token_hash=ApiToken.hash_token(raw))
    assert token.last_used_at is None
    answered = loop_lookups.token_and_scope(raw, "any")
    assert answered is not None and answered[0] is not None
    for _ in range(200):
        if (await ApiToken.objects.aget(pk=token.pk)).last_used_at is not None:
            break
        await asyncio.sleep(0.01)
    assert (await ApiToken.objects.aget(pk=token.pk)).last_used_at is not None


async def test_a_locked_database_is_still_read(on_sqlite: None, store: Any, make_token: Any) -> None:
    import sqlite3

    from django.conf import settings

    raw = await sync_to_async(make_token)("edit")
    await token_access_and_scope(raw, "any")
    writer = sqlite3.connect(str(settings.DATABASES["default"]["NAME"]), isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # a writer mid-transaction: WAL readers do not wait for it
        answered = loop_lookups.token_and_scope(raw, "any")
        assert answered is not None and answered[0] is not None
    finally:
        writer.execute("ROLLBACK")
        writer.close()
