"""People in comment threads through the admin's JSON endpoints (the editor and the review page call them):
start, reply, resolve and reopen; who may do which; hostile input refused with nothing changed; a CSRF-less
POST refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from lensrelay.docstore.texts import text_cache
from suggestions.markup.threads import thread_marks
from suggestions.models import Thread, ThreadComment
from tests.suggestions.test_admin import CHANGELIST, ORIGINAL, client_for

pytestmark = pytest.mark.django_db(transaction=True)


def urls(doc_id: str) -> tuple[str, str]:
    base = f"{CHANGELIST}document/{doc_id}/threads/"
    return base, f"{base}act/"


async def act(client: AsyncClient, doc_id: str, **data: Any) -> Any:
    return await client.post(urls(doc_id)[1], data)


async def test_a_person_starts_replies_resolves_and_reopens(store: Any, fox: Any) -> None:
    rita = await client_for("rita", "view_document", "review_suggestion")
    ana = await client_for("ana", "view_document", "suggest")
    # "the" is in the note twice: the selection's place picks one.
    near = ORIGINAL.index("the lazy")
    answer = await act(
        ana, fox.doc_id, action="start", passage="the", text="Which one? @rita", near=str(near)
    )
    assert answer.status_code == 200, answer.content
    thread = answer.json()["thread"]
    assert thread["passage"] == "the" and thread["comments"][0]["mine"] and thread["canResolve"]
    raw = await text_cache(store).get(fox.doc_id)
    [marks] = thread_marks(raw)
    assert raw.index("{==") > ORIGINAL.index("over") and marks.comments[0].metadata["user"] > 0

    answer = await act(rita, fox.doc_id, action="reply", thread=thread["id"], text="The dog's.")
    assert answer.status_code == 200
    comments = answer.json()["thread"]["comments"]
    assert [c["author"] for c in comments] == ["ana", "rita"]
    assert [c["mine"] for c in comments] == [False, True]
    mention = await sync_to_async(ThreadComment.objects.get)(body="Which one? @rita")
    assert mention.mentions == ["rita"] and mention.person_id is not None

    listing = (await rita.get(urls(fox.doc_id)[0])).json()
    assert [t["id"] for t in listing["threads"]] == [thread["id"]] and listing["canComment"]

    assert (await act(rita, fox.doc_id, action="resolve", thread=thread["id"])).json()["thread"][
        "status"
    ] == ("resolved")
    assert thread_marks(await text_cache(store).get(fox.doc_id))[0].resolved
    assert (await act(ana, fox.doc_id, action="reopen", thread=thread["id"])).json()["thread"][
        "status"
    ] == "open"


async def test_who_may_do_what(store: Any, fox: Any) -> None:
    ana = await client_for("ana", "view_document", "suggest")
    started = (await act(ana, fox.doc_id, action="start", passage="quick brown", text="Hm")).json()["thread"]
    reader = await client_for("rudi", "view_document")
    listing = (await reader.get(urls(fox.doc_id)[0])).json()
    assert listing["threads"][0]["id"] == started["id"] and not listing["canComment"]
    assert not listing["threads"][0]["canResolve"]
    # A reader may read but not comment, reply or resolve.
    assert (await act(reader, fox.doc_id, action="start", passage="lazy", text="x")).status_code == 403
    assert (await act(reader, fox.doc_id, action="reply", thread=started["id"], text="x")).status_code == 403
    assert (await act(reader, fox.doc_id, action="resolve", thread=started["id"])).status_code == 403
    # Another suggester may reply but not resolve someone else's thread.
    ben = await client_for("ben", "view_document", "suggest")
    assert (await act(ben, fox.doc_id, action="reply", thread=started["id"], text="Yes")).status_code == 200
    assert (await act(ben, fox.doc_id, action="resolve", thread=started["id"])).status_code == 403
    # Staff who may not read documents, and strangers, get nothing.
    blind = await client_for("bea", "view_suggestion")
    assert (await blind.get(urls(fox.doc_id)[0])).status_code == 403
    stranger = await AsyncClient().get(urls(fox.doc_id)[0])
    assert stranger.status_code == 302
    assert await sync_to_async(ThreadComment.objects.count)() == 2
    assert (await sync_to_async(Thread.objects.get)()).status == "open"


@pytest.mark.parametrize(
    "data,status,reason",
    [
        ({"action": "explode"}, 400, "action must be"),
        ({"action": "start", "passage": "quick", "text": "a <<} {++b++}"}, 409, "delimiter"),
        ({"action": "start", "passage": "nowhere at all", "text": "x"}, 409, "not found"),
        ({"action": "start", "passage": "quick", "text": "x" * 10_001}, 400, "at most"),
        ({"action": "start", "passage": "q" * 2_001, "text": "x"}, 400, "at most"),
        ({"action": "start", "passage": "quick", "text": "   "}, 409, "needs some text"),
        ({"action": "reply", "thread": "../../etc", "text": "x"}, 404, ""),
        ({"action": "resolve", "thread": "0123456789abcdef"}, 404, ""),
    ],
)
async def test_hostile_input_changes_nothing(
    store: Any, fox: Any, data: dict[str, str], status: int, reason: str
) -> None:
    ana = await client_for("ana", "view_document", "suggest", "review_suggestion")
    answer = await act(ana, fox.doc_id, **data)
    assert answer.status_code == status, answer.content
    if reason:
        assert reason in json.loads(answer.content)["reason"]
    assert await text_cache(store).get(fox.doc_id) == ORIGINAL
    assert await sync_to_async(Thread.objects.count)() == 0


async def test_a_thread_of_another_note_is_not_reached_through_this_one(
    store: Any, fox: Any, make_folder: Any
) -> None:
    from lensrelay.vault.documents import document_create

    folder = await sync_to_async(make_folder)("Other")
    other = await document_create(store=store, folder=folder, path="/Other.md", text="Some other words.\n")
    ana = await client_for("ana", "view_document", "suggest", "review_suggestion")
    started = (await act(ana, other.doc_id, action="start", passage="other", text="x")).json()["thread"]
    answer = await act(ana, fox.doc_id, action="resolve", thread=started["id"])
    assert answer.status_code == 404
    assert (await ana.get(urls(fox.doc_id)[0])).json()["threads"] == []


async def test_a_post_without_the_csrf_token_is_refused(store: Any, fox: Any) -> None:
    ana = await client_for("ana", "view_document", "suggest", csrf=True)
    answer = await act(ana, fox.doc_id, action="start", passage="quick", text="x")
    assert answer.status_code == 403
    assert await sync_to_async(Thread.objects.count)() == 0
    assert (await ana.get(urls(fox.doc_id)[0])).status_code == 200
