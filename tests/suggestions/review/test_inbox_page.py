"""The review inbox and its count in the admin header: reviewers see what waits, by note, the note changed
last first, each suggestion linked to the editor at its place; others see neither, and the page says why."""

from __future__ import annotations

import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from lensrelay.vault.documents import document_create
from tests.suggestions.test_admin import CHANGELIST, client_for, propose

pytestmark = pytest.mark.django_db(transaction=True)

INBOX = f"{CHANGELIST}inbox/"


async def test_the_inbox_lists_each_note_newest_first_with_links_to_the_editor(
    store: Any, fox: Any, make_folder: Any, reviewer: AsyncClient
) -> None:
    other = await document_create(
        store=store,
        folder=await sync_to_async(make_folder)("Other"),
        path="/<b>Bold</b>.md",
        text="Alpha beta gamma.\n",
    )
    older = await propose(store, fox, ("quick brown", "slow red"))
    hostile = await propose(store, other, ("beta", "<script>window.__xss = 1</script>"))
    newer = await propose(store, fox, ("lazy dog", "sleepy cat"))
    page = (await reviewer.get(INBOX)).content.decode()
    order = re.findall(r'<li id="inbox-(\w+)"', page)
    assert order == [newer.uid, older.uid, hostile.uid]  # the note changed last first, its newest first
    editor = f"{CHANGELIST}document/{fox.doc_id}/edit/#suggestion-{newer.uid}"
    assert f'href="{editor}"' in page
    assert "&lt;b&gt;Bold&lt;/b&gt;" in page and "<script>window.__xss" not in page
    # every admin page's header counts them for a reviewer
    index = (await reviewer.get("/admin/")).content.decode()
    assert f'<a href="{INBOX}" id="inbox-link">Inbox <span class="inbox-count">(3)</span></a>' in index


async def test_without_the_review_permission_there_is_no_inbox(store: Any, fox: Any) -> None:
    await propose(store, fox, ("quick brown", "slow red"))
    viewer = await client_for("victor", "view_suggestion")
    page = (await viewer.get(INBOX)).content.decode()
    assert 'id="no-review-reason"' in page and 'id="inbox-' not in page
    assert 'id="inbox-link"' not in (await viewer.get("/admin/")).content.decode()
    # and staff who may not even view suggestions are refused
    nobody = await client_for("nora")
    assert (await nobody.get(INBOX)).status_code == 403


async def test_an_empty_inbox_says_so(reviewer: AsyncClient) -> None:
    page = (await reviewer.get(INBOX)).content.decode()
    assert "Nothing waits for your review." in page
    assert (
        '<a href="/admin/suggestions/suggestion/inbox/" id="inbox-link">Inbox</a>'
        in (await reviewer.get("/admin/")).content.decode()
    )


async def test_open_threads_that_mention_a_person_wait_in_their_inbox(store: Any, fox: Any) -> None:
    """Mentions reach whoever reads notes, reviewer or not; the header counts them; a resolved thread, a
    thread mentioning someone else and hostile text do not leak."""
    from lensrelay.vault.paths import path_index
    from suggestions.lifecycle.commenting import Commenter, thread_resolve, thread_start

    reader = await client_for("rudi", "view_document")
    assert 'id="inbox-link"' not in (await reader.get("/admin/")).content.decode()
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(fox.doc_id)
    mentioned = await thread_start(
        store=store,
        entry=entry,
        commenter=Commenter(author="ana"),
        passage="lazy dog",
        body="@rudi is this <script>window.__xss = 1</script> right?",
    )
    await thread_start(
        store=store,
        entry=entry,
        commenter=Commenter(author="ana"),
        passage="quick brown",
        body="@someone else",
    )
    resolved = await thread_start(
        store=store, entry=entry, commenter=Commenter(author="ana"), passage="jumps", body="@rudi done?"
    )
    await thread_resolve(store=store, thread=resolved, commenter=Commenter(author="ana"), resolved=True)
    page = (await reader.get(INBOX)).content.decode()
    assert re.findall(r'<li id="mention-(\w+)"', page) == [mentioned.uid]
    assert f'href="{CHANGELIST}document/{fox.doc_id}/edit/#thread-{mentioned.uid}"' in page
    assert "&lt;script&gt;" in page and "<script>window.__xss" not in page
    header = (await reader.get("/admin/")).content.decode()
    assert re.search(r'id="inbox-link">Inbox <span class="inbox-count">\(1\)', header)
    await thread_resolve(store=store, thread=mentioned, commenter=Commenter(author="ana"), resolved=True)
    assert 'id="inbox-link"' not in (await reader.get("/admin/")).content.decode()
