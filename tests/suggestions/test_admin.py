"""The suggestion admin through Django's async test client, with decisions applied to a live store.

The async client runs the admin's sync views in a worker thread, and the services hop back onto the
test's event loop (as under daphne), so the store the tests read is the one the admin decided on.
"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Permission, User
from django.test import AsyncClient
from pycrdt import Text

from lensrelay.docstore.offsets import text_delete
from lensrelay.docstore.texts import CONTENTS, text_cache
from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import path_index
from suggestions.lifecycle.proposing import EditSpec, Proposer, suggestion_propose_edits
from suggestions.markup.criticmarkup import render_metadata, render_replacement
from suggestions.models import Suggestion
from suggestions.review.admin_views import (
    diff_table,
    inline_lines,
    line_groups,
    own_changes,
    without_metadata,
)

ORIGINAL = "# Fox\n\nThe quick brown fox jumps over the lazy dog.\nA <b>bold</b> line & more.\n"
CHANGELIST = "/admin/suggestions/suggestion/"


def change_url(suggestion: Suggestion) -> str:
    return f"{CHANGELIST}{suggestion.pk}/change/"


def decide_url(suggestion: Suggestion) -> str:
    return f"{CHANGELIST}{suggestion.pk}/decide/"


# -- fixtures ----------------------------------------------------------------------------------------------


async def propose(store: Any, document: Any, *edits: tuple[str, str], author: str = "claude") -> Suggestion:
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(document.doc_id)
    assert entry is not None
    outcome = await suggestion_propose_edits(
        store=store,
        entry=entry,
        proposer=Proposer(author=author),
        specs=[EditSpec(old, new) for old, new in edits],
        tool="edit",
    )
    assert outcome.suggestion is not None
    return outcome.suggestion


async def raw_text(store: Any, document: Any) -> str:
    return await text_cache(store).get(document.doc_id)


async def refreshed(suggestion: Suggestion) -> Suggestion:
    return await Suggestion.objects.select_related("decided_by").aget(pk=suggestion.pk)


def _staff(username: str, *codenames: str, superuser: bool = False) -> User:
    if superuser:
        return User.objects.create_superuser(username, f"{username}@example.org", "pw")
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return user


async def client_for(username: str, *codenames: str, csrf: bool = False) -> AsyncClient:
    user = await sync_to_async(_staff)(username, *codenames)
    client = AsyncClient(enforce_csrf_checks=csrf)
    await client.aforce_login(user)
    return client


@pytest.fixture
async def viewer(transactional_db: None) -> AsyncClient:
    return await client_for("victor", "view_suggestion")


def messages_of(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


pytestmark = pytest.mark.django_db(transaction=True)


# -- pure helpers -----------------------------------------------------------------------------------------


def test_without_metadata_keeps_the_marks_and_drops_the_author_prefix() -> None:
    meta = '{"author":"x","timestamp":1,"id":"u1"}@@'
    raw = f"a {{--{meta}old--}}{{++{meta}new++}} b {{>>hm<<}}"
    assert without_metadata(raw) == "a {--old--}{++new++} b {>>hm<<}"


def test_changes_on_one_line_show_together_and_other_suggestions_show_as_marks() -> None:
    mine = render_metadata("claude", 1, suggestion_id="mine")
    other = render_metadata("gpt", 2, suggestion_id="other")
    raw = (
        f"Intro {render_replacement('a', 'b', other)} line.\n"
        f"The {render_replacement('quick', 'slow', mine)} fox & "
        f"{render_replacement('lazy', 'sleepy', mine)} dog "
        f"near {render_replacement('x', 'y', other)}.\n"
        f"Last {render_replacement('end', 'close', mine)}{'.' * 400}\n"
    )
    changes = own_changes(raw, "mine")
    groups = line_groups(raw, changes)
    assert [len(group) for group in groups] == [2, 1]
    first = str(inline_lines(raw, groups[0]))
    assert first == (
        '<span class="context">The </span><del>quick</del><ins>slow</ins>'
        '<span class="context"> fox &amp; </span><del>lazy</del><ins>sleepy</ins>'
        '<span class="context"> dog near <span class="other-suggestion" '
        'title="Another pending suggestion, by gpt"><del>x</del><ins>y</ins></span>.</span>'
    )
    second = str(inline_lines(raw, groups[1]))
    assert second.startswith('<span class="context">Last </span><del>end</del><ins>close</ins>')
    assert second.endswith("…</span>") and len(second) < 300  # long context is clipped


def test_diff_table_escapes_the_lines() -> None:
    table = diff_table("x <script>alert(1)</script>\n", "y <script>alert(1)</script>\n", context=False)
    assert "<script>" not in table
    assert "&lt;script&gt;" in table
    assert "Without this suggestion" in table and "With this suggestion" in table


def test_diff_table_highlights_whole_words_and_keeps_only_nearby_lines() -> None:
    before = "".join(f"line {n}\n" for n in range(30)) + "The stored value is kept.\n"
    after = before.replace("stored value", "saved value")
    table = str(diff_table(before, after, context=True))
    assert "<del>stored</del><ins>saved</ins>" in table  # never s[tored] / s[aved]
    assert "line 0\n" not in table and "line 29" in table and "⋯" in table


def test_diff_table_shows_other_suggestions_as_marks_not_markup() -> None:
    other = render_metadata("gpt", 2, suggestion_id="other")
    text = f"Keep {render_replacement('old', 'new', other)} here.\nThe fox.\n"
    table = str(diff_table(text, text.replace("fox", "wolf"), context=True))
    assert "{--" not in table and "@@" not in table
    assert '<span class="other-suggestion"' in table and "<del>fox</del><ins>wolf</ins>" in table


# -- changelist --------------------------------------------------------------------------------------------


async def test_changelist_shows_preview_age_and_filters_and_searches_text(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    first = await propose(store, fox, ("quick brown", "slow red"))
    await propose(store, fox, ("lazy dog", "sleepy cat"))
    await Suggestion.objects.filter(pk=first.pk).aupdate(note="too slow for a fox")

    response = await reviewer.get(CHANGELIST)
    assert response.status_code == 200
    page = response.content.decode()
    # each change with the words around it on its line, not a bare "+ main"
    assert (
        '<span class="suggestion-context">The </span><del class="suggestion-old">quick brown</del>'
        '<ins class="suggestion-new">slow red</ins><span class="suggestion-context"> fox jumps over the lazy…'
    ) in page
    assert "Lens/Fox.md" in page and "just now" in page
    for heading in ("By status", "By kind", "By folder", "By author", "By created"):
        assert heading in page, heading
    assert 'value="accept_selected"' in page and 'value="reject_selected"' in page
    assert "delete_selected" not in page

    found = await reviewer.get(CHANGELIST, {"q": "sleepy"})
    assert "sleepy cat" in found.content.decode() and "slow red" not in found.content.decode()
    by_note = await reviewer.get(CHANGELIST, {"q": "too slow"})
    assert "slow red" in by_note.content.decode() and "sleepy cat" not in by_note.content.decode()
    filtered = await reviewer.get(CHANGELIST, {"status": "accepted"})
    assert "0 suggestions" in filtered.content.decode()
    # Only what the filters offer filters (lensrelay.adminbase): a lookup of the model's own is refused.
    assert (await reviewer.get(CHANGELIST, {"status__exact": "accepted"})).status_code == 400


# -- change page -----------------------------------------------------------------------------------------


async def test_change_page_shows_the_diff_in_context_and_the_decision_form(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    suggestion = await propose(store, fox, ("quick brown", "slow red"))
    response = await reviewer.get(change_url(suggestion))
    assert response.status_code == 200
    page = response.content.decode()
    assert (
        '<span class="context">The </span><del>quick brown</del><ins>slow red</ins>'
        '<span class="context"> fox jumps over the lazy dog.</span>'
    ) in page
    assert 'class="diff word-diff"' in page and "Without this suggestion (rejected)" in page
    assert f'href="/admin/suggestions/suggestion/document/{fox.doc_id}/review/"' in page
    assert 'id="suggestion-accept"' in page and 'id="suggestion-reject"' in page
    assert f'action="{decide_url(suggestion)}"' in page
    assert 'name="note"' in page and "csrfmiddlewaretoken" in page
    # read-only: no save buttons
    assert 'name="_save"' not in page


async def test_everything_shown_is_html_escaped(store: Any, fox: Any, reviewer: AsyncClient) -> None:
    suggestion = await propose(
        store, fox, ("lazy dog", "<script>alert('x')</script> dog"), author="<img src=x onerror=alert(1)>"
    )
    page = (await reviewer.get(change_url(suggestion))).content.decode()
    assert "<script>alert(" not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;alert(" in page
    # the document's own HTML-looking text, shown as context and in the side-by-side table, stays text
    assert "<b>bold</b>" not in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page
    listing = (await reviewer.get(CHANGELIST)).content.decode()
    assert "<script>alert(" not in listing and "&lt;script&gt;" in listing
    assert "<img src=x" not in listing


async def test_accept_on_the_change_page_settles_the_document_and_records_the_reviewer(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    suggestion = await propose(store, fox, ("quick brown", "slow red"))
    response = await reviewer.post(
        decide_url(suggestion), {"decision": "accept", "note": "nice"}, follow=True
    )
    assert response.status_code == 200
    assert messages_of(response) == [f"Accepted the edit of Lens/Fox.md ({suggestion.uid})."]
    assert await raw_text(store, fox) == ORIGINAL.replace("quick brown", "slow red")
    row = await refreshed(suggestion)
    assert row.status == "accepted" and row.note == "nice"
    assert row.decided_by is not None and row.decided_by.username == "rita"
    assert row.decided_at is not None
    entry = await LogEntry.objects.select_related("user").aget(object_id=str(suggestion.pk))
    assert entry.action_flag == CHANGE and entry.user.username == "rita"
    assert entry.change_message == "Accepted the suggestion: nice"
    # nothing else is pending: the reviewer lands on the (pending) list
    assert response.redirect_chain[-1][0] == CHANGELIST
    # a decided suggestion shows what it proposed, and no buttons
    page = (await reviewer.get(change_url(suggestion))).content.decode()
    assert 'id="suggestion-accept"' not in page
    assert "no longer in the document" in page


async def test_reject_with_a_note_restores_the_text_and_keeps_the_note(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    suggestion = await propose(store, fox, ("lazy dog", "sleepy cat"))
    response = await reviewer.post(
        decide_url(suggestion), {"decision": "reject", "note": "  Keep the classic pangram.  "}, follow=True
    )
    assert messages_of(response) == [f"Rejected the edit of Lens/Fox.md ({suggestion.uid})."]
    assert await raw_text(store, fox) == ORIGINAL
    row = await refreshed(suggestion)
    assert row.status == "rejected" and row.note == "Keep the classic pangram."
    assert row.decided_by is not None and row.decided_by.username == "rita"


async def test_a_suggestion_whose_markup_was_partly_edited_away_is_refused_and_becomes_stale(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    suggestion = await propose(
        store, fox, ("quick brown fox jumps over the lazy", "slow brown fox jumps over the sleepy")
    )
    assert len(suggestion.hunks) == 2
    # a person deletes the first hunk's markup (and its words) in an editor; the second stays
    room = await store.get(fox.doc_id)
    ytext = room.doc.get(CONTENTS, type=Text)
    raw = str(ytext)
    start = raw.index("{--")
    end = raw.index("++}", start) + 3
    with room.transact():
        text_delete(ytext, current=raw, start=start, end=end)
    await room.flushed()

    page = (await reviewer.get(change_url(suggestion))).content.decode()
    assert "Part of the suggestion&#x27;s markup was edited away." in page

    response = await reviewer.post(decide_url(suggestion), {"decision": "accept"}, follow=True)
    # The follower marks it stale within a second of the edit; a decision before that finds it too.
    refused = f"Could not accept the edit of Lens/Fox.md ({suggestion.uid}): "
    assert messages_of(response) in (
        [refused + "part of the suggestion's markup was edited away."],
        [refused + "suggestion is already stale."],
    )
    row = await refreshed(suggestion)
    assert row.status == "stale"
    assert "{++" in await raw_text(store, fox)  # nothing was applied


async def test_deciding_twice_is_refused_with_the_reason(store: Any, fox: Any, reviewer: AsyncClient) -> None:
    suggestion = await propose(store, fox, ("quick", "slow"))
    await reviewer.post(decide_url(suggestion), {"decision": "reject"}, follow=True)
    response = await reviewer.post(decide_url(suggestion), {"decision": "accept"}, follow=True)
    assert messages_of(response) == [
        f"Could not accept the edit of Lens/Fox.md ({suggestion.uid}): "
        "suggestion is already rejected by rita."
    ]
    assert (await refreshed(suggestion)).status == "rejected"


async def test_the_decide_view_takes_only_csrf_protected_posts(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    suggestion = await propose(store, fox, ("quick", "slow"))
    assert (await reviewer.get(decide_url(suggestion))).status_code == 405
    assert (await reviewer.post(decide_url(suggestion), {"decision": "maybe"})).status_code == 400
    missing = await reviewer.post(f"{CHANGELIST}999999/decide/", {"decision": "accept"})
    assert missing.status_code == 404
    strict = await client_for("carla", "view_suggestion", "review_suggestion", csrf=True)
    assert (await strict.post(decide_url(suggestion), {"decision": "accept"})).status_code == 403
    assert (await refreshed(suggestion)).status == "pending"


async def test_a_move_suggestion_says_what_accepting_does(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    move = await Suggestion.objects.acreate(
        kind="move",
        doc_id=fox.doc_id,
        path="Lens/Fox.md",
        new_path="Lens/Den/Fox.md",
        author="claude",
        tool="move",
    )
    page = (await reviewer.get(change_url(move))).content.decode()
    assert "Move Lens/Fox.md to Lens/Den/Fox.md; links to it are rewritten." in page
    assert 'id="suggestion-accept"' in page
    listing = (await reviewer.get(CHANGELIST)).content.decode()
    assert "move → Lens/Den/Fox.md" in listing


async def test_a_delete_suggestion_lists_every_note_that_links_to_it(
    store: Any, make_folder: Any, fox: Any, reviewer: AsyncClient
) -> None:
    # The proposing token may not have seen Secret: it was not told; the reviewer is.
    secret = await sync_to_async(make_folder)("Secret")
    await document_create(store=store, folder=secret, path="/Den.md", text="Where [[Lens/Fox]] sleeps.\n")
    delete = await Suggestion.objects.acreate(
        kind="delete", doc_id=fox.doc_id, path="Lens/Fox.md", author="claude", tool="delete"
    )
    page = (await reviewer.get(change_url(delete))).content.decode()
    assert 'id="suggestion-linking"' in page and "<li>Secret/Den.md</li>" in page


# -- permissions ---------------------------------------------------------------------------------------


async def test_staff_without_the_review_permission_may_browse_but_not_decide(
    store: Any, fox: Any, viewer: AsyncClient
) -> None:
    suggestion = await propose(store, fox, ("quick", "slow"))
    listing = await viewer.get(CHANGELIST)
    assert listing.status_code == 200
    assert "accept_selected" not in listing.content.decode()

    page = await viewer.get(change_url(suggestion))
    assert page.status_code == 200
    html = page.content.decode()
    assert "<del>quick</del><ins>slow</ins>" in html
    assert 'id="suggestion-accept"' not in html and 'id="suggestion-reject"' not in html
    assert 'id="suggestion-no-review"' in html

    assert (await viewer.post(decide_url(suggestion), {"decision": "accept"})).status_code == 403
    for post in ({}, {"post": "yes"}):
        refused = await viewer.post(
            CHANGELIST,
            {"action": "accept_selected", "_selected_action": [suggestion.pk], **post},
            follow=True,
        )
        # without the permission the action does not exist: the post just shows the list again (the
        # export actions viewers do have make Django say no action was chosen)
        assert refused.status_code == 200
        assert "Accept the selected suggestions?" not in refused.content.decode()
        assert messages_of(refused) in ([], ["No action selected."])
    assert (await refreshed(suggestion)).status == "pending"
    assert await raw_text(store, fox) != ORIGINAL  # the markup is still there


async def test_review_permission_alone_is_enough_to_browse(store: Any, fox: Any) -> None:
    suggestion = await propose(store, fox, ("quick", "slow"))
    client = await client_for("robin", "review_suggestion")
    assert (await client.get(CHANGELIST)).status_code == 200
    assert 'id="suggestion-accept"' in (await client.get(change_url(suggestion))).content.decode()


async def test_staff_without_any_suggestion_permission_sees_nothing(store: Any, fox: Any) -> None:
    suggestion = await propose(store, fox, ("quick", "slow"))
    client = await client_for("nobody")
    assert (await client.get(CHANGELIST)).status_code == 403
    assert (await client.post(decide_url(suggestion), {"decision": "accept"})).status_code == 403


async def test_nobody_adds_edits_or_deletes_rows(store: Any, fox: Any) -> None:
    suggestion = await propose(store, fox, ("quick", "slow"))
    user = await sync_to_async(_staff)("root", superuser=True)
    client = AsyncClient()
    await client.aforce_login(user)
    assert (await client.get(f"{CHANGELIST}add/")).status_code == 403
    assert (await client.get(f"{CHANGELIST}{suggestion.pk}/delete/")).status_code == 403
    edited = await client.post(change_url(suggestion), {"note": "sneaky", "status": "accepted"})
    assert edited.status_code == 403
    row = await refreshed(suggestion)
    assert row.status == "pending" and row.note == ""
    page = (await client.get(change_url(suggestion))).content.decode()
    assert 'id="suggestion-accept"' in page  # superusers review


# -- bulk actions ---------------------------------------------------------------------------------------


async def test_bulk_accept_confirms_first_then_reports_each_outcome(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    quick = await propose(store, fox, ("quick", "slow"))
    lazy = await propose(store, fox, ("lazy", "sleepy"))
    done = await propose(store, fox, ("jumps", "leaps"))
    await reviewer.post(decide_url(done), {"decision": "reject"}, follow=True)
    selected = [quick.pk, lazy.pk, done.pk]

    # the list opens on pending suggestions; the reviewer chose "All" to see the rejected one too
    everything = f"{CHANGELIST}?status=all"
    confirm = await reviewer.post(everything, {"action": "accept_selected", "_selected_action": selected})
    assert confirm.status_code == 200
    page = confirm.content.decode()
    assert "Accept the selected suggestions?" in page
    assert page.count('name="_selected_action"') == 3
    assert 'name="action" value="accept_selected"' in page and 'name="post" value="yes"' in page
    assert "<del>quick</del> → <ins>slow</ins>" in page and "<del>lazy</del> → <ins>sleepy</ins>" in page
    assert "Lens/Fox.md (rejected)" in page
    assert 'value="Yes, accept 2 suggestions"' in page
    assert (await refreshed(quick)).status == "pending"  # nothing happened yet

    acted = await reviewer.post(
        everything,
        {"action": "accept_selected", "_selected_action": selected, "post": "yes", "note": "batch ok"},
        follow=True,
    )
    assert acted.status_code == 200
    assert messages_of(acted) == [
        f"2 accepted, 1 not decided: suggestion is already rejected by rita ({done.uid})",
    ]
    assert await raw_text(store, fox) == ORIGINAL.replace("quick", "slow").replace("lazy", "sleepy")
    for pending in (quick, lazy):
        row = await refreshed(pending)
        assert row.status == "accepted" and row.note == "batch ok"
        assert row.decided_by is not None and row.decided_by.username == "rita"
    assert await LogEntry.objects.filter(change_message="Accepted the suggestion: batch ok").acount() == 2


async def test_bulk_reject_through_its_confirmation(store: Any, fox: Any, reviewer: AsyncClient) -> None:
    quick = await propose(store, fox, ("quick", "slow"))
    lazy = await propose(store, fox, ("lazy", "sleepy"))
    selected = [quick.pk, lazy.pk]
    confirm = await reviewer.post(CHANGELIST, {"action": "reject_selected", "_selected_action": selected})
    assert "Reject the selected suggestions?" in confirm.content.decode()
    acted = await reviewer.post(
        CHANGELIST, {"action": "reject_selected", "_selected_action": selected, "post": "yes"}, follow=True
    )
    assert messages_of(acted) == ["2 rejected"]
    assert await raw_text(store, fox) == ORIGINAL
    assert {(await refreshed(s)).status for s in (quick, lazy)} == {"rejected"}


async def test_the_suggestion_page_reads_as_a_summary_with_technical_details_folded_away(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    suggestion = await propose(store, fox, ("quick brown", "slow red"))
    await Suggestion.objects.filter(pk=suggestion.pk).aupdate(session_id="sess-0123456789abcdef")
    page = (await reviewer.get(change_url(suggestion))).content.decode()
    assert '<div class="readonly">Edit of Lens/Fox.md</div>' in page
    assert '<div class="readonly">by claude, just now (' in page
    # the session id and the Yjs anchors are still there for whoever needs them, folded away
    folded = page[page.index("Technical details") :]
    head = page[: page.index("Technical details")]
    assert "sess-0123456789abcdef" in folded and "sess-0123456789abcdef" not in head
    assert '"start"' not in head and "&quot;start&quot;" in folded
    assert "<details" in page[page.index("Technical details") - 400 : page.index("Technical details")]

    # decided: the page offers to undo it, and says why not once it cannot be
    await reviewer.post(decide_url(suggestion), {"decision": "accept"})
    page = (await reviewer.get(change_url(suggestion))).content.decode()
    assert 'id="suggestion-undo-button"' in page and f'action="{CHANGELIST}{suggestion.uid}/undo/"' in page
    undone = await reviewer.post(
        f"{CHANGELIST}{suggestion.uid}/undo/", {"next": change_url(suggestion)}, follow=True
    )
    assert messages_of(undone)[0].startswith("Undone: ")
    assert 'id="suggestion-accept"' in undone.content.decode()


async def test_an_insertion_in_the_list_shows_where_it_goes(
    store: Any, fox: Any, reviewer: AsyncClient
) -> None:
    await propose(store, fox, ("jumps over", "jumps right over"))
    page = (await reviewer.get(CHANGELIST)).content.decode()
    assert (
        '<span class="suggestion-context">…e quick brown fox jumps </span>'
        '<ins class="suggestion-new">right </ins><span class="suggestion-context">over the lazy dog.</span>'
    ) in page
