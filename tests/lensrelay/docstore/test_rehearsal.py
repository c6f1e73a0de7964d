"""Updates apply all or nothing: any pycrdt failure is a refusal; the rehearsal Doc tracks the live one."""

from __future__ import annotations

from typing import Any

import pytest
from pycrdt import Doc, Text

from lensrelay.docstore.rehearsal import UpdateRefused, apply_or_refuse
from lensrelay.models import YDoc
from tests.lensrelay.update_corpus import HALF_APPLYING_UPDATE, PANICKING_BASE, PANICKING_UPDATE


def test_decode_errors_runtime_errors_and_panics_all_become_update_refused() -> None:
    panicking: Doc[Any] = Doc()
    panicking.apply_update(PANICKING_BASE)
    with pytest.raises(BaseException) as raw:
        panicking.apply_update(PANICKING_UPDATE)
    assert type(raw.value).__name__ == "PanicException" and not isinstance(raw.value, Exception)
    cases = [(Doc(), b"\xff\xff\xff"), (Doc(), HALF_APPLYING_UPDATE)]
    fresh: Doc[Any] = Doc()
    fresh.apply_update(PANICKING_BASE)
    cases.append((fresh, PANICKING_UPDATE))
    for doc, update in cases:
        with pytest.raises(UpdateRefused):
            apply_or_refuse(doc, update)


@pytest.mark.django_db(transaction=True)
async def test_a_panicking_update_leaves_the_room_and_its_log_untouched(store: Any) -> None:
    room = await store.create("fuzz-panic", YDoc.Kind.STANDALONE)
    room.apply_update(PANICKING_BASE, "test")
    await room.flushed()
    before, rows = room.state_update(), room.log_rows
    with pytest.raises(UpdateRefused):
        room.apply_update(PANICKING_UPDATE, "test")
    await room.flushed()
    assert room.state_update() == before and room.log_rows == rows
    assert str(room.doc.get("contents", type=Text)) == "héllo 😀 中"


@pytest.mark.django_db(transaction=True)
async def test_the_rehearsal_doc_follows_server_changes_between_client_updates(store: Any) -> None:
    room = await store.create("fuzz-follow", YDoc.Kind.STANDALONE)
    client: Doc[Any] = Doc()
    for step in range(3):
        state = client.get_state()
        client.get("contents", type=Text).insert(0, f"client {step} ")
        room.apply_update(client.get_update(state), "client")  # builds, then uses, the rehearsal Doc
        with room.transact():
            room.doc.get("contents", type=Text).insert(0, f"server {step} ")
        client.apply_update(room.state_update(client.get_state()))
    await room.flushed()
    rehearsal = room._rehearsal._doc
    assert rehearsal is not None
    assert rehearsal.get_state() == room.doc.get_state()
    assert str(rehearsal.get("contents", type=Text)) == str(room.doc.get("contents", type=Text))
