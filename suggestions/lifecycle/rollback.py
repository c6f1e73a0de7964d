"""Rolling an assistant back: reject what it still has pending, revert what was accepted of its work.

Staff pick an assistant (an API token, an OAuth grant, or one MCP session) and a time window;
`assistant_rollback_plan` says what would happen, `assistant_rollback` does it:

- its pending suggestions created in the window are rejected through the decision service
  (``suggestions.lifecycle.deciding``): one winner against other reviewers, the assistant is notified, history
  records the reviewer, all as one bulk decision (so it can be undone as a whole for a while);
- each of its accepted edits created in the window is reverted where the text the acceptance left still
  stands in the note (found by ``suggestions.markup.undo_record``'s context match, as undo finds it): the old
  text is written back as a new change, the smallest edit through the live document, so connected
  clients see it, authored "<staff> rolled back <assistant>". Where a person edited over or right beside
  that text since ("the text has moved on"), it is listed, not touched;
- accepted moves, deletes, new notes and file replacements changed the vault rather than a text: they are
  listed with what to do instead (move the note back, restore it from the trash or an earlier version,
  trash the new note), never reverted here: the note may have been linked, edited or replaced since, and
  these tools already exist with their own checks.

Rolling back is claimed per suggestion like a decision (``suggestions.lifecycle.claims``): of reviewers
rolling back, undoing or deciding at once, one wins; a rolled-back suggestion is ``reverted`` and is never
reverted twice. The plan is recomputed when acting, and only what is still in it is acted on.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.admin.models import CHANGE, LogEntry
from django.utils import timezone
from pycrdt import Text

from lensrelay.docstore.acting import Actor
from lensrelay.docstore.room import Origin
from lensrelay.docstore.store import DocStore, run_on_store
from lensrelay.docstore.texts import CONTENTS
from lensrelay.history.textedits import Replacement, text_apply_edits, text_edits
from lensrelay.models import ApiToken
from lensrelay.text.names import clean_name
from suggestions.kinds import KINDS, rules_of
from suggestions.lifecycle.claims import RevertClaim, claim_revert, release_revert, settle_revert
from suggestions.lifecycle.deciding import suggestion_bulk_decide
from suggestions.markup.criticmarkup import (
    Span,
    StaleChangeError,
    apply_spans,
    merged_descending,
    own_changes,
    reject_all,
    reject_edits,
)
from suggestions.markup.records import RegionRecord
from suggestions.markup.undo_record import located, region_markup
from suggestions.models import Suggestion

Status = Suggestion.Status
Kind = Suggestion.Kind

MOVED_ON = "the text has moved on: a person edited over it (or right beside it) since it was accepted"
GONE = "the note no longer exists"
TAKEN = "it was rolled back, undone or decided by someone else just now"


class RollbackError(ValueError):
    """The rollback was asked for wrongly (no assistant, both kinds, a window ending before it starts)."""


@dataclass(frozen=True)
class Assistant:
    """Whose work: a token or OAuth grant (both ApiToken rows), or one MCP session (of a token). ``label``
    names it as history names actors (see ``assistant_label``)."""

    token: ApiToken | None
    session_id: str
    client_name: str
    label: str


def assistant_label(token: ApiToken | None, *, session_id: str = "", client_name: str = "") -> str:
    """As ``docstore.acting`` names actors: `claude (token #3)`, `alice · Claude (OAuth grant #7 for
    alice)`; a session adds its client and `session <its id's first 8 characters>`. Reads the grant's
    person: call it from synchronous code."""
    session = f" session {clean_name(session_id)[:8]}" if session_id else ""
    if token is None:
        return f"{clean_name(client_name) or 'an assistant'}{session}"
    grant = token.user_id is not None
    person = token.user.get_username() if grant and token.user is not None else ""
    actor = Actor("grant" if grant else "token", token.name, token_id=token.pk, person=person)
    return actor.with_client(client_name).label + session


@dataclass(frozen=True)
class NotRevertible:
    suggestion: Suggestion
    reason: str


@dataclass
class RollbackPlan:
    """What rolling ``assistant`` back for suggestions created in ``[since, until)`` would do."""

    assistant: Assistant
    since: datetime | None
    until: datetime
    pending: list[Suggestion] = field(default_factory=list)
    revertible: list[Suggestion] = field(default_factory=list)
    not_revertible: list[NotRevertible] = field(default_factory=list)
    rolled_back: list[Suggestion] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.pending or self.revertible or self.not_revertible or self.rolled_back)

    @property
    def actionable(self) -> bool:
        return bool(self.pending or self.revertible)

    @property
    def window(self) -> str:
        since = f"{self.since:%Y-%m-%d %H:%M:%S}" if self.since is not None else "the start"
        return f"between {since} and {self.until:%Y-%m-%d %H:%M:%S} UTC"


@dataclass
class RollbackResult:
    plan: RollbackPlan
    rejected: list[Suggestion] = field(default_factory=list)
    not_rejected: list[NotRevertible] = field(default_factory=list)
    reverted: list[Suggestion] = field(default_factory=list)
    not_reverted: list[NotRevertible] = field(default_factory=list)

    @property
    def summary(self) -> str:
        parts = [
            f"Rolled back {self.plan.assistant.label} {self.plan.window}: "
            f"{len(self.rejected)} pending suggestion(s) rejected, "
            f"{len(self.reverted)} accepted change(s) reverted"
        ]
        if self.not_reverted:
            parts.append(f"{len(self.not_reverted)} accepted change(s) not reverted")
        if self.not_rejected:
            parts.append(f"{len(self.not_rejected)} pending suggestion(s) could not be rejected")
        return ", ".join(parts) + "."


# -- what would be done ------------------------------------------------------------------------------------


def _why_not(row: Suggestion) -> str | None:
    """Why an accepted suggestion is not reverted here, whatever its note holds now (None: it may be)."""
    rules = KINDS[Kind.MOVE] if row.moves_folder else rules_of(row)
    if rules.not_reverted is not None:
        return rules.not_reverted(row)
    if not (row.undo or {}).get("regions"):
        return (
            "it was accepted in an editor, where the text it replaced was not recorded: restore an "
            "earlier version from the note's history"
        )
    return None


def _apply(text: str, edits: Sequence[Replacement]) -> str:
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[: edit.start] + edit.value + text[edit.end :]
    return text


def revert_edits(text: str, records: Sequence[RegionRecord]) -> list[Replacement] | None:
    """The smallest edits of ``text`` that put back what rejecting would have left, in every region the
    acceptance recorded; None if any region no longer reads as the acceptance left it."""
    found: list[tuple[int, str, str]] = []
    for record in records:
        start = located(text, record)
        if start is None:
            return None
        found.append((start, str(record.get("settled", "")), reject_all(region_markup(record))))
    edits: list[Replacement] = []
    end = -1
    for start, settled, old in sorted(found, key=lambda f: f[0]):
        if start < end:  # two regions found overlapping: the text is not as the acceptance left it
            return None
        end = start + len(settled)
        edits += [Replacement(start + e.start, start + e.end, e.value) for e in text_edits(settled, old)]
    return edits


def revert_steps(
    text: str, rows: Sequence[Suggestion]
) -> tuple[list[tuple[Suggestion, list[Replacement]]], list[NotRevertible]]:
    """One note's accepted suggestions reverted latest first, each against the text the later ones'
    reverts leave (so acceptances close together come back exactly, as undo does); each step's edits
    apply to the text after the steps before it. Those whose text moved on are returned apart."""
    steps: list[tuple[Suggestion, list[Replacement]]] = []
    moved: list[NotRevertible] = []
    for row in sorted(rows, key=lambda r: (r.decided_at or r.created, r.pk), reverse=True):
        edits = revert_edits(text, row.undo.get("regions") or [])
        if edits is None:
            moved.append(NotRevertible(row, MOVED_ON))
            continue
        steps.append((row, edits))
        text = _apply(text, edits)
    return steps, moved


def as_if_rejected(raw: str, uids: Sequence[str]) -> str:
    """The note once these pending suggestions are rejected (rolling back rejects them first, so an
    accepted change right beside the assistant's later, pending one is judged on the text it will meet)."""
    spans: list[Span] = []
    for uid in uids:
        for change in own_changes(raw, uid):
            try:
                spans += reject_edits(raw, change)
            except StaleChangeError:
                continue
    try:
        return apply_spans(raw, merged_descending(spans))
    except ValueError:
        return raw


def _rows_in_window(assistant: Assistant, since: datetime | None, until: datetime) -> list[Suggestion]:
    rows = Suggestion.objects.filter(created__lt=until).select_related("decided_by", "rolled_back_by")
    if assistant.session_id:
        rows = rows.filter(session_id=assistant.session_id)
    else:
        rows = rows.filter(token=assistant.token)
    if since is not None:
        rows = rows.filter(created__gte=since)
    return list(rows.order_by("created", "pk"))


def _assistant(token: ApiToken | None, session_id: str) -> Assistant:
    session_id = session_id.strip()
    if (token is None) == (not session_id):
        raise RollbackError("Choose one assistant: a token, an OAuth grant or an MCP session.")
    client_name = ""
    if token is None:
        row = (
            Suggestion.objects.filter(session_id=session_id)
            .select_related("token", "token__user")
            .order_by("-created")
            .first()
        )
        token, client_name = (row.token, row.client_name) if row is not None else (None, "")
    label = assistant_label(token, session_id=session_id, client_name=client_name)
    return Assistant(token, session_id, client_name, label)


async def assistant_rollback_plan_in_store(
    *,
    store: DocStore,
    token: ApiToken | None = None,
    session_id: str = "",
    since: datetime | None,
    until: datetime | None = None,
) -> RollbackPlan:
    """What rolling the assistant back for ``[since, until)`` (until: now) would do, against the notes'
    live text. Raises RollbackError for a wrong request."""
    until = until or timezone.now()
    if since is not None and since >= until:
        raise RollbackError("The window must end after it starts.")
    assistant = await store.db(_assistant, token, session_id)
    rows = await store.db(_rows_in_window, assistant, since, until)
    plan = RollbackPlan(assistant, since, until)
    edits: dict[str, list[Suggestion]] = defaultdict(list)
    for row in rows:
        if row.status == Status.PENDING:
            plan.pending.append(row)
        elif row.status == Status.REVERTED:
            plan.rolled_back.append(row)
        elif row.status == Status.REVERTING:
            plan.not_revertible.append(NotRevertible(row, "someone is rolling it back right now"))
        elif row.status == Status.ACCEPTED:
            reason = _why_not(row)
            if reason is not None:
                plan.not_revertible.append(NotRevertible(row, reason))
            else:
                edits[row.doc_id].append(row)
    for doc_id, accepted in edits.items():
        room = await store.get(doc_id)
        if room is None:
            plan.not_revertible += [NotRevertible(row, GONE) for row in accepted]
            continue
        pending = [row.uid for row in plan.pending if row.doc_id == doc_id]
        text = as_if_rejected(str(room.doc.get(CONTENTS, type=Text)), pending)
        steps, moved = revert_steps(text, accepted)
        plan.revertible += [row for row, _ in steps]
        plan.not_revertible += moved
    plan.revertible.sort(key=lambda r: (r.created, r.pk))
    plan.not_revertible.sort(key=lambda n: (n.suggestion.created, n.suggestion.pk))
    return plan


# -- doing it ----------------------------------------------------------------------------------------------


def rollback_author(user: Any, assistant: Assistant) -> str:
    """How history names the reverting change: `rita (staff) rolled back claude (token #3)`."""
    if getattr(user, "pk", None):
        who = Actor("staff", user.get_username(), user_id=user.pk).label
    else:
        who = "server"
    return f"{who} rolled back {assistant.label}"


async def _revert(
    store: DocStore, rows: Sequence[Suggestion], *, user: Any, author: str, message: str
) -> tuple[list[Suggestion], list[NotRevertible]]:
    """Claim each row, revert the claimed ones in their notes (checked against the live text with no
    await from the check to the write), settle them; anything refused is released and listed."""
    claims: dict[int, RevertClaim] = {}
    refused: list[NotRevertible] = []
    for row in rows:
        claim = await store.db(claim_revert, pk=row.pk, user=user)
        if claim is None:
            refused.append(NotRevertible(row, TAKEN))
        else:
            claims[row.pk] = claim
    done: list[Suggestion] = []
    open_claims = dict(claims)
    try:
        by_doc: dict[str, list[Suggestion]] = defaultdict(list)
        for row in rows:
            if row.pk in claims:
                by_doc[row.doc_id].append(row)
        for doc_id, doc_rows in by_doc.items():
            room = await store.get(doc_id)
            if room is None:
                steps: list[tuple[Suggestion, list[Replacement]]] = []
                moved = [NotRevertible(row, GONE) for row in doc_rows]
            else:
                ytext = room.doc.get(CONTENTS, type=Text)
                current = str(ytext)
                steps, moved = revert_steps(current, doc_rows)
                if any(edits for _, edits in steps):
                    with room.transact(Origin("rollback", author=author)):
                        for _, edits in steps:
                            current = text_apply_edits(ytext, current=current, edits=edits)
                    await room.flushed()
            for item in moved:
                await store.db(release_revert, claim=open_claims.pop(item.suggestion.pk))
            refused += moved
            for row, _ in steps:
                claim = open_claims.pop(row.pk)
                if await store.db(settle_revert, claim=claim, user=user, message=message):
                    done.append(row)
                else:
                    refused.append(NotRevertible(row, "the rollback took too long and was taken over"))
    except BaseException:
        for claim in open_claims.values():
            await store.db(release_revert, claim=claim)
        raise
    return done, refused


def _log_rollback(*, user: Any, token: ApiToken | None, message: str) -> None:
    if token is None or not getattr(user, "pk", None):
        return
    LogEntry.objects.log_actions(
        user_id=user.pk, queryset=[token], action_flag=CHANGE, change_message=message, single_object=True
    )


async def assistant_rollback_in_store(*, store: DocStore, plan: RollbackPlan, user: Any) -> RollbackResult:
    """Roll back what ``plan`` lists: reject its pending suggestions (one bulk decision), revert its
    revertible accepted changes. Each is claimed first, so what changed since the plan (decided, undone,
    rolled back by someone else, text edited over) is left alone and reported."""
    who = user.get_username() if getattr(user, "pk", None) else "the server"
    note = f"Rolled back by {who}: {plan.assistant.label}'s suggestions {plan.window} were rolled back."
    result = RollbackResult(plan)
    decisions = await suggestion_bulk_decide(
        store=store, suggestions=plan.pending, user=user, accept=False, note=note
    )
    for decision in decisions:
        if decision.ok:
            result.rejected.append(decision.suggestion)
        else:
            result.not_rejected.append(NotRevertible(decision.suggestion, decision.reason))
    reverted, refused = await _revert(
        store,
        plan.revertible,
        user=user,
        author=rollback_author(user, plan.assistant),
        message=f"Rolled back: the accepted text was reverted ({plan.assistant.label} {plan.window})",
    )
    result.reverted = reverted
    result.not_reverted = [*plan.not_revertible, *refused]
    token = plan.assistant.token
    await store.db(_log_rollback, user=user, token=token, message=result.summary)
    return result


# -- sync entry points (the admin, the management command) -----------------------------------------------


def assistant_rollback_plan(
    *,
    token: ApiToken | None = None,
    session_id: str = "",
    since: datetime | None,
    until: datetime | None = None,
) -> RollbackPlan:
    return run_on_store(
        lambda store: assistant_rollback_plan_in_store(
            store=store, token=token, session_id=session_id, since=since, until=until
        )
    )


def assistant_rollback(*, plan: RollbackPlan, user: Any) -> RollbackResult:
    return run_on_store(lambda store: assistant_rollback_in_store(store=store, plan=plan, user=user))
