"""Subscriptions are kept once per document whatever the URI's spelling, and a session holds a bounded
number of them; one change makes one event per subscribed session."""

from __future__ import annotations

import unicodedata
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from lensrelay.vault.importexport import import_vault
from mcp_tools.callers.sessions import idle_timeout
from mcp_tools.kb import open_kb
from mcp_tools.models import McpEvent, McpSession, McpSubscription
from mcp_tools.notifications import events
from mcp_tools.notifications.produce import documents_changed_events
from mcp_tools.notifications.subscriptions import (
    CHUNK,
    TooManySubscriptions,
    subscribed_uris,
    subscribers_of,
    subscription_add,
    subscription_remove,
)
from mcp_tools.registry import ToolContext
from mcp_tools.resources.documents import DOCUMENTS, document_of_uri, document_uri
from tests.mcp_tools.tools.conftest import access

pytestmark = pytest.mark.django_db(transaction=True)

# Names chosen so NFC and NFD differ, and so that percent-encoding touches multi-byte characters.
NOTES = {
    "Index.md": "The index.\n",
    "Über Photosynthese.md": "Licht.\n",
    "Café crème.md": "Du lait.\n",
    "Notes/Ideas.md": "Ideas.\n",
    "Notes/光合作用.md": "Chlorophyll.\n",
    "Notes/a#b?c%d.md": "Odd characters.\n",
    "Indexes.md": "Not the index.\n",
}


def listening(name: str) -> str:
    now = timezone.now()
    McpSession.objects.create(id=name, protocol_version="2025-11-25", created_at=now, last_seen_at=now)
    events.stream_claim(session_id=name)
    return name


def ctx() -> ToolContext:
    return ToolContext(access=access("view"), session_key="subscriptions-test")


@pytest.fixture
async def vault(store: Any, transactional_db: None, tmp_path: Path) -> Any:
    for name, text in NOTES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    await import_vault(store=store, root=tmp_path, folder_name="Public")
    return store


# ----------------------------------------------------------------------------------- spellings (hypothesis)


@st.composite
def spelling(draw: st.DrawFn, user_path: str) -> str:
    """Any URI that names `user_path`: NFC or NFD, `.md` kept or left out, each character percent-encoded
    or not (`/` too, as RFC 6570 template expansion does), hex digits in either case."""
    path = user_path
    if draw(st.booleans()):
        path = path[: -len(".md")]
    path = unicodedata.normalize(draw(st.sampled_from(["NFC", "NFD"])), path)
    out = []
    for char in path:
        # Reserved characters must stay encoded, or the URI would name another path (`#`, `?`, `%`).
        must = char in "#?%"
        if must or draw(st.booleans()):
            encoded = quote(char, safe="")
            if encoded == char:  # unreserved: encode its bytes by hand
                encoded = "".join(f"%{b:02X}" for b in char.encode())
            if draw(st.booleans()):
                encoded = encoded.lower()
            out.append(encoded)
        else:
            out.append(char)
    return "lens://" + "".join(out)


async def test_every_spelling_of_a_note_has_its_key_and_distinct_notes_never_collide(vault: Any) -> None:
    kb = await open_kb()
    context = ctx()
    keys = {}
    for name in NOTES:
        entry = document_of_uri(kb, context, document_uri(f"Public/{name}"))
        assert entry is not None, name
        keys[f"Public/{name}"] = entry.doc_id
    assert len(set(keys.values())) == len(NOTES)  # distinct notes, distinct keys

    @given(data=st.data())
    @hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(data: st.DataObject) -> None:
        user_path = data.draw(st.sampled_from(sorted(keys)))
        uri = data.draw(spelling(user_path))
        entry = document_of_uri(kb, context, uri)
        assert entry is not None, uri
        assert entry.doc_id == keys[user_path], uri
        # The canonical URI is the one resources/list gives, and is itself a spelling of the same note.
        assert document_uri(entry.user_path) == document_uri(user_path)

    check()


async def test_a_case_variant_never_names_another_note(vault: Any) -> None:
    # The path index matches letter case exactly (the folder rules forbid two names equal after
    # case-folding), so another case is a missing URI, never a different note.
    kb = await open_kb()
    for uri in ("lens://Public/index.md", "lens://public/Index.md", "lens://Public/INDEX"):
        assert document_of_uri(kb, ctx(), uri) is None


async def test_canonical_of_answers_the_listed_uri_and_the_id(vault: Any) -> None:
    found = await DOCUMENTS.canonical_of(ctx(), "lens://Public/Caf%65%CC%81%20cr%C3%A8me")
    assert found is not None
    assert found.uri == document_uri("Public/Café crème.md")
    assert await DOCUMENTS.canonical_of(ctx(), "lens://Public/Missing.md") is None


# ------------------------------------------------------------------------------------------ the service


def test_subscribing_again_under_another_uri_keeps_one_row_under_the_newest_uri() -> None:
    session = listening("s")
    subscription_add(session_id=session, uri="lens://A/Old.md", doc_id="doc-1")
    subscription_add(session_id=session, uri="lens://A/New.md", doc_id="doc-1")
    assert subscribed_uris(session_id=session) == ["lens://A/New.md"]


def test_rows_stored_before_canonical_subscriptions_merge_on_the_next_subscribe() -> None:
    session = listening("s")
    for uri in ("lens://A/Index", "lens://A/Inde%78.md", "lens://A/Index.md"):
        McpSubscription.objects.create(session_id=session, uri=uri, doc_id="doc-1")
    subscription_add(session_id=session, uri="lens://A/Index.md", doc_id="doc-1")
    assert subscribed_uris(session_id=session) == ["lens://A/Index.md"]


def test_the_limit_refuses_a_new_resource_but_not_one_already_held() -> None:
    session = listening("s")
    for n in range(3):
        subscription_add(session_id=session, uri=f"lens://A/{n}.md", doc_id=f"doc-{n}", limit=3)
    with pytest.raises(TooManySubscriptions) as refused:
        subscription_add(session_id=session, uri="lens://A/3.md", doc_id="doc-3", limit=3)
    assert "already has 3" in str(refused.value) and refused.value.limit == 3
    subscription_add(session_id=session, uri="lens://A/0.md", doc_id="doc-0", limit=3)  # held: fine
    with pytest.raises(TooManySubscriptions):
        subscription_add(session_id=session, uri="test://other", doc_id="", limit=3)
    assert McpSubscription.objects.filter(session_id=session).count() == 3


def test_the_limit_is_per_session_and_a_setting(settings: Any) -> None:
    settings.LENSRELAY_MCP_MAX_SUBSCRIPTIONS = 2
    one, two = listening("one"), listening("two")
    for session in (one, two):
        subscription_add(session_id=session, uri="lens://A/0.md", doc_id="doc-0")
        subscription_add(session_id=session, uri="lens://A/1.md", doc_id="doc-1")
        with pytest.raises(TooManySubscriptions):
            subscription_add(session_id=session, uri="lens://A/2.md", doc_id="doc-2")


def test_unsubscribing_by_the_document_removes_every_spelling() -> None:
    session = listening("s")
    for uri in ("lens://A/Index", "lens://A/Index.md"):
        McpSubscription.objects.create(session_id=session, uri=uri, doc_id="doc-1")
    subscription_add(session_id=session, uri="test://other", doc_id="")
    assert subscription_remove(session_id=session, uri="lens://A/In%64ex", doc_id="doc-1")
    assert subscribed_uris(session_id=session) == ["test://other"]
    assert subscription_remove(session_id=session, uri="test://other")
    assert not subscription_remove(session_id=session, uri="test://other")


def test_one_change_makes_one_event_per_session_even_with_old_duplicate_rows() -> None:
    session = listening("s")
    for uri in ("lens://A/Index", "lens://A/Inde%78.md", "lens://A/Index.md"):
        McpSubscription.objects.create(session_id=session, uri=uri, doc_id="doc-1")
    assert documents_changed_events(doc_ids={"doc-1", "doc-2"}) == 1
    assert McpEvent.objects.filter(session_id=session).count() == 1


async def test_a_note_moved_away_keeps_its_subscription_when_another_takes_its_old_uri(vault: Any) -> None:
    kb = await open_kb()
    index = document_of_uri(kb, ctx(), "lens://Public/Index.md")
    ideas = document_of_uri(kb, ctx(), "lens://Public/Notes/Ideas.md")
    assert index is not None and ideas is not None
    session = await sync_to_async(listening)("s")
    # Subscribed while Ideas was at Index.md's URI (it moved; Index.md arrived there since).
    old_uri = "lens://Public/Index.md"
    await McpSubscription.objects.acreate(session_id=session, uri=old_uri, doc_id=ideas.doc_id)
    await sync_to_async(subscription_add)(session_id=session, uri=old_uri, doc_id=index.doc_id)
    held = {row.doc_id: row.uri async for row in McpSubscription.objects.filter(session_id=session)}
    assert held == {index.doc_id: "lens://Public/Index.md", ideas.doc_id: "lens://Public/Notes/Ideas.md"}


def test_subscribers_are_active_listening_sessions_and_nobody_costs_one_statement_per_chunk() -> None:
    """The derive process asks on every pass (plain SQL: the ORM's join cost more to build than to answer,
    issue 36): an idle or ended session hears nothing, and a batch nobody subscribed to is one statement per
    CHUNK notes."""
    hostile = "doc'); DELETE FROM mcp_tools_mcpsubscription; --"
    live, idle, ended = listening("live"), listening("idle"), listening("ended")
    long_ago = timezone.now() - idle_timeout() - timedelta(seconds=5)
    McpSession.objects.filter(id=idle).update(last_seen_at=long_ago)
    McpSession.objects.filter(id=ended).update(ended_at=timezone.now())
    for session in (live, idle, ended):
        McpSubscription.objects.create(session_id=session, uri="lens://A/One.md", doc_id="doc-1")
    McpSubscription.objects.create(session_id=live, uri="lens://A/Odd.md", doc_id=hostile)
    found = subscribers_of(doc_ids={"doc-1", hostile, "doc-2"})
    assert sorted((s.session_id, s.uri, s.doc_id) for s in found) == [
        ("live", "lens://A/Odd.md", hostile),
        ("live", "lens://A/One.md", "doc-1"),
    ]
    with CaptureQueriesContext(connection) as queries:
        assert subscribers_of(doc_ids={f"none-{n}" for n in range(CHUNK + 10)}) == []
    assert len(queries.captured_queries) == 2
    assert McpSubscription.objects.count() == 4
