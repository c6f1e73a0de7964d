"""Comment threads on the review page: the note's threads and each suggestion's discussion shown (open ones
first, resolved and detached ones marked), user-written text escaped, forms only for who may use them, and
the page's posts (reply, discuss, resolve, reopen) landing in the thread's rows and the note's text; a post
without the CSRF token, or at a thread of another note, changes nothing."""

from __future__ import annotations

import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient
from pycrdt import Text

from lensrelay.docstore.derived import derived_debouncer
from lensrelay.docstore.offsets import text_replace
from lensrelay.docstore.texts import CONTENTS, text_cache
from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import path_index
from suggestions.lifecycle.commenting import (
    THREADS,
    Commenter,
    thread_reply,
    thread_resolve,
    thread_start,
    threads_index,
)
from suggestions.lifecycle.planning import EditSpec
from suggestions.lifecycle.proposing import Proposer, suggestion_propose_edits
from suggestions.markup.threads import thread_in, thread_marks
from suggestions.models import Suggestion, Thread, ThreadComment
from tests.suggestions.test_admin import CHANGELIST, ORIGINAL, client_for

pytestmark = pytest.mark.django_db(transaction=True)

CLAUDE = Commenter(author="claude")
SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'


def review_url(doc_id: str) -> str:
    return f"{CHANGELIST}document/{doc_id}/review/"


def post_url(doc_id: str) -> str:
    return f"{review_url(doc_id)}thread/"


async def entry_of(store: Any, doc_id: str) -> Any:
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(doc_id)
    assert entry is not None
    return entry


async def start(store: Any, doc: Any, passage: str, body: str, commenter: Commenter = CLAUDE) -> Thread:
    entry = await entry_of(store, doc.doc_id)
    return await thread_start(store=store, entry=entry, commenter=commenter, passage=passage, body=body)


async def suggest(store: Any, doc: Any, old: str, new: str, comment: str) -> Suggestion:
    outcome = await suggestion_propose_edits(
        store=store,
        entry=await entry_of(store, doc.doc_id),
        proposer=Proposer(author="claude"),
        specs=[EditSpec(old, new)],
        tool="edit",
        comment=comment,
    )
    assert outcome.suggestion is not None
    return outcome.suggestion


async def edit_note(store: Any, doc: Any, change: Any) -> str:
    """A person's edit: ``change(raw)`` gives ``(start, end, value)`` to put in place of ``raw[start:end]``;
    then the thread rows follow the text, as the derived view would have them."""
    room = await store.get(doc.doc_id)
    ytext = room.doc.get(CONTENTS, type=Text)
    with room.transact():
        current = str(ytext)
        start, end, value = change(current)
        text_replace(ytext, current=current, start=start, end=end, value=value)
    await room.flushed()
    # A pass of the derived view that read the text before this edit may write its rows after ours (a
    # passage re-attached until the next pass): wait for its passes, the one this edit scheduled included.
    await derived_debouncer(store, THREADS.name).settled()
    raw = str(ytext)
    await sync_to_async(threads_index)(entry=await entry_of(store, doc.doc_id), raw=raw)
    return raw


def without_thread(thread: Thread) -> Any:
    """Deletes the thread's passage with all its markup."""

    def change(raw: str) -> tuple[int, int, str]:
        found = thread_in(raw, thread.uid)
        assert found is not None and found.highlight is not None
        return found.highlight.start, found.end, ""

    return change


async def page_of(client: AsyncClient, doc_id: str) -> str:
    response = await client.get(review_url(doc_id))
    assert response.status_code == 200
    return response.content.decode()


def section(page: str, element_id: str) -> str:
    """The HTML of the element with ``element_id`` up to the next one of its kind (a rough cut, enough)."""
    start = page.index(f'id="{element_id}"')
    following = re.search(r'<section class="(card|comment-thread)', page[start:])
    return page[start : start + following.start()] if following else page[start:]


async def user_id(username: str) -> int:
    from django.contrib.auth.models import User

    return (await User.objects.aget(username=username)).pk


async def test_the_threads_and_a_suggestions_discussion_are_on_the_page(store: Any, fox: Any) -> None:
    rita = await client_for("rita", "view_suggestion", "view_document", "review_suggestion")
    resolved = await start(store, fox, "lazy dog", "Which dog?")
    await thread_resolve(store=store, thread=resolved, commenter=Commenter(author="rita"), resolved=True)
    gone = await start(store, fox, "more", "More what?")
    await edit_note(store, fox, without_thread(gone))
    assert (await Thread.objects.aget(pk=gone.pk)).detached
    open_one = await start(store, fox, "fox jumps", "Does it?")
    await thread_reply(store=store, thread=open_one, commenter=Commenter(author="ana"), body="It does.")
    quick = await suggest(store, fox, "quick brown", "slow red", comment="Calmer.")

    page = await page_of(rita, fox.doc_id)
    threads = page[page.index('id="comment-threads"') :]
    # Open ones first (attached before detached), the resolved one last.
    order = [threads.index(f'id="thread-{t.uid}"') for t in (open_one, gone, resolved)]
    assert order == sorted(order)
    assert "<h2>Comments <span" in threads and "(2 open)" in threads
    one = section(page, f"thread-{open_one.uid}")
    assert "fox jumps" in one and "Does it?" in one and "It does." in one and "claude" in one and "ana" in one
    assert "just now" in one and 'value="resolve"' in one and 'class="thread-reply"' in one
    assert "detached: its passage was deleted from the note" in section(page, f"thread-{gone.uid}")
    done = section(page, f"thread-{resolved.uid}")
    assert "resolved by rita" in done and 'value="reopen"' in done and 'value="resolve"' not in done
    # The suggestion's card: its reason, and a box to discuss it (no discussion yet).
    card = section(page, f"card-{quick.uid}")
    assert "Calmer." in card and "Discuss this suggestion" in card and "<h3>Discussion</h3>" not in card
    assert f'name="thread" value="{quick.uid}"' in card

    # Discussing it from the page: the discussion opens with the reason, the reply follows, in the note too.
    response = await rita.post(post_url(fox.doc_id), {"action": "reply", "thread": quick.uid, "text": "Why?"})
    assert (
        response.status_code == 302 and response["Location"] == f"{review_url(fox.doc_id)}#card-{quick.uid}"
    )
    discussion = await Thread.objects.aget(suggestion__uid=quick.uid)
    bodies = [c.body async for c in ThreadComment.objects.filter(thread=discussion)]
    assert bodies == ["Calmer.", "Why?"]
    raw = await text_cache(store).get(fox.doc_id)
    assert f'"id":"{quick.uid}","thread":"{quick.uid}"' in raw and "@@Why?<<}" in raw
    page = await page_of(rita, fox.doc_id)
    card = section(page, f"card-{quick.uid}")
    assert "<h3>Discussion</h3>" in card and "Why?" in card and "rita" in card
    assert '<span class="quiet">Comment:</span> Calmer.' in card  # the reason stays the card's comment
    # A suggestion's discussion is under its card, not in the Comments section; it is not resolved alone.
    assert f'id="thread-{quick.uid}"' not in page
    refused = await rita.post(post_url(fox.doc_id), {"action": "resolve", "thread": quick.uid})
    assert refused.status_code == 403

    # A reply to the detached thread changes its rows only (its comments left the text with the passage):
    # the open page's poll sees it all the same.
    state = f"{review_url(fox.doc_id)}state/"
    version = (await rita.get(state)).json()["version"]
    assert (await rita.get(state, {"since": version})).json().get("html") is None
    await rita.post(post_url(fox.doc_id), {"action": "reply", "thread": gone.uid, "text": "Gone now."})
    assert "Gone now." not in await text_cache(store).get(fox.doc_id)
    assert "Gone now." in (await rita.get(state, {"since": version})).json()["html"]


async def test_user_written_text_is_escaped_never_markup(store: Any, fox: Any) -> None:
    rita = await client_for("rita", "view_suggestion", "view_document", "review_suggestion")
    thread = await start(store, fox, "A <b>bold</b> line", SCRIPT)
    quick = await suggest(store, fox, "quick brown", "slow red", comment=IMG)
    for target in (thread.uid, quick.uid):
        for text in (SCRIPT, IMG):
            answer = await rita.post(
                post_url(fox.doc_id), {"action": "reply", "thread": target, "text": text}
            )
            assert answer.status_code == 302
    # A thread typed by hand into the text: its id, author and body are whatever the markup says.
    hostile = '\\"><img src=x>'
    typed = (
        f'X {{=={{"thread":"{hostile}"}}@@y==}}'
        f'{{>>{{"author":"<i>eve</i>","thread":"{hostile}","comment":"c-{hostile}"}}@@{IMG}<<}}\n'
    )
    await edit_note(store, fox, lambda raw: (len(raw), len(raw), typed))
    assert await Thread.objects.filter(uid='"><img src=x>').aexists()

    page = await page_of(rita, fox.doc_id)
    live = (await rita.get(f"{review_url(fox.doc_id)}state/")).json()["html"]
    for html in (page, live):
        assert "<script>alert" not in html and "<img src=x" not in html and "<i>eve" not in html
        assert "<b>bold" not in html.split('id="comment-threads"')[1]
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
        assert "A &lt;b&gt;bold&lt;/b&gt; line" in html and "&lt;i&gt;eve&lt;/i&gt;" in html
        assert 'id="thread-&quot;&gt;&lt;img src=x&gt;"' in html
    # Each hostile reply is in its thread once, as the text it is.
    bodies = [c.body async for c in ThreadComment.objects.filter(thread__uid=thread.uid)]
    assert bodies == [SCRIPT, SCRIPT, IMG]


async def test_a_reader_sees_the_threads_but_no_forms(store: Any, fox: Any) -> None:
    thread = await start(store, fox, "lazy dog", "Which dog?")
    quick = await suggest(store, fox, "quick brown", "slow red", comment="Calmer.")
    rita = await client_for("rita", "view_suggestion", "view_document", "review_suggestion")
    await rita.post(post_url(fox.doc_id), {"action": "reply", "thread": quick.uid, "text": "Why?"})
    reader = await client_for("rudi", "view_suggestion", "view_document")
    page = await page_of(reader, fox.doc_id)
    assert f'id="thread-{thread.uid}"' in page and "Which dog?" in page and "Why?" in page
    assert 'class="thread-reply"' not in page and 'class="thread-resolve"' not in page
    assert 'name="action"' not in page and "Discuss this suggestion" not in page
    before = await text_cache(store).get(fox.doc_id)
    for data in (
        {"action": "reply", "thread": thread.uid, "text": "x"},
        {"action": "reply", "thread": quick.uid, "text": "x"},
        {"action": "resolve", "thread": thread.uid},
    ):
        assert (await reader.post(post_url(fox.doc_id), data)).status_code == 403
    assert await ThreadComment.objects.acount() == 3  # Which dog?, Calmer., Why?
    assert (await Thread.objects.aget(pk=thread.pk)).status == "open"
    assert await text_cache(store).get(fox.doc_id) == before


async def test_who_sees_resolve(store: Any, fox: Any) -> None:
    ana = await client_for("ana", "view_suggestion", "view_document", "suggest")
    ben = await client_for("ben", "view_suggestion", "view_document", "suggest")
    rita = await client_for("rita", "view_suggestion", "view_document", "review_suggestion")
    hers = await start(
        store, fox, "lazy dog", "Which dog?", Commenter(author="ana", person_id=await user_id("ana"))
    )
    theirs = await start(store, fox, "fox jumps", "Does it?")
    reviewer_page = await page_of(rita, fox.doc_id)
    assert 'value="resolve"' in section(reviewer_page, f"thread-{hers.uid}")
    assert 'value="resolve"' in section(reviewer_page, f"thread-{theirs.uid}")
    # The starter resolves their own thread only; another suggester replies but resolves none.
    ana_page = await page_of(ana, fox.doc_id)
    assert 'value="resolve"' in section(ana_page, f"thread-{hers.uid}")
    assert 'value="resolve"' not in section(ana_page, f"thread-{theirs.uid}")
    ben_page = await page_of(ben, fox.doc_id)
    assert 'value="resolve"' not in ben_page and ben_page.count('class="thread-reply"') == 2
    assert (
        await ben.post(post_url(fox.doc_id), {"action": "resolve", "thread": hers.uid})
    ).status_code == 403
    answer = await ana.post(post_url(fox.doc_id), {"action": "resolve", "thread": hers.uid})
    assert answer.status_code == 302 and answer["Location"] == f"{review_url(fox.doc_id)}#thread-{hers.uid}"
    assert (await Thread.objects.aget(pk=hers.pk)).status == "resolved"
    assert (await Thread.objects.aget(pk=theirs.pk)).status == "open"


async def test_a_reply_from_the_page_lands_in_the_thread(store: Any, fox: Any) -> None:
    rita = await client_for("rita", "view_suggestion", "view_document", "review_suggestion")
    thread = await start(store, fox, "lazy dog", "Which dog?")
    response = await rita.post(
        post_url(fox.doc_id), {"action": "reply", "thread": thread.uid, "text": "The brown one."}
    )
    assert (
        response.status_code == 302
        and response["Location"] == f"{review_url(fox.doc_id)}#thread-{thread.uid}"
    )
    comments = [(c.author, c.body, c.person_id) async for c in ThreadComment.objects.filter(thread=thread)]
    assert comments == [("claude", "Which dog?", None), ("rita", "The brown one.", await user_id("rita"))]
    raw = await text_cache(store).get(fox.doc_id)
    marks = thread_in(raw, thread.uid)
    assert marks is not None and [m.content for m in marks.comments] == ["Which dog?", "The brown one."]
    page = (await rita.get(response["Location"])).content.decode()
    assert "Your reply was added." in page and "The brown one." in section(page, f"thread-{thread.uid}")

    # Resolve and reopen go to the row and the first comment's metadata.
    await rita.post(post_url(fox.doc_id), {"action": "resolve", "thread": thread.uid})
    assert thread_marks(await text_cache(store).get(fox.doc_id))[0].resolved
    assert (await Thread.objects.aget(pk=thread.pk)).resolved_by == "rita"
    await rita.post(post_url(fox.doc_id), {"action": "reopen", "thread": thread.uid})
    assert not thread_marks(await text_cache(store).get(fox.doc_id))[0].resolved

    # Refused (by the page or the thread services): nothing changes, the page says why.
    quick = await suggest(store, fox, "quick brown", "slow red", comment="Calmer.")
    before = await text_cache(store).get(fox.doc_id)
    for target, text, reason in (
        (thread.uid, "   ", "needs some text"),
        (thread.uid, "a <<} b", "delimiter"),
        (thread.uid, "x" * 10_001, "at most"),
        (quick.uid, " ", "needs some text"),
        (quick.uid, "a {++b++}", "delimiter"),
    ):
        answer = await rita.post(post_url(fox.doc_id), {"action": "reply", "thread": target, "text": text})
        assert answer.status_code == 302
        assert "Nothing was changed: " in (page := (await rita.get(answer["Location"])).content.decode())
        assert reason in page
    assert not await Thread.objects.filter(uid=quick.uid).aexists()  # no discussion made by a refusal
    assert await ThreadComment.objects.exclude(thread__suggestion__uid=quick.uid).acount() == 2
    assert await text_cache(store).get(fox.doc_id) == before


async def test_a_post_without_the_csrf_token_is_refused(store: Any, fox: Any) -> None:
    thread = await start(store, fox, "lazy dog", "Which dog?")
    rita = await client_for("rita", "view_suggestion", "view_document", "review_suggestion", csrf=True)
    before = await text_cache(store).get(fox.doc_id)
    for data in (
        {"action": "reply", "thread": thread.uid, "text": "x"},
        {"action": "resolve", "thread": thread.uid},
    ):
        assert (await rita.post(post_url(fox.doc_id), data)).status_code == 403
    assert await ThreadComment.objects.acount() == 1
    assert (await Thread.objects.aget(pk=thread.pk)).status == "open"
    assert await text_cache(store).get(fox.doc_id) == before
    # The page's own forms carry the token.
    assert "csrfmiddlewaretoken" in section(await page_of(rita, fox.doc_id), f"thread-{thread.uid}")
    assert (await rita.get(post_url(fox.doc_id))).status_code == 405


async def test_a_thread_of_another_note_is_not_reached_through_this_notes_page(
    store: Any, fox: Any, make_folder: Any
) -> None:
    folder = await sync_to_async(make_folder)("Other")
    other = await document_create(store=store, folder=folder, path="/Other.md", text="Some other words.\n")
    elsewhere = await start(store, other, "other", "Hm?")
    rita = await client_for("rita", "view_suggestion", "view_document", "review_suggestion")
    assert elsewhere.uid not in await page_of(rita, fox.doc_id)
    for data in (
        {"action": "resolve", "thread": elsewhere.uid},
        {"action": "reply", "thread": elsewhere.uid, "text": "x"},
    ):
        assert (await rita.post(post_url(fox.doc_id), data)).status_code == 404
    assert (await Thread.objects.aget(pk=elsewhere.pk)).status == "open"
    assert await ThreadComment.objects.acount() == 1
    assert await text_cache(store).get(fox.doc_id) == ORIGINAL
    # Nor a pending suggestion of another note, discussed through this one's page.
    theirs = await suggest(store, other, "Some", "All", comment="Better.")
    answer = await rita.post(post_url(fox.doc_id), {"action": "reply", "thread": theirs.uid, "text": "x"})
    assert answer.status_code == 404 and not await Thread.objects.filter(uid=theirs.uid).aexists()
