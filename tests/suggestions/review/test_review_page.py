"""The document review page and the admin pages that lead to it, through Django's async test client."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient
from pycrdt import Text

from lensrelay.access.tokens import token_create
from lensrelay.docstore.offsets import text_insert
from lensrelay.docstore.texts import CONTENTS
from lensrelay.models import Document, Folder
from lensrelay.vault.documents import document_create
from suggestions.lifecycle.deciding import Decision
from suggestions.models import Suggestion
from suggestions.review import review_page
from suggestions.review.review_page import summary
from tests.suggestions.test_admin import (
    CHANGELIST,
    ORIGINAL,
    client_for,
    messages_of,
    propose,
    raw_text,
    refreshed,
)

pytestmark = pytest.mark.django_db(transaction=True)


def review_url(doc_id: str) -> str:
    return f"{CHANGELIST}document/{doc_id}/review/"


@pytest.fixture
async def fox(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    await document_create(store=store, folder=folder, path="/Welcome.md", text="# Welcome\n")
    return await document_create(
        store=store, folder=folder, path="/Fox.md", text=ORIGINAL + "\nSee [[Welcome]].\n"
    )


async def test_the_page_shows_the_note_rendered_with_each_suggestion_in_place(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    quick = await propose(store, fox, ("quick brown", "slow red"))
    lazy = await propose(store, fox, ("lazy dog", "sleepy cat"))
    page = (await reviewer.get(review_url(fox.doc_id))).content.decode()
    assert "<h1>Fox</h1>" in page
    assert f'<del class="sg sg-del" data-change="1" data-uid="{quick.uid}">quick brown</del>' in page
    assert f'<ins class="sg sg-ins" data-change="2" data-uid="{lazy.uid}">sleepy cat</ins>' in page
    assert 'class="wikilink"' in page and "/admin/lensrelay/document/" in page
    assert page.count('class="card"') == 2 and "claude" in page and "just now" in page
    assert page.count('name="decision" value="accept"') == 2
    assert f'name="next" value="{review_url(fox.doc_id)}"' in page
    assert "As if all accepted" in page and "Without suggestions" in page
    assert "<p>The slow red fox jumps over the sleepy cat.\n" in page  # as if accepted
    assert "<p>The quick brown fox jumps over the lazy dog.\n" in page  # as if rejected


async def test_without_the_review_permission_the_page_says_why(store: Any, fox: Any) -> None:
    await propose(store, fox, ("quick brown", "slow red"))
    viewer = await client_for("victor", "view_suggestion")
    page = (await viewer.get(review_url(fox.doc_id))).content.decode()
    assert 'id="no-review-reason"' in page and "Can review (accept or reject) suggestions" in page
    assert 'name="decision"' not in page and 'id="accept-all"' not in page
    assert (
        await viewer.get(f"{CHANGELIST}document/{fox.doc_id}/decide-all/?decision=accept")
    ).status_code == 403
    nobody = AsyncClient()
    assert (await nobody.get(review_url(fox.doc_id))).status_code == 302  # to the login page


async def test_the_state_endpoint_changes_version_when_an_assistant_suggests(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    await propose(store, fox, ("quick brown", "slow red"))
    first = json.loads((await reviewer.get(f"{review_url(fox.doc_id)}state/")).content)
    assert first["pending"] == 1 and "slow red" in first["html"]
    same = json.loads(
        (await reviewer.get(f"{review_url(fox.doc_id)}state/", {"since": first["version"]})).content
    )
    assert same == {"version": first["version"], "pending": 1}  # nothing new: no HTML sent
    await propose(store, fox, ("lazy dog", "sleepy cat"))
    after = json.loads(
        (await reviewer.get(f"{review_url(fox.doc_id)}state/", {"since": first["version"]})).content
    )
    assert after["version"] != first["version"] and after["pending"] == 2 and "sleepy cat" in after["html"]


async def test_a_decision_on_the_page_returns_to_it_and_unsafe_next_is_ignored(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    quick = await propose(store, fox, ("quick brown", "slow red"))
    lazy = await propose(store, fox, ("lazy dog", "sleepy cat"))
    response = await reviewer.post(
        f"{CHANGELIST}{quick.pk}/decide/", {"decision": "accept", "next": review_url(fox.doc_id)}
    )
    assert response["Location"] == review_url(fox.doc_id)
    response = await reviewer.post(
        f"{CHANGELIST}{lazy.pk}/decide/", {"decision": "reject", "next": "https://evil.example/"}
    )
    assert response["Location"] == CHANGELIST  # nothing pending is left: the list
    assert await raw_text(store, fox) == (ORIGINAL + "\nSee [[Welcome]].\n").replace(
        "quick brown", "slow red"
    )


async def test_after_a_decision_the_reviewer_lands_on_the_next_pending_suggestion(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    quick = await propose(store, fox, ("quick brown", "slow red"))
    lazy = await propose(store, fox, ("lazy dog", "sleepy cat"))
    response = await reviewer.post(f"{CHANGELIST}{quick.pk}/decide/", {"decision": "accept"})
    assert response["Location"] == f"{CHANGELIST}{lazy.pk}/change/"


async def test_accept_all_confirms_then_decides_the_document_with_one_summary(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    quick = await propose(store, fox, ("quick brown", "slow red"))
    lazy = await propose(store, fox, ("lazy dog", "sleepy cat"))
    url = f"{CHANGELIST}document/{fox.doc_id}/decide-all/"
    confirm = (await reviewer.get(url, {"decision": "accept"})).content.decode()
    assert "Yes, accept 2 suggestions" in confirm and "<del>quick brown</del>" in confirm
    assert (await refreshed(quick)).status == "pending"  # a GET never decides

    # the reviewer confirmed what they saw; a third suggestion arriving meanwhile is not swept along
    late = await propose(store, fox, ("jumps", "leaps"))
    acted = await reviewer.post(
        url,
        {"decision": "accept", "post": "yes", "uid": [quick.uid, lazy.uid], "note": "all good"},
        follow=True,
    )
    assert messages_of(acted) == ["2 accepted"]
    assert {(await refreshed(s)).status for s in (quick, lazy)} == {"accepted"}
    assert (await refreshed(late)).status == "pending"
    assert (await refreshed(quick)).note == "all good"


async def test_next_document_goes_to_the_one_waiting_longest(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    folder = await Folder.objects.aget(name="Lens")
    other = await document_create(store=store, folder=folder, path="/Other.md", text="Some other note.\n")
    await propose(store, other, ("other", "second"))
    await propose(store, fox, ("quick brown", "slow red"))
    page = (await reviewer.get(review_url(other.doc_id))).content.decode()
    assert f'id="next-document" href="{review_url(fox.doc_id)}"' in page
    page = (await reviewer.get(review_url(fox.doc_id))).content.decode()
    assert f'id="next-document" href="{review_url(other.doc_id)}"' in page  # wraps around


async def test_index_document_and_folder_pages_show_what_waits(store: Any, fox: Any) -> None:
    await propose(store, fox, ("quick brown", "slow red"))
    await propose(store, fox, ("lazy dog", "sleepy cat"))
    folder = await Folder.objects.aget(name="Lens")
    await sync_to_async(token_create)(name="scoped", role="suggest", folders=[folder])
    admin = await client_for("root", "view_suggestion", "view_document", "view_folder")
    index = (await admin.get("/admin/")).content.decode()
    assert "Lens Relay" in index and "Django administration" not in index
    assert 'id="pending-overview"' in index and '<td class="pending-count">2</td>' in index
    assert f'href="{review_url(fox.doc_id)}"' in index  # start reviewing
    document = (await admin.get(f"/admin/lensrelay/document/{fox.pk}/change/")).content.decode()
    assert '<span id="document-pending-count">2</span>' in document
    assert 'id="document-rendered"' in document and '<del class="sg sg-del"' in document
    assert f'href="{review_url(fox.doc_id)}"' in document
    folder_page = (await admin.get(f"/admin/lensrelay/folder/{folder.pk}/change/")).content.decode()
    assert "/Fox.md" in folder_page and "/Welcome.md" in folder_page
    assert "scoped (suggest)" in folder_page and 'id="folder-pending"' in folder_page
    assert folder_page.count("Lens/Fox.md") == 2


async def test_the_list_opens_on_pending_and_filters_by_document(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    quick = await propose(store, fox, ("quick brown", "slow red"))
    await reviewer.post(f"{CHANGELIST}{quick.pk}/decide/", {"decision": "reject"})
    await propose(store, fox, ("lazy dog", "sleepy cat"))
    page = (await reviewer.get(CHANGELIST)).content.decode()
    assert "sleepy cat" in page and "slow red" not in page and "Review" in page
    everything = (await reviewer.get(CHANGELIST, {"status": "all"})).content.decode()
    assert "sleepy cat" in everything and "slow red" in everything
    by_document = await reviewer.get(CHANGELIST, {"document__id__exact": fox.pk, "status": "all"})
    assert by_document.status_code == 200 and "2 suggestions" in by_document.content.decode()
    assert await Suggestion.objects.acount() == 2


def test_the_summary_counts_outcomes_and_names_each_reason_once() -> None:
    def row(uid: str, status: str) -> Suggestion:
        return Suggestion(uid=uid, status=status)

    decisions = [
        Decision(row("a1", "accepted"), True),
        Decision(row("a2", "accepted"), True),
        Decision(row("s1", "stale"), False, "part of the suggestion's markup was edited away"),
        Decision(row("s2", "stale"), False, "part of the suggestion's markup was edited away"),
        Decision(row("r1", "rejected"), False, "suggestion is already rejected"),
    ]
    assert summary(decisions, accept=True) == (
        "2 accepted, 2 stale: part of the suggestion's markup was edited away (s1, s2), "
        "1 not decided: suggestion is already rejected (r1)"
    )
    assert summary([], accept=False) == "0 rejected"


async def test_reject_all_restores_the_note(store: Any, fox: Any, reviewer: AsyncClient) -> None:
    quick = await propose(store, fox, ("quick brown", "slow red"))
    lazy = await propose(store, fox, ("lazy dog", "sleepy cat"))
    url = f"{CHANGELIST}document/{fox.doc_id}/decide-all/"
    confirm = (await reviewer.get(url, {"decision": "reject"})).content.decode()
    assert "Yes, reject 2 suggestions" in confirm
    acted = await reviewer.post(
        url, {"decision": "reject", "post": "yes", "uid": [quick.uid, lazy.uid]}, follow=True
    )
    assert messages_of(acted) == ["2 rejected"]
    assert await raw_text(store, fox) == ORIGINAL + "\nSee [[Welcome]].\n"


# -- defects found trying the page as a new user would ---------------------------------------------------


def _card_order(page: str) -> list[str]:
    return re.findall(r'<section class="card[^"]*" data-uid="([0-9a-f]+)"', page)


def _badge_of_card(page: str, uid: str) -> str:
    section = page[page.index(f'id="card-{uid}"') :]
    return re.search(r'<span class="sg-badge">(\d+)</span>', section).group(1)  # type: ignore[union-attr]


async def test_cards_are_numbered_in_document_order_and_keep_their_numbers_after_a_decision(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    # proposed last-in-the-text first: the cards used to come in proposal order, numbered 2, 1, 3
    lazy = await propose(store, fox, ("lazy dog", "sleepy cat"))
    quick = await propose(store, fox, ("quick brown", "slow red"))
    bold = await propose(store, fox, ("more", "less"))
    page = (await reviewer.get(review_url(fox.doc_id))).content.decode()
    assert _card_order(page) == [quick.uid, lazy.uid, bold.uid]
    assert [_badge_of_card(page, s.uid) for s in (quick, lazy, bold)] == ["1", "2", "3"]
    assert (
        f'data-change="1" data-uid="{quick.uid}"' in page and f'data-change="2" data-uid="{lazy.uid}"' in page
    )

    await reviewer.post(f"{CHANGELIST}{quick.pk}/decide/", {"decision": "accept"})
    page = (await reviewer.get(review_url(fox.doc_id))).content.decode()
    # no renumbering: the decided one keeps its number in "Recent decisions", the others keep theirs
    assert _card_order(page) == [lazy.uid, bold.uid]
    assert [_badge_of_card(page, s.uid) for s in (lazy, bold)] == ["2", "3"]
    recent = page[page.index('id="recent-decisions"') :]
    assert f'id="recent-{quick.uid}"' in recent and '<span class="sg-badge">1</span>' in recent


async def test_a_suggestion_a_person_typed_inside_keeps_a_card_with_a_stale_notice_and_clean_up(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    suggestion = await propose(store, fox, ("quick brown", "slow red"))
    room = await store.get(fox.doc_id)
    ytext = room.doc.get(CONTENTS, type=Text)
    with room.transact():
        current = str(ytext)
        text_insert(ytext, current=current, index=current.index("slow red") + 4, value=" and")
    await room.flushed()
    for _ in range(50):  # the follower marks it stale within a second
        if (await refreshed(suggestion)).status == "stale":
            break
        await asyncio.sleep(0.1)
    assert (await refreshed(suggestion)).status == "stale"

    page = (await reviewer.get(review_url(fox.doc_id))).content.decode()
    assert f'id="card-{suggestion.uid}"' in page and f'id="stale-{suggestion.uid}"' in page
    assert "the text inside it was edited since it was proposed" in page
    assert 'value="clean_up"' in page and 'name="decision" value="accept"' not in page
    # nothing can be accepted or rejected as a whole: no Accept all / Reject all
    assert 'id="accept-all"' not in page and 'id="reject-all"' not in page

    done = await reviewer.post(
        f"{CHANGELIST}{suggestion.pk}/decide/",
        {"decision": "clean_up", "next": review_url(fox.doc_id)},
        follow=True,
    )
    assert messages_of(done)[0].startswith(f"Cleaned up the edit of Lens/Fox.md ({suggestion.uid})")
    text = await raw_text(store, fox)
    assert "{--" not in text and "{++" not in text and " and" in text


async def test_accept_all_and_reject_all_are_not_offered_with_nothing_pending(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    suggestion = await propose(store, fox, ("quick brown", "slow red"))
    page = (await reviewer.get(review_url(fox.doc_id))).content.decode()
    assert 'id="accept-all"' in page and 'id="reject-all"' in page
    await reviewer.post(f"{CHANGELIST}{suggestion.pk}/decide/", {"decision": "reject"})
    page = (await reviewer.get(review_url(fox.doc_id))).content.decode()
    assert 'id="nothing-pending"' in page
    assert 'id="accept-all"' not in page and 'id="reject-all"' not in page
    # the live part the page swaps in says the same
    state = json.loads((await reviewer.get(f"{review_url(fox.doc_id)}state/")).content)
    assert 'id="accept-all"' not in state["html"] and f'id="recent-{suggestion.uid}"' in state["html"]


async def test_the_review_page_undoes_a_bulk_decision_as_a_whole(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    quick = await propose(store, fox, ("quick brown", "slow red"))
    lazy = await propose(store, fox, ("lazy dog", "sleepy cat"))
    with_markup = await raw_text(store, fox)
    await reviewer.post(
        f"{CHANGELIST}document/{fox.doc_id}/decide-all/",
        {"decision": "accept", "post": "yes", "uid": [quick.uid, lazy.uid]},
    )
    page = (await reviewer.get(review_url(fox.doc_id))).content.decode()
    recent = page[page.index('id="recent-decisions"') :]
    assert "2 suggestions</strong> accepted together" in recent and "Undo all 2" in recent
    assert 'name="batch" value="1"' in recent
    first = re.search(r'id="recent-([0-9a-f]+)"', recent).group(1)  # type: ignore[union-attr]
    undone = await reviewer.post(
        f"{CHANGELIST}{first}/undo/", {"batch": "1", "next": review_url(fox.doc_id)}, follow=True
    )
    assert messages_of(undone)[0].startswith("Undone: ")
    assert await raw_text(store, fox) == with_markup
    page = undone.content.decode()
    assert page.count('<section class="card"') == 2 and 'id="recent-decisions"' not in page


async def test_a_pending_new_file_has_no_review_page_and_breaks_none(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    from suggestions.lifecycle.filecreate import suggestion_propose_file_create
    from suggestions.lifecycle.proposing import Proposer

    folder = await Folder.objects.aget(name="Lens")
    created = await suggestion_propose_file_create(
        store=store,
        folder_id=folder.pk,
        relative_path="/page.html",
        content="<p>hi</p>",
        proposer=Proposer("ai"),
    )
    await propose(store, fox, ("quick brown", "slow red"))
    page = await reviewer.get(review_url(fox.doc_id))
    assert page.status_code == 200 and 'id="next-document"' not in page.content.decode()
    listing = await reviewer.get(CHANGELIST)
    assert listing.status_code == 200 and "Create Lens/page.html" in listing.content.decode()
    change = await reviewer.get(f"{CHANGELIST}{created.pk}/change/")
    body = change.content.decode()
    assert change.status_code == 200 and "suggestion-accept" in body and "&lt;p&gt;hi&lt;/p&gt;" in body
    assert 'id="review-document"' not in body


async def test_a_long_note_is_rendered_in_a_heavy_work_process_with_its_links_and_marks(
    store: Any, fox: Any, reviewer: AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = await Folder.objects.aget(name="Lens")
    filler = "".join(f"Paragraph {n} links [[Welcome]] and <b>stays</b> escaped.\n\n" for n in range(1500))
    long = await document_create(store=store, folder=folder, path="/Long.md", text=filler + ORIGINAL)
    assert len(filler) > review_page.RENDER_IN_PROCESS_CHARS
    quick = await propose(store, long, ("quick brown", "slow red"))
    offloaded: list[str] = []
    real = review_page.offloaded_sync

    def spy(fn: Any, *args: Any) -> Any:
        offloaded.append(fn.__name__)
        return real(fn, *args)

    monkeypatch.setattr(review_page, "offloaded_sync", spy)
    page = (await reviewer.get(review_url(long.doc_id))).content.decode()
    assert offloaded == ["render_note_linked"]
    assert f'<del class="sg sg-del" data-change="1" data-uid="{quick.uid}">quick brown</del>' in page
    welcome = await Document.objects.aget(folder=folder, path="/Welcome.md")
    link = f'href="/admin/lensrelay/document/{welcome.pk}/change/"'
    assert page.count(link) == 1500 * 3  # the note with its marks, as if all accepted, without them
    assert "<b>stays</b>" not in page and "&lt;b&gt;stays&lt;/b&gt;" in page
    # a short note stays in the request thread
    (await reviewer.get(review_url(fox.doc_id))).content.decode()
    assert offloaded == ["render_note_linked"]


async def test_accept_all_decides_without_rendering_the_note(
    store: Any, fox: Any, reviewer: AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    quick = await propose(store, fox, ("quick brown", "slow red"))

    def no_rendering(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Accept all rendered the note")

    monkeypatch.setattr(review_page, "rendered_for_review", no_rendering)
    url = f"{CHANGELIST}document/{fox.doc_id}/decide-all/"
    confirm = (await reviewer.get(url, {"decision": "accept"})).content.decode()
    assert "Yes, accept 1 suggestion" in confirm and '<span class="sg-badge">1</span>' in confirm
    acted = await reviewer.post(url, {"decision": "accept", "post": "yes", "uid": [quick.uid]})
    assert acted.status_code == 302 and acted["Location"] == review_url(fox.doc_id)
    monkeypatch.undo()  # the review page it goes back to renders the note, as it should
    assert messages_of(await reviewer.get(acted["Location"])) == ["1 accepted"]
    assert (await refreshed(quick)).status == "accepted"


async def test_a_card_offers_its_inserted_text_for_changing_and_shows_hostile_text_inert(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    hostile = "</textarea><script>window.__xss = 1</script>"
    quick = await propose(store, fox, ("quick brown", "\nslow red"), ("lazy dog", hostile))
    dropped = await propose(store, fox, (" & more", ""))
    page = (await reviewer.get(review_url(fox.doc_id))).content.decode()
    fields = re.findall(
        r'<textarea name="revision"[^>]*id="revision-(\w+)-(\d)"[^>]*>(.*?)</textarea>', page, re.S
    )
    # one field per inserted text, in the card's order; the newline after the tag keeps a leading one
    assert [(uid, number) for uid, number, _ in fields] == [(quick.uid, "1"), (quick.uid, "2")]
    assert quick.hunks[0]["new"].endswith("\nslow red") and fields[0][2] == "\n" + quick.hunks[0]["new"]
    assert fields[1][2] == "\n&lt;/textarea&gt;&lt;script&gt;window.__xss = 1&lt;/script&gt;"
    assert "<script>window.__xss" not in page
    # a suggestion that only deletes has nothing to change
    assert f'id="revise-{dropped.uid}"' not in page and f'id="revise-{quick.uid}"' in page
    # without the review permission there is no field at all
    viewer = await client_for("victor", "view_suggestion")
    assert 'name="revision"' not in (await viewer.get(review_url(fox.doc_id))).content.decode()
