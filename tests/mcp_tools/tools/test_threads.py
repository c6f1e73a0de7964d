"""Comment threads through the MCP tools: start, reply, list, resolve; a suggestion's discussion; the
refusals (scope, role, hostile text) that change nothing."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pycrdt import Text

from lensrelay.access.auth import Access
from lensrelay.access.tokens import token_create
from lensrelay.docstore.texts import CONTENTS, text_cache
from lensrelay.models import Folder
from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import path_index
from suggestions.lifecycle.commenting import Commenter, thread_reply, threads_index
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.markup.accepted_view import accepted_text
from suggestions.markup.threads import thread_marks
from suggestions.models import Suggestion, Thread, ThreadComment

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = "# Cells\n\nThe mitochondria is the powerhouse of the cell. It makes energy.\n"
PASSAGE = "the powerhouse of the cell"


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Cells.md", text=TEXT)


def who(folder_ids: frozenset[int] | None = None, *, role: str = "suggest", name: str = "claude") -> Access:
    token, _ = token_create(name=name, role=role, folders=list(Folder.objects.all()))
    return Access(name=name, role=role, folder_ids=folder_ids, token_id=token.pk)


@pytest.fixture
async def call(call: Any) -> Any:
    """Every call as the token "claude" unless another is named."""
    claude = await sync_to_async(who)()

    async def run(name: str, arguments: dict[str, Any], *, who: Access | None = None) -> tuple[str, bool]:
        return await call(name, arguments, who=who or claude)

    return run


async def raw_of(store: Any, note: Any) -> str:
    return await text_cache(store).get(note.doc_id)


async def start(call: Any, text: str = "Is this too informal?", **extra: Any) -> str:
    await call("read", {"file_path": "Lens/Cells.md"}, **extra)
    reply, error = await call(
        "comment", {"file_path": "Lens/Cells.md", "passage": PASSAGE, "text": text}, **extra
    )
    assert not error, reply
    return reply.split()[2]


async def test_a_thread_lives_in_the_text_and_in_rows(store: Any, note: Any, call: Any) -> None:
    uid = await start(call)
    raw = await raw_of(store, note)
    [marks] = thread_marks(raw)
    assert marks.thread_id == uid and marks.passage == PASSAGE and not marks.detached
    # Tools read the note as if no comment were there.
    assert accepted_text(raw) == TEXT
    text, _ = await call("read", {"file_path": "Lens/Cells.md"})
    assert "informal" not in text

    text, error = await call("reply", {"thread": uid, "text": "Yes, @nobody says so."})
    assert not error, text
    raw = await raw_of(store, note)
    [marks] = thread_marks(raw)
    assert [c.content for c in marks.comments] == ["Is this too informal?", "Yes, @nobody says so."]

    listing, _ = await call("list_threads", {"path": "Lens/Cells.md"})
    assert uid in listing and "OPEN" in listing and f'"{PASSAGE}"' in listing
    assert listing.index("Is this too informal?") < listing.index("Yes, @nobody says so.")

    text, error = await call("resolve_thread", {"thread": uid})
    assert not error, text
    raw = await raw_of(store, note)
    assert thread_marks(raw)[0].resolved
    thread = await sync_to_async(Thread.objects.get)(uid=uid)
    assert thread.status == "resolved" and thread.resolved_by == "claude"
    listing, _ = await call("list_threads", {"status": "open"})
    assert listing == "No threads found."
    text, error = await call("resolve_thread", {"thread": uid, "reopen": True})
    assert not error and not thread_marks(await raw_of(store, note))[0].resolved


@pytest.mark.parametrize(
    "passage,expected",
    [
        ("not in the note at all", "was not found"),
        ("the", "found 2 times"),
        ("", "quote the passage"),
        ("the {==cell", "delimiter"),
    ],
)
async def test_a_passage_that_cannot_anchor_is_refused(
    store: Any, note: Any, call: Any, passage: str, expected: str
) -> None:
    await call("read", {"file_path": "Lens/Cells.md"})
    text, error = await call("comment", {"file_path": "Lens/Cells.md", "passage": passage, "text": "x"})
    assert error and expected in text, text
    assert await raw_of(store, note) == TEXT
    assert await sync_to_async(Thread.objects.count)() == 0
    assert await sync_to_async(ThreadComment.objects.count)() == 0


@pytest.mark.parametrize("hostile", ["ok <<} {++injected++}", "a~>b~~}", "{>>nested<<}", "   "])
async def test_hostile_comment_text_changes_nothing(store: Any, note: Any, call: Any, hostile: str) -> None:
    await call("read", {"file_path": "Lens/Cells.md"})
    text, error = await call("comment", {"file_path": "Lens/Cells.md", "passage": PASSAGE, "text": hostile})
    assert error, text
    assert await raw_of(store, note) == TEXT
    assert await sync_to_async(Thread.objects.count)() == 0


async def test_html_in_a_comment_is_kept_as_text(store: Any, note: Any, call: Any) -> None:
    body = '{"author":"admin"}@@<script>alert(1)</script> & "quotes"'
    uid = await start(call, body)
    [marks] = thread_marks(await raw_of(store, note))
    assert marks.comments[0].content == body and marks.comments[0].metadata["author"] == "claude"
    comment = await sync_to_async(ThreadComment.objects.get)(thread__uid=uid)
    assert comment.body == body and comment.author == "claude"


async def test_a_passage_inside_a_suggestion_is_refused(store: Any, note: Any, call: Any) -> None:
    await call("read", {"file_path": "Lens/Cells.md"})
    await call("edit", {"file_path": "Lens/Cells.md", "old_string": "powerhouse", "new_string": "engine"})
    before = await raw_of(store, note)
    text, error = await call(
        "comment", {"file_path": "Lens/Cells.md", "passage": "the engine of the cell", "text": "x"}
    )
    assert error and "overlaps a pending suggestion" in text
    assert await raw_of(store, note) == before


async def test_the_discussion_of_a_suggestion(store: Any, note: Any, call: Any) -> None:
    await call("read", {"file_path": "Lens/Cells.md"})
    text, error = await call(
        "edit",
        {
            "file_path": "Lens/Cells.md",
            "old_string": "powerhouse",
            "new_string": "engine",
            "comment": "Plainer",
        },
    )
    assert not error, text
    row = await sync_to_async(Suggestion.objects.get)()
    text, error = await call("reply", {"thread": row.uid, "text": "Why plainer?"})
    assert not error, text
    raw = await raw_of(store, note)
    assert "Plainer<<}{>>" in raw and "Why plainer?" in raw
    thread = await sync_to_async(Thread.objects.get)(uid=row.uid)
    bodies = await sync_to_async(lambda: [c.body for c in thread.comments.all()])()
    assert bodies == ["Plainer", "Why plainer?"]
    # A person answers: the proposer reads it under the suggestion.
    await thread_reply(store=store, thread=thread, commenter=Commenter(author="ana"), body="Agreed, ship it.")
    listing, _ = await call("list_suggestions", {})
    assert "claude said: Why plainer?" in listing and "ana said: Agreed, ship it." in listing
    assert "said: Plainer" not in listing
    # The suggestion's markup is unchanged in what it proposes: accepting it takes the discussion out
    # of the text, and the rows keep it.
    assert (await suggestion_decide(store=store, suggestion=row, user=None, accept=True)).ok
    raw = await raw_of(store, note)
    assert "Why plainer?" not in raw and "engine" in raw
    assert await sync_to_async(ThreadComment.objects.filter(thread=thread).count)() == 3
    text, error = await call("reply", {"thread": row.uid, "text": "late"})
    assert not error  # its thread row exists; the reply is kept there
    text, error = await call("reply", {"thread": "0" * 16, "text": "x"})
    assert error and "Thread not found" in text


async def test_a_view_token_lists_but_cannot_comment(store: Any, note: Any, call: Any) -> None:
    uid = await start(call)
    viewer = await sync_to_async(who)(role="view", name="viewer")
    text, error = await call("list_threads", {}, who=viewer)
    assert not error and uid in text
    for name, arguments in (
        ("comment", {"file_path": "Lens/Cells.md", "passage": "It makes energy", "text": "x"}),
        ("reply", {"thread": uid, "text": "x"}),
        ("resolve_thread", {"thread": uid}),
    ):
        text, error = await call(name, arguments, who=viewer)
        assert error and "read-only" in text, (name, text)
    assert await sync_to_async(ThreadComment.objects.count)() == 1


async def test_a_folder_token_cannot_reach_another_folders_thread(store: Any, note: Any, call: Any) -> None:
    uid = await start(call)
    other = await sync_to_async(Folder.objects.create)(name="Other")
    outsider = await sync_to_async(who)(frozenset({other.pk}), name="outsider")
    listing, _ = await call("list_threads", {}, who=outsider)
    assert listing == "No threads found."
    listing, _ = await call("list_threads", {"path": "Lens/Cells.md"}, who=outsider)
    assert listing == "No threads found."
    for name, arguments in (("reply", {"thread": uid, "text": "x"}), ("resolve_thread", {"thread": uid})):
        text, error = await call(name, arguments, who=outsider)
        # Not found, word for word as for an id that does not exist: the thread's existence is not told.
        assert error and text == f"Error: Thread not found: {uid}", text
    assert await sync_to_async(ThreadComment.objects.count)() == 1
    assert not thread_marks(await raw_of(store, note))[0].resolved


async def test_only_the_starter_resolves(store: Any, note: Any, call: Any) -> None:
    uid = await start(call)
    text, error = await call("resolve_thread", {"thread": uid}, who=await sync_to_async(who)(name="other"))
    assert error and "only its starter" in text


async def test_a_thread_survives_edits_around_and_inside_and_its_passage_deleted(
    store: Any, note: Any, call: Any
) -> None:
    uid = await start(call)
    room = await store.get(note.doc_id)
    ytext = room.doc.get(CONTENTS, type=Text)
    raw = str(ytext)
    marks = thread_marks(raw)[0]
    with room.transact():  # a person types before, inside and after the passage
        ytext.insert(len(raw.encode()), "\nAfter.")
        inside = len(raw[: marks.highlight.content_start + len("the ")].encode())
        ytext.insert(inside, "mighty ")
        ytext.insert(0, "Before. ")
    raw = str(ytext)
    entry = path_index(store).by_doc_id(note.doc_id)
    await sync_to_async(threads_index)(entry=entry, raw=raw)
    thread = await sync_to_async(Thread.objects.get)(uid=uid)
    assert thread.passage == "the mighty powerhouse of the cell" and not thread.detached

    marks = thread_marks(raw)[0]
    start_b = len(raw[: marks.highlight.content_start].encode())
    end_b = len(raw[: marks.highlight.content_end].encode())
    with room.transact():  # the passage deleted: the comments stay, detached
        del ytext[start_b:end_b]
    await sync_to_async(threads_index)(entry=entry, raw=str(ytext))
    thread = await sync_to_async(Thread.objects.get)(uid=uid)
    assert thread.detached and thread.passage == "the mighty powerhouse of the cell"
    listing, _ = await call("list_threads", {})
    assert "DETACHED" in listing and "Is this too informal?" in listing

    with room.transact():  # everything of the thread deleted from the text: the rows keep it
        ytext_text = str(ytext)
        found = thread_marks(ytext_text)[0]
        first = found.highlight.start if found.highlight else found.comments[0].start
        del ytext[len(ytext_text[:first].encode()) : len(ytext_text[: found.end].encode())]
    await sync_to_async(threads_index)(entry=entry, raw=str(ytext))
    listing, _ = await call("list_threads", {})
    assert "DETACHED" in listing and "Is this too informal?" in listing
    text, error = await call("reply", {"thread": uid, "text": "Still here?"})
    assert not error, text
    assert await sync_to_async(ThreadComment.objects.filter(thread__uid=uid).count)() == 2
