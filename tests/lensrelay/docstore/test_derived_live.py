"""With a derive process (LENSRELAY_DERIVED_WORK=process) the live path does only live work: y-websocket
updates through the real sync consumer are received, logged, broadcast and compacted, and no derived view
(backlinks, search rows, vectors, versions, backlinks after folder changes, MCP resource notifications,
the suggestion follower) nor any version keeping runs in the server process; the follower runs them all
afterwards, telling a subscribed session of the burst once. Inline, the same instruments count work in the
server process, which is what shows they would catch it."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pycrdt import Doc, Text

from lensrelay.docstore import derived
from lensrelay.docstore.derived import DerivedFeedView, DerivedView, FeedStep, derive_pending
from lensrelay.docstore.later import Debounced
from lensrelay.history import recording
from lensrelay.history.models import DocVersion
from lensrelay.protocol import wire
from lensrelay.search.maintain import SearchMaintainer
from lensrelay.semantic.maintain import SemanticMaintainer
from lensrelay.vault import backlinks
from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import path_index
from lensrelay.vault.trash import documents_trash
from mcp_tools.models import McpEvent, McpSubscription
from mcp_tools.notifications import produce
from suggestions.lifecycle import follow
from suggestions.lifecycle.proposing import EditSpec, Proposer, suggestion_propose_edits
from tests.lensrelay.sync.test_consumer import connect, decode, edit
from tests.mcp_tools.notifications.test_produce import listening

pytestmark = pytest.mark.django_db(transaction=True)

UPDATES = 30


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts every run of derived work in this process, by name."""
    runs: Counter[str] = Counter()

    def views(handle: Callable[..., Awaitable[None]], name: str) -> Callable[..., Awaitable[None]]:
        async def counting(store: Any, doc_ids: frozenset[str]) -> None:
            runs[f"view {name}"] += 1
            await handle(store, doc_ids)

        return counting

    monkeypatch.setattr(
        derived, "_views", [DerivedView(view.name, views(view.handle, view.name)) for view in derived._views]
    )

    def feed_views(factory: Callable[[Any], Any], name: str) -> Callable[[Any], Any]:
        def make(store: Any) -> Any:
            made = factory(store)
            step = made.step

            async def counting(feed: FeedStep) -> None:
                if feed.rows or feed.compacted:
                    runs[f"feed view {name}"] += 1
                await step(feed)

            made.step = counting
            return made

        return make

    monkeypatch.setattr(
        derived,
        "_feed_views",
        [DerivedFeedView(view.name, feed_views(view.factory, view.name)) for view in derived._feed_views],
    )

    def sync(module: Any, name: str, label: str) -> None:
        original = getattr(module, name)

        def counting(*args: Any, **kwargs: Any) -> Any:
            runs[label] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, counting)

    def coroutine(module: Any, name: str, label: str) -> None:
        original = getattr(module, name)

        async def counting(*args: Any, **kwargs: Any) -> Any:
            runs[label] += 1
            return await original(*args, **kwargs)

        monkeypatch.setattr(module, name, counting)

    for name in ("versions_record", "version_record_burst_baselines", "versions_record_stored"):
        sync(recording, name, name)
    coroutine(backlinks, "reindex", "backlinks")
    coroutine(SearchMaintainer, "reindex", "search rows")
    sync(SemanticMaintainer, "schedule", "vectors scheduled")
    coroutine(produce, "notify_changed", "notifications")
    coroutine(follow, "look", "suggestion follower")
    # Inline, every view's changes are gathered by its debouncer (lensrelay.docstore.derived): count them.
    labels = {
        "derived view search": "search scheduled",
        "derived view mcp resource notifications": "notifications scheduled",
        "derived view suggestion follower": "suggestion follower scheduled",
    }
    add = Debounced.add

    def scheduled(debouncer: Debounced, *doc_ids: str) -> None:
        runs[labels.get(debouncer.name, f"{debouncer.name} scheduled")] += 1
        add(debouncer, *doc_ids)

    monkeypatch.setattr(Debounced, "add", scheduled)
    sync(produce, "documents_changed_events", "notification events")
    return runs


def subscribed(session_id: str, doc_id: str) -> None:
    listening(session_id)
    McpSubscription.objects.create(session_id=session_id, uri="lens://Lens/Note.md", doc_id=doc_id)


def told(session_id: str) -> list[str]:
    """The session's `resources/updated` events (a trash also lists changed)."""
    messages = McpEvent.objects.filter(session_id=session_id).values_list("message", flat=True)
    return [m["params"]["uri"] for m in messages if m["method"] == "notifications/resources/updated"]


async def synced(comm: Any) -> Doc[Any]:
    """`handshake`, passing over the awareness states (the assistant's) the server sends on connecting."""
    kind, step, _ = decode(await comm.receive_from(timeout=5))
    assert (kind, step) == (wire.MESSAGE_SYNC, wire.SYNC_STEP1)
    client: Doc[Any] = Doc()
    client.get("contents", type=Text)
    await comm.send_to(bytes_data=wire.sync_step1(client.get_state()))
    while True:
        kind, step, update = decode(await comm.receive_from(timeout=5))
        if kind != wire.MESSAGE_AWARENESS:
            break
    assert (kind, step) == (wire.MESSAGE_SYNC, wire.SYNC_STEP2)
    client.apply_update(update)
    return client


async def burst(store: Any, doc_id: str, token: str) -> None:
    """UPDATES updates from one y-websocket client, each delivered to another before the next."""
    writer, reader = await connect(doc_id, token), await connect(doc_id, token)
    client = await synced(writer)
    await synced(reader)
    for n in range(UPDATES):
        text = str(client.get("contents", type=Text))
        await writer.send_to(bytes_data=wire.sync_update(edit(client, len(text), f" live{n} [[Target]]")))
        kind, step, _ = decode(await reader.receive_from(timeout=5))
        while kind == wire.MESSAGE_AWARENESS:  # the assistant's, sent on connecting
            kind, step, _ = decode(await reader.receive_from(timeout=5))
        assert (kind, step) == (wire.MESSAGE_SYNC, wire.SYNC_UPDATE)
    await writer.disconnect()
    await reader.disconnect()
    room = await store.get(doc_id)
    await room.flushed()


@pytest.mark.parametrize("mode", ["process", "inline"])
async def test_the_live_path_runs_no_derived_work_with_a_derive_process(
    store: Any,
    make_folder: Any,
    make_token: Any,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    counted: Counter[str],
    mode: str,
) -> None:
    settings.LENSRELAY_DERIVED_WORK = mode
    settings.LENSRELAY_VERSIONS_QUIET_SECONDS = 0.2
    store.compact_after = 5  # the server compacts several times during the burst
    monkeypatch.setattr(backlinks, "DEBOUNCE_SECONDS", 0.05)
    folder = await sync_to_async(make_folder)("Lens")
    target = await document_create(store=store, folder=folder, path="/Target.md", text="target\n")
    note = await document_create(store=store, folder=folder, path="/Note.md", text="note\n")
    token = await sync_to_async(make_token)("edit")
    await sync_to_async(subscribed)("watcher", note.doc_id)
    # A pending suggestion in the note: the follower has markup to look at after each edit.
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(note.doc_id)
    assert entry is not None
    proposal = [EditSpec("note", "memo")]
    proposer = Proposer(author="claude")
    await suggestion_propose_edits(store=store, entry=entry, proposer=proposer, specs=proposal, tool="edit")
    await asyncio.sleep(0.5)  # whatever creating them set off has run
    counted.clear()

    await burst(store, note.doc_id, token)
    # Longer than every inline debounce and the quiet time: what the server would do, it has done.
    await asyncio.sleep(1.5)
    live = +counted
    if mode == "inline":
        # The instruments see work in the server process when there is some.
        assert live["backlinks"] and live["versions_record_stored"] and live["search scheduled"], live
        assert live["notifications scheduled"] and live["notification events"], live
        assert live["suggestion follower scheduled"] and live["suggestion follower"], live
        # Once per debounce window of the burst, not once per update.
        assert 1 <= len(await sync_to_async(told)("watcher")) < UPDATES / 3
        return
    assert live == Counter(), f"derived work ran on the live path: {dict(live)}"
    assert not await DocVersion.objects.filter(doc_id=note.doc_id).aexists()
    assert await sync_to_async(told)("watcher") == []

    # A trash through the services: its link rewriting is no derived work, its backlinks are.
    await documents_trash(store=store, doc_ids=[target.doc_id], force=True)
    await asyncio.sleep(0.3)
    # (The folder's mirroring compares its search rows with the document rows: once per folder change,
    # not per update, and no backlinks.)
    after_trash = {name: n for name, n in counted.items() if n and name != "search rows"}
    assert after_trash == {}, f"derived work ran after a trash: {after_trash}"

    # The follower does it all.
    await derive_pending(store)
    done = +counted
    for name in (
        "view backlinks",
        "view search",
        "view mcp resource notifications",
        "notification events",
        "feed view versions",
        "feed view backlinks after folder changes",
        "feed view suggestion follower",
        "suggestion follower",
        "versions_record",
    ):
        assert done[name], (name, dict(done))
    assert await DocVersion.objects.filter(doc_id=note.doc_id).aexists()
    # The burst of updates is one notification, from the pass.
    assert await sync_to_async(told)("watcher") == ["lens://Lens/Note.md"]
