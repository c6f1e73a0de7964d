"""What the suggestion review pages show and do: the diff in context, Accept/Reject, bulk confirmation.

The admin class stays declarative; the decisions themselves are the services' (they write the document,
the status, ``decided_by`` and the ``LogEntry``). Everything shown here is HTML-escaped: suggestion text
comes from assistants and documents from anyone who can edit them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.contrib.admin import ModelAdmin, helpers
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseNotAllowed,
    JsonResponse,
)
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString, mark_safe

from lensrelay.docstore import persistence
from suggestions.audit import audit_records, audit_render
from suggestions.kinds import rules_of
from suggestions.lifecycle.cleaning import CLEANABLE, suggestion_clean_up
from suggestions.lifecycle.deciding import Decision, suggestion_bulk
from suggestions.lifecycle.undoing import (
    suggestion_batch_undo,
    suggestion_bulk_undo,
    suggestion_undo,
    undo_refusal,
    undo_window,
)
from suggestions.markup.criticmarkup import (
    Change,
    Span,
    StaleChangeError,
    accept_edits,
    apply_spans,
    own_changes,
    parse,
    parse_changes,
    reject_edits,
)
from suggestions.markup.diff import word_hunks
from suggestions.markup.integrity import markup_mismatch
from suggestions.markup.revising import revision_summary
from suggestions.models import Suggestion
from suggestions.permissions import can_review
from suggestions.review.posted import NOTE_MAX_CHARS, posted_decision, posted_note
from suggestions.review.review_page import summary
from suggestions.selectors import next_pending_suggestion

CONTENTS = "contents"
CONTEXT_CHARS = 160
CONTEXT_LINES = 3
BEFORE_LABEL = "Without this suggestion (rejected)"
AFTER_LABEL = "With this suggestion (accepted)"
_OPENING_WIDTH = 3  # "{++", "{--", "{~~", "{==", "{>>"


# -- the diff in context ----------------------------------------------------------------------------------


def without_metadata(text: str) -> str:
    """CriticMarkup with the ``{"author":…}@@`` prefixes removed, so other suggestions read as marks."""
    spans = [Span(m.start + _OPENING_WIDTH, m.content_start) for m in parse(text) if m.metadata is not None]
    return apply_spans(text, spans)


def _printable(text: str) -> str:
    # difflib marks its highlights with NUL/SOH characters in the line text; keep real ones out.
    return text.replace("\x00", "\ufffd").replace("\x01", "\ufffd")


def marks_html(text: str) -> SafeString:
    """Escaped text in which other suggestions show as marks (struck through, underlined), not markup."""
    pieces: list[SafeString] = []
    position = 0
    for change in parse_changes(text):
        pieces.append(escape(text[position : change.start]))
        author = change.author or "someone"
        pieces.append(
            format_html(
                '<span class="other-suggestion" title="Another pending suggestion, by {}">{}{}</span>',
                author,
                format_html("<del>{}</del>", change.old) if change.old else "",
                format_html("<ins>{}</ins>", change.new) if change.new and change.kind != "highlight" else "",
            )
        )
        position = change.end
    pieces.append(escape(text[position:]))
    return mark_safe("".join(pieces))  # every piece was escaped above


def _trimmed(text: str, *, lines_before: bool, lines_after: bool) -> str:
    """Unchanged text between changes, cut to CONTEXT_LINES lines next to each change."""
    lines = text.split("\n")
    keep = CONTEXT_LINES + 1
    if len(lines) <= 2 * keep:
        return text
    head = lines[:keep] if lines_after else []
    tail = lines[-keep:] if lines_before else []
    return "\n".join([*head, "⋯", *tail])


def diff_table(before: str, after: str, *, context: bool) -> SafeString:
    """The text without and with the suggestion as one flow: whole words struck through or underlined,
    wrapped to the page, other suggestions shown as marks. ``context`` keeps only lines near changes."""
    hunks = word_hunks(_printable(before), _printable(after))
    before = _printable(before)
    pieces: list[SafeString] = []
    position = 0
    for number, hunk in enumerate([*hunks, None]):
        end = hunk.start if hunk is not None else len(before)
        same = before[position:end]
        if context:
            same = _trimmed(same, lines_before=hunk is not None, lines_after=number > 0)
        pieces.append(format_html('<span class="same">{}</span>', marks_html(same)))
        if hunk is not None:
            pieces.append(format_html("<del>{}</del>", hunk.old) if hunk.old else mark_safe(""))
            pieces.append(format_html("<ins>{}</ins>", hunk.new) if hunk.new else mark_safe(""))
            position = hunk.end
    return format_html(
        '<div class="diff word-diff"><p class="legend"><del>{}</del> <ins>{}</ins></p>'
        '<div class="flow">{}</div></div>',
        BEFORE_LABEL,
        AFTER_LABEL,
        mark_safe("".join(pieces)),  # every piece was escaped by format_html
    )


def _line_start(raw: str, index: int) -> int:
    return raw.rfind("\n", 0, index) + 1


def _line_end(raw: str, index: int) -> int:
    end = raw.find("\n", index)
    return len(raw) if end < 0 else end


def _clip(context: str, *, keep: str) -> str:
    """Shorten context: keep its ``end`` (before a change), ``start`` (after one) or ``both`` ends."""
    if keep == "both":
        if len(context) <= 2 * CONTEXT_CHARS:
            return context
        return context[:CONTEXT_CHARS] + " … " + context[-CONTEXT_CHARS:]
    if len(context) <= CONTEXT_CHARS:
        return context
    return "…" + context[-CONTEXT_CHARS:] if keep == "end" else context[:CONTEXT_CHARS] + "…"


def _context_html(text: str, *, keep: str) -> SafeString:
    """Context around a change, clipped only outside other suggestions' marks (shown whole, as marks)."""
    changes = parse_changes(text)
    if not changes:
        return format_html("{}", _clip(text, keep=keep))
    first, last = changes[0].start, changes[-1].end
    before = _clip(text[:first], keep="end") if keep in ("end", "both") else text[:first]
    after = _clip(text[last:], keep="start") if keep in ("start", "both") else text[last:]
    return format_html("{}{}{}", before, marks_html(text[first:last]), after)


def _change_html(change: Change) -> SafeString:
    comment = change.comment.content if change.comment is not None else ""
    return format_html(
        "{}{}{}",
        format_html("<del>{}</del>", change.old) if change.old else "",
        format_html("<ins>{}</ins>", change.new) if change.new else "",
        format_html('<span class="suggestion-comment">{}</span>', comment) if comment else "",
    )


def line_groups(raw: str, changes: Sequence[Change]) -> list[list[Change]]:
    """The changes grouped by the lines they sit on: changes sharing a line are shown together."""
    groups: list[list[Change]] = []
    for change in sorted(changes, key=lambda c: c.start):
        if groups and _line_start(raw, change.start) <= _line_end(raw, groups[-1][-1].end):
            groups[-1].append(change)
        else:
            groups.append([change])
    return groups


def inline_lines(raw: str, group: Sequence[Change]) -> SafeString:
    """The lines holding these changes: deleted text struck through, added text underlined, the rest as
    context (other suggestions' marks shown without their metadata)."""
    pieces: list[SafeString] = []
    position = _line_start(raw, group[0].start)
    for number, change in enumerate(group):
        context = _context_html(raw[position : change.start], keep="end" if number == 0 else "both")
        pieces += [format_html('<span class="context">{}</span>', context), _change_html(change)]
        position = change.end
    tail = _context_html(raw[position : _line_end(raw, position)], keep="start")
    pieces.append(format_html('<span class="context">{}</span>', tail))
    return mark_safe("".join(pieces))  # every piece was escaped by format_html


@dataclass
class ReviewDiff:
    """What the change page shows: where the markup sits, and the document without and with it."""

    in_document: bool
    explanation: str = ""
    hunks: list[SafeString] = field(default_factory=list)
    table: SafeString | None = None


def review_diff(suggestion: Suggestion) -> ReviewDiff:
    rules = rules_of(suggestion)
    # A move, a delete, a new file or a file's whole content (JSON, canvas, HTML): no markup in a note.
    outside = rules.explained(suggestion) if rules.explained is not None else None
    if outside is not None:
        explanation, texts = outside
        return ReviewDiff(False, explanation, table=diff_table(*texts, context=True) if texts else None)
    raw = persistence.stored_text(suggestion.doc_id)
    changes = own_changes(raw, suggestion.uid) if raw is not None else []
    if raw is None or not changes:
        # Decided, stale or superseded: the markup is gone; show what was proposed, without context.
        return ReviewDiff(
            False,
            "The suggestion's markup is no longer in the document. It proposed:",
            table=diff_table(suggestion.old_text, suggestion.new_text, context=False),
        )
    try:
        rejected = apply_spans(raw, [s for c in changes for s in reject_edits(raw, c)])
        accepted = apply_spans(raw, [s for c in changes for s in accept_edits(raw, c)])
    except (StaleChangeError, ValueError):
        return ReviewDiff(False, "The suggestion's markup is damaged in the document.")
    explanation = (
        "" if len(changes) >= len(suggestion.hunks) else "Part of the suggestion's markup was edited away."
    )
    if not explanation and (mismatch := markup_mismatch(raw, suggestion)) is not None:
        explanation = f"Stale: {mismatch}."
    return ReviewDiff(
        True,
        explanation,
        hunks=[inline_lines(raw, group) for group in line_groups(raw, changes)],
        table=diff_table(without_metadata(rejected), without_metadata(accepted), context=True),
    )


# -- deciding -------------------------------------------------------------------------------------------


def _verb(accept: bool) -> str:
    return "accept" if accept else "reject"


def report(
    model_admin: ModelAdmin[Suggestion], request: HttpRequest, decisions: Sequence[Decision], *, accept: bool
) -> None:
    """One message per outcome: what applied (and what it did), what failed and why."""
    done = "Accepted" if accept else "Rejected"
    for decision in decisions:
        suggestion = decision.suggestion
        target = f"{suggestion.get_kind_display().lower()} of {suggestion.path} ({suggestion.uid})"
        if decision.ok:
            detail = f" ({decision.detail})" if decision.detail else ""
            if suggestion.accepted_with_changes:
                detail += f" with your changes: {revision_summary(suggestion.revised_hunks())}"
            model_admin.message_user(request, f"{done} the {target}{detail}.", messages.SUCCESS)
        else:
            model_admin.message_user(
                request, f"Could not {_verb(accept)} the {target}: {decision.reason}.", messages.ERROR
            )


def decide_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest, object_id: str) -> HttpResponse:
    """POST ``decision=accept|reject`` and an optional ``note`` (or ``clean_up`` for a stale suggestion);
    back to the page the reviewer came from, with a message."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not can_review(request.user):
        raise PermissionDenied
    suggestion = model_admin.get_object(request, unquote(object_id))
    if suggestion is None:
        raise Http404(f"No suggestion with id {object_id}")
    choice = request.POST.get("decision")
    if choice not in ("accept", "reject", "clean_up"):
        return HttpResponseBadRequest("decision must be accept, reject or clean_up")
    if choice == "clean_up":
        _clean_up(model_admin, request, suggestion)
        return redirect(after_decision_url(request, suggestion))
    decision = posted_decision(request, suggestion=suggestion, accept=choice == "accept")
    report(model_admin, request, [decision], accept=choice == "accept")
    return redirect(after_decision_url(request, suggestion))


def after_decision_url(request: HttpRequest, decided: Suggestion) -> str:
    """Where the reviewer lands: the page they came from (``next``), else the next pending suggestion,
    else the list of what is still pending."""
    wanted = request.POST.get("next", "")
    if wanted and url_has_allowed_host_and_scheme(wanted, {request.get_host()}, request.is_secure()):
        return wanted
    following = next_pending_suggestion(after=decided)
    if following is not None:
        return reverse("admin:suggestions_suggestion_change", args=[following.pk])
    return reverse("admin:suggestions_suggestion_changelist")


def bulk_decide(
    model_admin: ModelAdmin[Suggestion], request: HttpRequest, queryset: QuerySet[Suggestion], *, accept: bool
) -> TemplateResponse | None:
    """The ``delete_selected`` convention: a confirmation page first; act when it posts back ``post=yes``."""
    suggestions = list(queryset.order_by("created"))
    if request.POST.get("post") == "yes":
        decisions = suggestion_bulk(
            suggestions=suggestions, user=request.user, accept=accept, note=posted_note(request)
        )
        level = messages.SUCCESS if all(d.ok for d in decisions) else messages.WARNING
        model_admin.message_user(request, summary(decisions, accept=accept), level)
        return None
    opts = model_admin.opts
    context: dict[str, Any] = {
        **model_admin.admin_site.each_context(request),
        "title": f"{_verb(accept).capitalize()} the selected suggestions?",
        "opts": opts,
        "accept": accept,
        "verb": _verb(accept),
        "action_name": f"{_verb(accept)}_selected",
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "queryset": suggestions,
        "will_change": [s for s in suggestions if s.is_pending],
        "will_skip": [s for s in suggestions if not s.is_pending],
        "note_max_chars": NOTE_MAX_CHARS,
        "media": model_admin.media,
    }
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(
        request,
        f"admin/{opts.app_label}/{opts.model_name}/decide_selected_confirmation.html",
        context,
    )


def _clean_up(model_admin: ModelAdmin[Suggestion], request: HttpRequest, suggestion: Suggestion) -> None:
    """Remove a stale suggestion's leftovers as a recorded decision, and say how it went."""
    decision = suggestion_clean_up(suggestion=suggestion, user=request.user)
    target = f"{suggestion.get_kind_display().lower()} of {suggestion.path} ({suggestion.uid})"
    if decision.ok:
        model_admin.message_user(request, f"Cleaned up the {target} ({decision.detail}).", messages.SUCCESS)
    else:
        model_admin.message_user(
            request, f"Could not clean up the {target}: {decision.reason}.", messages.ERROR
        )


def bulk_clean_up(
    model_admin: ModelAdmin[Suggestion], request: HttpRequest, queryset: QuerySet[Suggestion]
) -> TemplateResponse | None:
    """Confirm, then remove each selected stale suggestion's leftovers as a recorded decision."""
    suggestions = list(queryset.order_by("created"))
    if request.POST.get("post") == "yes":
        for suggestion in suggestions:
            _clean_up(model_admin, request, suggestion)
        return None
    opts = model_admin.opts
    context: dict[str, Any] = {
        **model_admin.admin_site.each_context(request),
        "title": "Clean up the selected stale suggestions?",
        "opts": opts,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "queryset": suggestions,
        "will_change": [s for s in suggestions if s.status in CLEANABLE and rules_of(s).marked],
        "media": model_admin.media,
    }
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(
        request, f"admin/{opts.app_label}/{opts.model_name}/clean_up_confirmation.html", context
    )


# -- undoing a decision ------------------------------------------------------------------------------------


def undo_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest, uid: str) -> HttpResponse:
    """POST: undo the decision on the suggestion ``uid`` (``batch=1``: the whole bulk decision it was part
    of). Answers JSON ``{ok, message}`` for the editor page; a form that sends ``next`` is redirected
    there with the message instead."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not can_review(request.user):
        return JsonResponse(
            {"ok": False, "message": "Undoing a decision needs the review permission."}, status=403
        )
    suggestion = Suggestion.objects.filter(uid=uid).first()
    if suggestion is None:
        return JsonResponse({"ok": False, "message": f"No suggestion {uid}."}, status=404)
    whole_batch = request.POST.get("batch") in ("1", "true", "yes")
    undo = suggestion_batch_undo if whole_batch else suggestion_undo
    result = undo(suggestion=suggestion, user=request.user)
    wanted = request.POST.get("next", "")
    if wanted and url_has_allowed_host_and_scheme(wanted, {request.get_host()}, request.is_secure()):
        model_admin.message_user(request, result.message, messages.SUCCESS if result.ok else messages.ERROR)
        return redirect(wanted)
    return JsonResponse({"ok": result.ok, "message": result.message}, status=200 if result.ok else 409)


def bulk_undo(
    model_admin: ModelAdmin[Suggestion], request: HttpRequest, queryset: QuerySet[Suggestion]
) -> TemplateResponse | None:
    """Confirm, then undo the selected suggestions' decisions together: all of them or none."""
    suggestions = list(queryset.order_by("created"))
    if request.POST.get("post") == "yes":
        result = suggestion_bulk_undo(suggestions=suggestions, user=request.user)
        model_admin.message_user(request, result.message, messages.SUCCESS if result.ok else messages.ERROR)
        return None
    refusals = {s.pk: undo_refusal(s) for s in suggestions}
    opts = model_admin.opts
    context: dict[str, Any] = {
        **model_admin.admin_site.each_context(request),
        "title": "Undo the decisions on the selected suggestions?",
        "opts": opts,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "queryset": suggestions,
        "will_undo": [s for s in suggestions if refusals[s.pk] is None],
        "refused": [(s, refusals[s.pk]) for s in suggestions if refusals[s.pk] is not None],
        "window": int(undo_window().total_seconds() // 60),
        "media": model_admin.media,
    }
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(
        request, f"admin/{opts.app_label}/{opts.model_name}/undo_confirmation.html", context
    )


def audit_download(request: HttpRequest, queryset: QuerySet[Suggestion], *, fmt: str) -> HttpResponse:
    """The selected suggestions' audit records as a file download (nothing changes)."""
    body = audit_render(audit_records(suggestions=queryset), fmt=fmt)
    content_type = "text/csv; charset=utf-8" if fmt == "csv" else "application/json"
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="suggestions-audit.{fmt}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
