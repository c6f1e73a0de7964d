"""The review page of one document: the note rendered with its pending suggestions in place, a card per
suggestion with Accept / Reject (and its discussion), Accept all / Reject all, the note's comment threads,
and the next document waiting for review.

Views stay thin: the page's content comes from ``document_review`` (a plain function of the stored text
and the rows), decisions from the services in ``suggestions.lifecycle.deciding``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.timesince import timesince

from lensrelay.docstore import persistence
from lensrelay.docstore.offload import offloaded_sync
from lensrelay.docstore.store import DocStore, run_on_store
from lensrelay.links.resolve import LinkTarget
from lensrelay.models import Document
from suggestions.errors import SuggestionError
from suggestions.kinds import rules_of
from suggestions.lifecycle.commenting import (
    MAX_COMMENT_CHARS,
    Commenter,
    thread_reply,
    thread_resolve,
)
from suggestions.lifecycle.deciding import Decision, suggestion_bulk
from suggestions.lifecycle.undoing import recent_decisions, undo_window
from suggestions.markup.criticmarkup import Change, parse_changes
from suggestions.markup.diff import unified_diff
from suggestions.markup.integrity import markup_mismatch
from suggestions.markup.threads import thread_of
from suggestions.markup.undo_record import located
from suggestions.models import Suggestion, Thread, ThreadComment
from suggestions.permissions import can_review
from suggestions.review.posted import NOTE_MAX_CHARS, posted_note
from suggestions.review.rendering import (
    FolderLinks,
    RenderedNote,
    change_summary,
    render_note_linked,
    shown_changes,
    suggestion_uid,
)
from suggestions.review.thread_views import may_comment, may_resolve, threads_of_document
from suggestions.selectors import (
    next_document_with_pending,
    pending_of_document,
    stale_of_document,
    thread_or_pending_suggestion,
)

# A note longer than this is rendered in a heavy-work process (lensrelay.docstore.offload): rendering a
# megabyte takes seconds of CPU, and in the request thread it would starve the event loop of the GIL.
RENDER_IN_PROCESS_CHARS = 64 * 1024
POLL_MILLISECONDS = 1500
NO_REVIEW_REASON = (
    "You can read this review, but deciding needs the permission “Can review (accept or reject) "
    "suggestions”. Ask an administrator to grant it."
)


@dataclass
class ShownComment:
    comment: ThreadComment
    age: str


@dataclass
class ShownThread:
    """A comment thread as the page shows it: in the Comments section, or under its suggestion's card."""

    thread: Thread
    comments: list[ShownComment]
    decided: str = ""  # a decided suggestion's discussion: what became of it ("accepted")

    @property
    def resolved(self) -> bool:
        return self.thread.status == Thread.Status.RESOLVED


@dataclass
class Card:
    """One suggestion beside the note: pending, or stale while its (broken) markup is still in the note."""

    suggestion: Suggestion
    number: int | None  # its mark's number in the note, None when it has no mark (move, delete)
    age: str
    in_note: bool
    comment: str
    diff: str = ""  # a file replacement's change (the file holds no markup to show it in place)
    stale_reason: str = ""  # why a stale suggestion cannot be accepted or rejected as proposed
    discussion: ShownThread | None = None  # its thread, once someone replied to it

    @property
    def stale(self) -> bool:
        return self.suggestion.status == Suggestion.Status.STALE

    @property
    def revisable(self) -> bool:
        """Whether the reviewer may change its inserted text before accepting (its markup is in the note
        and it inserts something)."""
        return (
            self.in_note
            and not self.stale
            and rules_of(self.suggestion).marked
            and any(hunk.get("new") for hunk in self.suggestion.hunks or [])
        )


@dataclass
class RecentDecision:
    """A decision on this document that can still be undone; a bulk one is listed once, as a whole."""

    suggestion: Suggestion
    count: int  # suggestions decided together (1: decided alone)
    age: str
    number: int | None = None


@dataclass
class DocumentReview:
    doc_id: str
    path: str
    document: Document | None
    rendered: RenderedNote | None
    cards: list[Card] = field(default_factory=list)
    version: str = ""
    pending: int = 0
    recent: list[RecentDecision] = field(default_factory=list)
    threads: list[ShownThread] = field(default_factory=list)  # the Comments section, open ones first

    @property
    def open_threads(self) -> int:
        return sum(1 for shown in self.threads if not shown.resolved)

    @property
    def decidable(self) -> int:
        """Cards Accept all / Reject all would decide (stale ones cannot be)."""
        return sum(1 for card in self.cards if not card.stale)


def _recent(rows: list[Suggestion], numbering: dict[str, int]) -> list[RecentDecision]:
    listed: list[RecentDecision] = []
    batches: dict[str, RecentDecision] = {}
    for row in rows:
        if row.decision_batch and row.decision_batch in batches:
            batches[row.decision_batch].count += 1
            continue
        entry = RecentDecision(row, 1, age_of(row.decided_at), numbering.get(row.uid))
        listed.append(entry)
        if row.decision_batch:
            batches[row.decision_batch] = entry
    return listed


def document_numbering(
    raw: str, decided: list[Suggestion], *, changes: list[Change] | None = None
) -> dict[str, int]:
    """Each suggestion's number: 1, 2, 3… in the order its marks stand in the note, counting the ones
    decided within the undo window where they stood, so numbers stay put while a reviewer decides.
    ``changes`` are ``raw``'s, when the caller parsed them already."""
    positions: dict[str, int] = {}
    for change in parse_changes(raw) if changes is None else changes:
        uid = suggestion_uid(change)
        if uid:
            positions.setdefault(uid, change.start)
    for row in decided:
        regions = (row.undo or {}).get("regions") or []
        if regions and row.uid not in positions:
            found = located(raw, regions[0])
            positions[row.uid] = found if found is not None else int(regions[0].get("at", 0))
    ordered = sorted(positions, key=lambda uid: positions[uid])
    return {uid: number for number, uid in enumerate(ordered, start=1)}


def _folder_links(document: Document | None) -> FolderLinks | None:
    """Wikilinks resolve within the note's own folder, to that document's admin page."""
    if document is None:
        return None
    siblings = Document.objects.filter(folder_id=document.folder_id, type="markdown")
    # One reverse() for the whole folder: a link's URL differs from the next only by the primary key.
    pattern = reverse("admin:lensrelay_document_change", args=["__pk__"])
    urls = {
        LinkTarget(folder=folder, path=path): pattern.replace("__pk__", str(pk))
        for pk, folder, path in siblings.values_list("pk", "folder__name", "path")
    }
    return FolderLinks(LinkTarget(folder=document.folder.name, path=document.path), urls)


def rendered_for_review(raw: str, *, document: Document | None, numbering: dict[str, int]) -> RenderedNote:
    """The note rendered for its review page: a long one in a heavy-work process, the thread waiting."""
    links = _folder_links(document)
    if len(raw) > RENDER_IN_PROCESS_CHARS:
        return offloaded_sync(render_note_linked, raw, links, numbering)
    return render_note_linked(raw, links, numbering)


def age_of(created: Any) -> str:
    """ "3 hours ago", "just now": the largest unit only, as a reviewer scans it."""
    if (timezone.now() - created).total_seconds() < 60:
        return "just now"
    return f"{timesince(created, timezone.now()).split(',')[0]} ago"


def document_review(*, doc_id: str, unless_version: str | None = None, render: bool = True) -> DocumentReview:
    """What the review page shows. With ``unless_version``, an unchanged document skips the rendering
    (``rendered`` is None, ``cards`` empty): the open page polls, and most polls find nothing new. With
    ``render`` False the cards come without the note (``rendered`` None): what Accept all needs."""
    document = Document.objects.select_related("folder").filter(doc_id=doc_id).first()
    pending = pending_of_document(doc_id=doc_id)
    if document is None and not pending:
        raise Http404("No such document")
    path = document.user_path if document is not None else pending[0].path
    raw = persistence.stored_text(doc_id)
    decided = recent_decisions(doc_id=doc_id)
    changes = parse_changes(raw) if raw else []
    in_text = {suggestion_uid(c) for c in changes} - {""}
    # A suggestion a person typed inside is stale, but its marks are still in the note: it keeps a card.
    stale = [s for s in stale_of_document(doc_id=doc_id) if s.uid in in_text]
    fingerprint = hashlib.sha256(
        "\x00".join(
            [
                raw or "",
                *(f"{s.uid}:{s.status}" for s in [*pending, *stale]),
                *(f"{s.uid}:{s.status}" for s in decided),
                *_thread_states(doc_id),
            ]
        ).encode()
    ).hexdigest()[:16]
    if fingerprint == unless_version:
        return DocumentReview(doc_id, path, document, None, [], fingerprint, pending=len(pending))
    numbering = document_numbering(raw or "", decided, changes=changes)
    markdown = raw is not None and (document is None or document.type == "markdown")
    rendered = (
        rendered_for_review(raw, document=document, numbering=numbering)
        if raw is not None and markdown and render
        else None
    )
    shown = rendered.changes if rendered else shown_changes(raw) if raw is not None and markdown else []
    comments: dict[str, str] = {}
    for change in shown:
        # The comment touching a suggestion is its reason, unless it is the first of its discussion.
        reason = change.comment is not None and thread_of(change.comment) is None
        comments.setdefault(suggestion_uid(change), change_summary(change)["comment"] if reason else "")
    cards = [
        Card(
            s,
            numbering.get(s.uid) if s.uid in in_text else None,
            age_of(s.created),
            s.uid in comments,
            comments.get(s.uid) or s.comment,
            unified_diff(s.old_text, s.new_text, path=s.path) if rules_of(s).whole_file else "",
            (markup_mismatch(raw or "", s) or "its markup was edited")
            if s.status == Suggestion.Status.STALE
            else "",
        )
        for s in [*pending, *stale]
    ]
    cards.sort(key=lambda card: (card.number is None, card.number or 0, card.suggestion.created))
    return DocumentReview(
        doc_id,
        path,
        document,
        rendered,
        cards,
        fingerprint,
        pending=len(pending),
        recent=_recent(decided, numbering),
        threads=_shown_threads(doc_id, cards) if render else [],  # Accept all shows the cards only
    )


def _thread_states(doc_id: str) -> list[str]:
    """What changes a thread as the page shows it (a comment, a resolution, its passage), for the version:
    a reply to a detached thread changes its rows only."""
    rows = Thread.objects.filter(doc_id=doc_id).annotate(said=Count("comments")).order_by("pk")
    return [
        f"{uid}:{status}:{detached}:{said}:{updated.isoformat()}"
        for uid, status, detached, said, updated in rows.values_list(
            "uid", "status", "detached", "said", "updated"
        )
    ]


def _shown_threads(doc_id: str, cards: list[Card]) -> list[ShownThread]:
    """The note's threads for the Comments section, open ones first; a suggestion's discussion goes under
    its card instead, while it has one."""
    by_suggestion = {card.suggestion.pk: card for card in cards}
    listed: list[ShownThread] = []
    for thread in threads_of_document(doc_id=doc_id):
        shown = ShownThread(thread, [ShownComment(c, age_of(c.created)) for c in thread.comments.all()])
        card = by_suggestion.get(thread.suggestion_id) if thread.suggestion_id is not None else None
        if card is not None:
            card.discussion = shown
            continue
        if thread.suggestion is not None:
            shown.decided = thread.suggestion.get_status_display().lower()
        listed.append(shown)
    listed.sort(key=lambda shown: shown.resolved)  # stable: attached before detached, then by age
    return listed


def _context(
    model_admin: ModelAdmin[Suggestion], request: HttpRequest, review: DocumentReview
) -> dict[str, Any]:
    can_decide = can_review(request.user)
    return {
        "review": review,
        "can_decide": can_decide,
        "can_comment": may_comment(request.user),
        # Threads this person may resolve or reopen (a suggestion's discussion goes with its decision).
        "resolvable": {
            shown.thread.uid
            for shown in review.threads
            if shown.thread.suggestion_id is None and may_resolve(request.user, shown.thread)
        },
        "comment_max_chars": MAX_COMMENT_CHARS,
        "thread_url": reverse("admin:suggestions_suggestion_review_thread", args=[review.doc_id]),
        "no_review_reason": "" if can_decide else NO_REVIEW_REASON,
        "note_max_chars": NOTE_MAX_CHARS,
        "here": reverse("admin:suggestions_suggestion_review", args=[review.doc_id]),
        "undo_minutes": max(1, int(undo_window().total_seconds() // 60)),
        "decide_all_url": reverse("admin:suggestions_suggestion_decide_all", args=[review.doc_id]),
    }


def review_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest, doc_id: str) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    review = document_review(doc_id=doc_id)
    following = next_document_with_pending(after_doc_id=doc_id)
    context = {
        **model_admin.admin_site.each_context(request),
        **_context(model_admin, request, review),
        "opts": model_admin.opts,
        "title": f"Review {review.path}",
        "state_url": reverse("admin:suggestions_suggestion_review_state", args=[doc_id]),
        "next_url": reverse("admin:suggestions_suggestion_review", args=[following]) if following else "",
        "decide_all_url": reverse("admin:suggestions_suggestion_decide_all", args=[doc_id]),
        "poll_ms": POLL_MILLISECONDS,
    }
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(request, "admin/suggestions/review/document.html", context)


def review_state_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest, doc_id: str) -> HttpResponse:
    """What the open page polls: the version, and the live part of the page when it changed."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    review = document_review(doc_id=doc_id, unless_version=request.GET.get("since"))
    body: dict[str, Any] = {"version": review.version, "pending": review.pending}
    if review.version != request.GET.get("since"):
        body["html"] = render_to_string(
            "admin/suggestions/review/live.html", _context(model_admin, request, review), request=request
        )
    return JsonResponse(body)


# -- Comment threads ------------------------------------------------------------------------------------


THREAD_ACTIONS = ("reply", "resolve", "reopen")


def thread_post_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest, doc_id: str) -> HttpResponse:
    """POST from the page's forms: ``action=reply`` (``thread``, ``text``; a pending suggestion's id starts
    its discussion), ``resolve`` or ``reopen`` (``thread``). Back to the page at the thread, with a message.

    Whoever may open the review page reads the threads on it (they read the note); replying and resolving
    follow the rules of the thread endpoints (``thread_views``): people who may suggest, edit live or
    review reply; the thread's starter or a reviewer resolves. The thread services do the writing."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    user = request.user
    action = request.POST.get("action", "")
    if action not in THREAD_ACTIONS or (action == "reply" and not may_comment(user)):
        raise PermissionDenied
    uid = request.POST.get("thread", "")
    target = thread_or_pending_suggestion(uid=uid, doc_id=doc_id, suggestion=action == "reply")
    if target is None:
        raise Http404("No such thread in this note")
    discussion = isinstance(target, Suggestion) or target.suggestion_id is not None
    anchor = f"{'card' if discussion else 'thread'}-{target.uid}"
    commenter = Commenter(author=user.get_username(), person_id=user.pk)
    if action == "reply":
        text = request.POST.get("text", "")
        found = target

        async def reply(store: DocStore) -> ThreadComment:
            return await thread_reply(store=store, thread=found, commenter=commenter, body=text)

        refusal = _refusal(lambda: run_on_store(reply))
        return _back(model_admin, request, doc_id, anchor, refusal, "Your reply was added.")
    if not isinstance(target, Thread) or discussion or not may_resolve(user, target):
        raise PermissionDenied  # a suggestion's discussion goes with its decision
    resolved = action == "resolve"
    thread = target

    async def resolve(store: DocStore) -> Thread:
        return await thread_resolve(store=store, thread=thread, commenter=commenter, resolved=resolved)

    success = "The thread was resolved." if resolved else "The thread was reopened."
    return _back(model_admin, request, doc_id, anchor, _refusal(lambda: run_on_store(resolve)), success)


def _back(
    model_admin: ModelAdmin[Suggestion],
    request: HttpRequest,
    doc_id: str,
    anchor: str,
    refusal: str | None,
    success: str = "",
) -> HttpResponse:
    """To the review page at the thread (or card), saying what was done or why nothing was."""
    if refusal is None:
        model_admin.message_user(request, success, messages.SUCCESS)
    else:
        model_admin.message_user(request, f"Nothing was changed: {refusal}", messages.WARNING)
    back = reverse("admin:suggestions_suggestion_review", args=[doc_id])
    return redirect(f"{back}#{quote(anchor, safe='-')}")


def _refusal(work: Callable[[], object]) -> str | None:
    """Run ``work``; why the thread services refused it, or None when done."""
    try:
        work()
    except SuggestionError as exc:
        return str(exc).removeprefix("Error: ")
    return None


# -- Accept all / Reject all ----------------------------------------------------------------------------


def summary(decisions: Sequence[Decision], *, accept: bool) -> str:
    """One line for many decisions: "5 accepted, 1 stale: part of the suggestion's markup was edited away"."""
    done = sum(1 for d in decisions if d.ok)
    parts = [f"{done} {'accepted' if accept else 'rejected'}"]
    failures: dict[tuple[str, str], list[str]] = {}
    for decision in decisions:
        if not decision.ok:
            label = "stale" if decision.suggestion.status == Suggestion.Status.STALE else "not decided"
            failures.setdefault((label, decision.reason), []).append(decision.suggestion.uid)
    for (label, reason), uids in failures.items():
        parts.append(f"{len(uids)} {label}: {reason} ({', '.join(uids)})")
    return ", ".join(parts)


def decide_all_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest, doc_id: str) -> HttpResponse:
    """GET: confirm; POST ``post=yes``: decide every pending suggestion of the document, then one summary."""
    if not can_review(request.user):
        raise PermissionDenied
    accept = request.POST.get("decision", request.GET.get("decision")) == "accept"
    review = document_review(doc_id=doc_id, render=False)  # the cards only: the note is not shown
    back = reverse("admin:suggestions_suggestion_review", args=[doc_id])
    if request.method == "POST" and request.POST.get("post") == "yes":
        chosen = set(request.POST.getlist("uid"))
        suggestions = [c.suggestion for c in review.cards if c.suggestion.uid in chosen and not c.stale]
        decisions = suggestion_bulk(
            suggestions=suggestions, user=request.user, accept=accept, note=posted_note(request)
        )
        level = messages.SUCCESS if all(d.ok for d in decisions) else messages.WARNING
        model_admin.message_user(request, summary(decisions, accept=accept), level)
        return redirect(back)
    verb = "accept" if accept else "reject"
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": f"{verb.capitalize()} every pending suggestion in {review.path}?",
        "review": review,
        "accept": accept,
        "verb": verb,
        "back": back,
        "note_max_chars": NOTE_MAX_CHARS,
    }
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(request, "admin/suggestions/review/decide_all.html", context)
