"""Rolling an assistant back (suggestions/lifecycle/rollback.py) through the admin page
(suggestions/review/rollback_page.py) with the live store the admin acts on: pending suggestions rejected
through the decision service, accepted edits reverted where their text still stands and listed where it moved
on, one winner when two roll back, and the attacks (no permission, anonymous, no CSRF token, other folders,
empty windows, hostile names, forged ids) changing nothing."""

from __future__ import annotations

import asyncio
import io
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from asgiref.sync import sync_to_async
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import AsyncClient
from django.utils import timezone
from pycrdt import Text

from lensrelay.access.tokens import token_create
from lensrelay.docstore.offsets import text_insert
from lensrelay.docstore.store import get_store
from lensrelay.docstore.texts import CONTENTS
from lensrelay.models import ApiToken, YUpdate
from lensrelay.vault.documents import document_create
from lensrelay.vault.paths import path_index
from suggestions.lifecycle.proposing import EditSpec, Proposer, suggestion_propose_edits
from suggestions.lifecycle.rollback import (
    MOVED_ON,
    RollbackError,
    as_if_rejected,
    assistant_rollback_in_store,
    assistant_rollback_plan_in_store,
    revert_edits,
)
from suggestions.lifecycle.undoing import undo_refusal
from suggestions.markup.criticmarkup import accept_edits, apply_spans, parse_changes
from suggestions.markup.undo_record import recorded, settled_regions
from suggestions.models import Suggestion
from tests.suggestions.test_admin import CHANGELIST, change_url, client_for, decide_url, raw_text, refreshed

pytestmark = pytest.mark.django_db(transaction=True)

ROLLBACK = f"{CHANGELIST}rollback/"
NOTE = (
    "# Notes 🦊\n\n"
    "Line one has a quick brown fox.\n"
    "Line two has a lazy dog.\n"
    "Line three has a red hen.\n"
    "Line four has a tall tree.\n"
    "Line five has a blue lake.\n"
    "Line six has a 中文 word.\n"
)


# -- fixtures and helpers ---------------------------------------------------------------------------------


@pytest.fixture
async def note(store: Any, make_folder: Any) -> Any:
    folder = await sync_to_async(make_folder)("Lens")
    return await document_create(store=store, folder=folder, path="/Notes.md", text=NOTE)


@pytest.fixture
async def claude(note: Any) -> ApiToken:
    token, _ = await sync_to_async(token_create)(name="claude", role="suggest")
    return token


@pytest.fixture
async def reviewer(transactional_db: None) -> AsyncClient:
    return await client_for("rita", "view_suggestion", "review_suggestion")


async def propose(
    store: Any,
    document: Any,
    token: ApiToken,
    old: str,
    new: str,
    *,
    session: str = "s-1",
    client: str = "mcp",
) -> Suggestion:
    index = path_index(store)
    await index.ensure()
    entry = index.by_doc_id(document.doc_id)
    assert entry is not None
    outcome = await suggestion_propose_edits(
        store=store,
        entry=entry,
        proposer=Proposer(author=token.name, token_id=token.pk, session_id=session, client_name=client),
        specs=[EditSpec(old, new)],
        tool="edit",
    )
    assert outcome.suggestion is not None
    return outcome.suggestion


async def edit_text(store: Any, doc_id: str, *, at: str, insert: str) -> None:
    room = await store.get(doc_id)
    ytext = room.doc.get(CONTENTS, type=Text)
    with room.transact():
        current = str(ytext)
        text_insert(ytext, current=current, index=current.index(at), value=insert)
    await room.flushed()


def page_url(assistant: str, **window: str) -> str:
    return f"{ROLLBACK}?{urlencode({'assistant': assistant, **window})}"


async def statuses(*rows: Suggestion) -> list[str]:
    return [(await refreshed(row)).status for row in rows]


async def history(row: Suggestion) -> list[str]:
    entries = LogEntry.objects.filter(object_id=str(row.pk), content_type__model="suggestion")
    return [e.change_message async for e in entries.order_by("pk")]


async def confirm_data(client: AsyncClient, assistant: str, **window: str) -> dict[str, str]:
    """What the page's confirmation form posts back: the assistant and the window it showed."""
    response = await client.get(page_url(assistant, **window))
    assert response.status_code == 200
    return {
        "assistant": assistant,
        "since": response.context["exact_since"],
        "until": response.context["exact_until"],
    }


@pytest.fixture
async def scenario(store: Any, note: Any, claude: ApiToken, reviewer: AsyncClient) -> dict[str, Any]:
    """Three pending and two accepted suggestions of claude; a person then edits over one accepted."""
    pending = [
        await propose(store, note, claude, "red hen", "brown hen"),
        await propose(store, note, claude, "tall tree", "short tree"),
        await propose(store, note, claude, "blue lake", "green lake"),
    ]
    kept = await propose(store, note, claude, "quick brown fox", "slow grey fox")
    overwritten = await propose(store, note, claude, "lazy dog", "sleepy 猫")
    for row in (kept, overwritten):
        response = await reviewer.post(decide_url(row), {"decision": "accept"})
        assert response.status_code == 302
    assert (await statuses(kept, overwritten)) == ["accepted", "accepted"]
    await edit_text(store, note.doc_id, at="sleepy 猫", insert="very ")  # a person edits over it
    return {"pending": pending, "kept": kept, "overwritten": overwritten}


# -- pure helpers -----------------------------------------------------------------------------------------


def test_revert_edits_write_back_what_rejecting_would_have_left_with_the_smallest_edit() -> None:
    raw = 'ab {--{"id":"x"}@@quick--}{++{"id":"x"}@@slow++} cd {++{"id":"x"}@@new ++}ef'
    spans = [accept_edits(raw, change) for change in parse_changes(raw)]
    after = apply_spans(raw, [span for change in spans for span in change])
    assert after == "ab slow cd new ef"
    records = recorded(after, settled_regions(raw, spans))
    edits = revert_edits(after, records)
    assert edits is not None
    text = after
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[: edit.start] + edit.value + text[edit.end :]
    assert text == "ab quick cd ef"
    assert all(len(edit.value) <= len("quick") for edit in edits)  # never the whole text replaced
    # someone typed inside the accepted text: the text has moved on
    assert revert_edits("ab sloow cd new ef", records) is None


def test_the_plan_judges_accepted_text_as_it_will_be_once_the_pending_are_rejected() -> None:
    raw = 'fox {++{"id":"p1"}@@big ++}hen'
    assert as_if_rejected(raw, ["p1"]) == "fox hen"
    assert as_if_rejected(raw, ["other"]) == raw


# -- the whole rollback through the admin -----------------------------------------------------------------


async def test_rollback_rejects_the_pending_reverts_what_stands_and_lists_what_moved_on(
    store: Any, note: Any, claude: ApiToken, reviewer: AsyncClient, scenario: dict[str, Any]
) -> None:
    pending, kept, overwritten = scenario["pending"], scenario["kept"], scenario["overwritten"]
    before = await raw_text(store, note)
    assert "slow grey fox" in before and "very sleepy 猫" in before and before.count("{++") == 3

    # the page shows the plan; nothing changes yet
    response = await reviewer.get(page_url(f"token:{claude.pk}"))
    plan = response.context["plan"]
    assert [r.uid for r in plan.pending] == [r.uid for r in pending]
    assert [r.uid for r in plan.revertible] == [kept.uid]
    assert [(n.suggestion.uid, n.reason) for n in plan.not_revertible] == [(overwritten.uid, MOVED_ON)]
    page = response.content.decode()
    assert 'id="confirm-rollback"' in page and "Yes, reject 3 and revert 1" in page
    assert "the text has moved on" in page
    assert await raw_text(store, note) == before

    data = {
        "assistant": f"token:{claude.pk}",
        "since": response.context["exact_since"],
        "until": response.context["exact_until"],
    }
    done = await reviewer.post(ROLLBACK, data, follow=True)
    messages = [str(m) for m in done.context["messages"]]
    assert messages[0].startswith("Rolled back claude (token #")
    assert "3 pending suggestion(s) rejected, 1 accepted change(s) reverted" in messages[0]
    assert any(overwritten.uid in m and "the text has moved on" in m for m in messages[1:])

    text = await raw_text(store, note)
    assert "{++" not in text and "{--" not in text  # the three pending are rejected
    assert "Line one has a quick brown fox." in text  # the accepted one is reverted
    assert "Line two has a very sleepy 猫." in text  # the overwritten one is left alone
    assert text == NOTE.replace("lazy dog", "very sleepy 猫")

    rows = [await refreshed(r) for r in pending]
    deciders = {(r.status, r.decided_by.username if r.decided_by else None) for r in rows}
    assert deciders == {("rejected", "rita")}
    assert all(r.note.startswith("Rolled back by rita: claude (token #") for r in rows)
    assert len({r.decision_batch for r in rows}) == 1 and rows[0].decision_batch  # one bulk decision
    reverted = await Suggestion.objects.select_related("rolled_back_by", "decided_by").aget(pk=kept.pk)
    assert reverted.status == "reverted" and reverted.rolled_back_by is not None
    assert reverted.rolled_back_by.username == "rita" and reverted.decided_by.username == "rita"
    assert (await history(kept))[-1].startswith("Rolled back: the accepted text was reverted (claude")
    assert (await refreshed(overwritten)).status == "accepted"
    # the change is recorded as the staff member rolling the assistant back
    last = await YUpdate.objects.filter(doc_id=note.doc_id).order_by("-id").afirst()
    assert last is not None and last.author == f"rita (staff) rolled back claude (token #{claude.pk})"
    token_log = LogEntry.objects.filter(object_id=str(claude.pk), content_type__model="apitoken")
    assert [e.change_message async for e in token_log] == [messages[0]]
    # the suggestion's page says who rolled it back; undoing the acceptance is refused now
    change = (await reviewer.get(change_url(kept))).content.decode()
    assert "Rolled back" in change and "rita rolled it back" in change
    assert "rolled back" in (undo_refusal(reverted) or "")

    # the page now lists it as rolled back, and a second confirmation changes nothing
    again = await reviewer.get(page_url(**data))
    assert [r.uid for r in again.context["plan"].rolled_back] == [kept.uid]
    assert 'id="confirm-rollback"' not in again.content.decode()
    second = await reviewer.post(ROLLBACK, data, follow=True)
    assert [str(m) for m in second.context["messages"]] == [
        f"Nothing was rolled back: claude (token #{claude.pk}) has nothing pending or revertible "
        f"{again.context['plan'].window}."
    ]
    assert await raw_text(store, note) == text
    assert len(await history(kept)) == 2  # accepted, rolled back: never twice


async def test_two_rollbacks_at_once_have_one_winner_and_change_the_text_once(
    store: Any, note: Any, claude: ApiToken, scenario: dict[str, Any]
) -> None:
    rita = await User.objects.aget(username="rita")
    other = await sync_to_async(User.objects.create_user)("otto", password="pw", is_staff=True)
    plan = await assistant_rollback_plan_in_store(store=store, token=claude, since=None)
    first, second = await asyncio.gather(
        assistant_rollback_in_store(store=store, plan=plan, user=rita),
        assistant_rollback_in_store(store=store, plan=plan, user=other),
    )
    assert len(first.rejected) + len(second.rejected) == 3
    assert len(first.reverted) + len(second.reverted) == 1
    losers = [n.reason for n in first.not_rejected + second.not_rejected]
    assert len(losers) == 3 and all("already" in r or "deciding" in r for r in losers), losers
    assert await raw_text(store, note) == NOTE.replace("lazy dog", "very sleepy 猫")
    kept = scenario["kept"]
    assert [m for m in await history(kept) if m.startswith("Rolled back")] != []
    assert len([m for m in await history(kept) if m.startswith("Rolled back")]) == 1


async def test_a_session_is_rolled_back_alone(
    store: Any, note: Any, claude: ApiToken, reviewer: AsyncClient
) -> None:
    mine = await propose(store, note, claude, "red hen", "brown hen", session="sess-a", client="Claude Code")
    theirs = await propose(store, note, claude, "blue lake", "green lake", session="sess-b")
    response = await reviewer.get(page_url("session:sess-a"))
    plan = response.context["plan"]
    assert plan.assistant.label == f"claude · Claude Code (token #{claude.pk}) session sess-a"
    assert [r.uid for r in plan.pending] == [mine.uid]
    await reviewer.post(ROLLBACK, await confirm_data(reviewer, "session:sess-a"))
    assert (await statuses(mine, theirs)) == ["rejected", "pending"]


async def test_moves_deletes_creates_and_editor_acceptances_are_listed_with_what_to_do(
    store: Any, note: Any, claude: ApiToken, reviewer: AsyncClient
) -> None:
    common = {"token": claude, "author": "claude", "tool": "t", "doc_id": note.doc_id, "status": "accepted"}
    await Suggestion.objects.acreate(kind="move", path="Lens/Notes.md", new_path="Lens/Old.md", **common)
    await Suggestion.objects.acreate(kind="delete", path="Lens/Gone.md", **common)
    await Suggestion.objects.acreate(kind="create", path="Lens/New.md", **common)
    await Suggestion.objects.acreate(kind="replace", path="Lens/a.json", **common)
    await Suggestion.objects.acreate(kind="edit", path="Lens/Notes.md", **common)  # no undo record
    plan = (await reviewer.get(page_url(f"token:{claude.pk}"))).context["plan"]
    reasons = [n.reason for n in plan.not_revertible]
    assert reasons[0] == "an accepted move: move Lens/Old.md back to Lens/Notes.md if it should go back"
    assert "restore it from there" in reasons[1]
    assert "move it to the trash" in reasons[2]
    assert "restore an earlier version of the file" in reasons[3]
    assert "accepted in an editor" in reasons[4]
    assert not plan.actionable and plan.revertible == []


# -- attacks ----------------------------------------------------------------------------------------------


async def test_staff_without_the_review_permission_anonymous_and_csrfless_posts_change_nothing(
    store: Any, note: Any, claude: ApiToken, reviewer: AsyncClient, scenario: dict[str, Any]
) -> None:
    before = await raw_text(store, note)
    data = await confirm_data(reviewer, f"token:{claude.pk}")
    viewer = await client_for("victor", "view_suggestion")
    assert (await viewer.get(page_url(f"token:{claude.pk}"))).status_code == 403
    assert (await viewer.post(ROLLBACK, data)).status_code == 403
    anonymous = AsyncClient()
    for response in (await anonymous.get(ROLLBACK), await anonymous.post(ROLLBACK, data)):
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    strict = await client_for("carla", "view_suggestion", "review_suggestion", csrf=True)
    assert (await strict.get(page_url(f"token:{claude.pk}"))).status_code == 200  # looking is fine
    assert (await strict.post(ROLLBACK, data)).status_code == 403
    assert (await reviewer.put(ROLLBACK, data)).status_code == 405
    assert await raw_text(store, note) == before
    rows = [*scenario["pending"], scenario["kept"], scenario["overwritten"]]
    assert await statuses(*rows) == ["pending"] * 3 + ["accepted"] * 2


async def test_another_folders_token_and_an_empty_window_say_so_and_change_nothing(
    store: Any, note: Any, claude: ApiToken, reviewer: AsyncClient, make_folder: Any, scenario: dict[str, Any]
) -> None:
    before = await raw_text(store, note)
    other_folder = await sync_to_async(make_folder)("Other")
    elsewhere, _ = await sync_to_async(token_create)(name="scout", role="suggest", folders=[other_folder])
    response = await reviewer.get(page_url(f"token:{elsewhere.pk}"))
    page = response.content.decode()
    assert 'id="rollback-nothing"' in page and 'id="confirm-rollback"' not in page
    assert f"Nothing to roll back: scout (token #{elsewhere.pk}) made no suggestions between" in page
    posted = await reviewer.post(ROLLBACK, await confirm_data(reviewer, f"token:{elsewhere.pk}"), follow=True)
    told = [str(m) for m in posted.context["messages"]]
    assert told[0].startswith("Nothing was rolled back: scout"), told

    future = (timezone.now() + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    later = (timezone.now() + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    empty = await reviewer.get(page_url(f"token:{claude.pk}", since=future, until=later))
    assert "Nothing to roll back: claude" in empty.content.decode()
    backwards = await reviewer.get(page_url(f"token:{claude.pk}", since=later, until=future))
    assert "The window must end after it starts." in backwards.content.decode()
    assert backwards.context["plan"] is None
    assert await raw_text(store, note) == before


async def test_malformed_choices_and_windows_are_refused_with_a_reason(
    store: Any, note: Any, claude: ApiToken, reviewer: AsyncClient, scenario: dict[str, Any]
) -> None:
    before = await raw_text(store, note)
    until = timezone.now().strftime("%Y-%m-%dT%H:%M:%S.%f")
    for assistant, since in (
        ("token:999999", ""),
        ("token:abc", ""),
        ("session:" + "x" * 100_000, ""),
        ("", ""),
        (f"token:{claude.pk}", "yesterday"),
        (f"token:{claude.pk}", "2026-13-45T99:99"),
    ):
        shown = await reviewer.get(page_url(assistant, since=since, until=until))
        assert shown.status_code == 200 and shown.context["plan"] is None
        posted = await reviewer.post(
            ROLLBACK, {"assistant": assistant, "since": since, "until": until}, follow=True
        )
        [message] = [str(m) for m in posted.context["messages"]]
        assert message.startswith("Nothing was rolled back: "), message
    # a confirmation without the end of the window it showed would act on what nobody saw
    posted = await reviewer.post(ROLLBACK, {"assistant": f"token:{claude.pk}"}, follow=True)
    assert [str(m) for m in posted.context["messages"]] == ["Nothing was rolled back: the window has no end."]
    with pytest.raises(RollbackError):
        await assistant_rollback_plan_in_store(store=store, since=None)
    assert await raw_text(store, note) == before
    assert await statuses(*scenario["pending"]) == ["pending"] * 3


async def test_hostile_token_and_client_names_are_escaped(
    store: Any, note: Any, reviewer: AsyncClient
) -> None:
    token, _ = await sync_to_async(token_create)(name="<script>alert('t')</script>", role="suggest")
    hostile_client = "<img src=x onerror=1>"
    await propose(store, note, token, "red hen", "<b>hen</b>", session="<i>s</i>", client=hostile_client)
    chooser = (await reviewer.get(ROLLBACK)).content.decode()
    shown = (await reviewer.get(page_url(f"token:{token.pk}"))).content.decode()
    for page in (chooser, shown):
        assert "<script>alert" not in page and "<img src=x" not in page and "<b>hen</b>" not in page
        # The name as every record shows it (lensrelay.text.names: no brackets), escaped.
        assert "&lt;script&gt;alert &#x27;t&#x27; &lt;/script&gt;" in page
    assert "&lt;b&gt;" in shown  # the proposed text, escaped
    assert "&lt;img src=x onerror=1&gt;" in chooser


async def test_forged_suggestion_ids_in_the_post_are_ignored(
    store: Any, note: Any, claude: ApiToken, reviewer: AsyncClient
) -> None:
    other, _ = await sync_to_async(token_create)(name="other", role="suggest")
    mine = await propose(store, note, claude, "red hen", "brown hen")
    theirs = await propose(store, note, other, "blue lake", "green lake")
    data = await confirm_data(reviewer, f"token:{claude.pk}")
    forged = {**data, "_selected_action": [str(theirs.pk)], "suggestions": [str(theirs.pk), theirs.uid]}
    await reviewer.post(ROLLBACK, forged)
    assert await statuses(mine, theirs) == ["rejected", "pending"]
    assert "@@green++} lake." in await raw_text(store, note)
    # a suggestion made after the page was shown is outside its window: left alone too
    late = await propose(store, note, claude, "tall tree", "short tree")
    await reviewer.post(ROLLBACK, data)
    assert await statuses(late) == ["pending"]


async def test_the_changelist_links_to_the_page_for_reviewers_only(
    store: Any, note: Any, reviewer: AsyncClient
) -> None:
    assert 'id="rollback-link"' in (await reviewer.get(CHANGELIST)).content.decode()
    viewer = await client_for("victor", "view_suggestion")
    assert 'id="rollback-link"' not in (await viewer.get(CHANGELIST)).content.decode()


# -- the management command -------------------------------------------------------------------------------


def test_the_command_prints_the_plan_and_rolls_back_only_with_yes_as_a_reviewer(make_folder: Any) -> None:
    folder = make_folder("Lens")
    token, _ = token_create(name="claude", role="suggest")

    async def setup() -> Suggestion:
        store = get_store()
        try:
            document = await document_create(store=store, folder=folder, path="/Notes.md", text=NOTE)
            return await propose(store, document, token, "red hen", "brown hen")
        finally:
            await store.close()

    row = asyncio.run(setup())
    out = io.StringIO()
    call_command("rollback_assistant", "--token", str(token.pk), stdout=out)
    assert f"reject  {row.uid} edit Lens/Notes.md" in out.getvalue()
    assert "Nothing changed: add --yes --as USERNAME" in out.getvalue()
    with pytest.raises(CommandError, match="--yes needs --as"):
        call_command("rollback_assistant", "--token", str(token.pk), "--yes")
    User.objects.create_user("victor", password="pw", is_staff=True)
    with pytest.raises(CommandError, match="not staff with the review permission"):
        call_command("rollback_assistant", "--token", str(token.pk), "--yes", "--as", "victor")
    with pytest.raises(CommandError, match="No token or grant"):
        call_command("rollback_assistant", "--token", "999999")
    row.refresh_from_db()
    assert row.status == "pending"
    rita = User.objects.create_user("rita", password="pw", is_staff=True)
    rita.user_permissions.set(Permission.objects.filter(codename="review_suggestion"))
    out = io.StringIO()
    call_command("rollback_assistant", "--token", str(token.pk), "--yes", "--as", "rita", stdout=out)
    assert "1 pending suggestion(s) rejected, 0 accepted change(s) reverted" in out.getvalue()
    row.refresh_from_db()
    assert row.status == "rejected" and row.decided_by == rita


# -- neighbours ---------------------------------------------------------------------------------------------


async def test_accepted_changes_side_by_side_and_a_pending_one_beside_them_all_come_back(
    store: Any, note: Any, claude: ApiToken, reviewer: AsyncClient
) -> None:
    """Each acceptance recorded the text around it as it was then: reverting latest first (after the
    pending ones are rejected) meets every one's surroundings as they were recorded."""
    first = await propose(store, note, claude, "quick brown", "slow grey")
    await reviewer.post(decide_url(first), {"decision": "accept"})
    second = await propose(store, note, claude, "fox.", "cat.")
    await reviewer.post(decide_url(second), {"decision": "accept"})
    third = await propose(store, note, claude, "Line one has", "Line one had")  # pending, right beside
    assert "slow grey" in await raw_text(store, note) and "cat." in await raw_text(store, note)

    plan = await assistant_rollback_plan_in_store(store=store, token=claude, since=None)
    assert [r.uid for r in plan.revertible] == [first.uid, second.uid] and plan.not_revertible == []
    assert [r.uid for r in plan.pending] == [third.uid]
    await reviewer.post(ROLLBACK, await confirm_data(reviewer, f"token:{claude.pk}"))
    assert await raw_text(store, note) == NOTE
    assert await statuses(first, second, third) == ["reverted", "reverted", "rejected"]


async def test_an_oauth_grant_is_offered_and_named_for_its_person(
    store: Any, note: Any, reviewer: AsyncClient
) -> None:
    ada = await sync_to_async(User.objects.create_user)("ada", password="pw")
    grant = await ApiToken.objects.acreate(
        name="ada · Claude", role="suggest", token_hash="x" * 64, prefix="lr_x", user=ada
    )
    row = await propose(store, note, grant, "red hen", "brown hen", client="Claude")
    chooser = (await reviewer.get(ROLLBACK)).content.decode()
    option = f'<option value="token:{grant.pk}">ada · Claude (OAuth grant #{grant.pk} for ada)</option>'
    assert option in chooser
    plan = (await reviewer.get(page_url(f"token:{grant.pk}"))).context["plan"]
    assert plan.assistant.label == f"ada · Claude (OAuth grant #{grant.pk} for ada)"
    assert [r.uid for r in plan.pending] == [row.uid]
