"""HTTP bodies: one limit (LENSRELAY_MAX_FRAME_BYTES), a JSON 413 beyond it, and Django's 2.5 MB cap never in
the way of a valid update."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient
from pycrdt import Doc, Text

from lensrelay.vault.documents import document_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Note.md", text="start\n")


def grown_update(state: bytes, size: int) -> tuple[bytes, str]:
    local: Doc[Any] = Doc()
    local.apply_update(state)
    before = local.get_state()
    text = local.get("contents", type=Text)
    text += "a plain line of words.\n" * (size // 23)
    return local.get_update(before), str(text)


async def test_a_3mb_update_over_http_applies(store: Any, note: Any, make_token: Any) -> None:
    token = await sync_to_async(make_token)("edit")
    room = await store.get(note.doc_id)
    update, expected = grown_update(room.state_update(), 3_000_000)
    assert len(update) > 2_621_440  # Django's DATA_UPLOAD_MAX_MEMORY_SIZE
    response = await AsyncClient().post(
        f"/d/{note.doc_id}/update",
        data=update,
        content_type="application/octet-stream",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.content[:300]
    assert str(room.doc.get("contents", type=Text)) == expected


async def test_bodies_over_the_limit_get_a_json_413_and_change_nothing(
    store: Any, note: Any, make_token: Any, settings: Any
) -> None:
    settings.LENSRELAY_MAX_FRAME_BYTES = 10_000
    token = await sync_to_async(make_token)("edit")
    room = await store.get(note.doc_id)
    before = room.state_update()
    update, _ = grown_update(before, 20_000)
    client, auth = AsyncClient(), {"Authorization": f"Bearer {token}"}
    for path, body in (
        (f"/d/{note.doc_id}/update", update),
        ("/doc/new", b'{"docId": "' + b"x" * 20_000 + b'"}'),
    ):
        response = await client.post(path, data=body, content_type="application/octet-stream", headers=auth)
        assert response.status_code == 413, (path, response.status_code)
        assert response["Content-Type"] == "application/json"
        assert response.json()["limit"] == 10_000
    assert room.state_update() == before
