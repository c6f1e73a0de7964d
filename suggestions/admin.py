"""Review of suggestions in the admin: browse with the view permission, decide with the review permission.

Rows are a record of what assistants proposed, so nobody adds, edits or deletes them here; the only
changes are decisions, made through the services (see ``admin_views``).
"""

from __future__ import annotations

import functools
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from lensrelay.adminbase import ModelAdmin
from lensrelay.docstore.store import run_on_store
from suggestions.kinds import rules_of
from suggestions.lifecycle.moving import delete_linking_paths
from suggestions.lifecycle.undoing import DECIDED, undo_refusal
from suggestions.markup.shown import PREVIEW_CHARS, clip
from suggestions.models import Suggestion
from suggestions.permissions import can_review
from suggestions.review import (
    admin_views,
    editor_files,
    editor_links,
    editor_page,
    editor_tree,
    email_page,
    inbox_page,
    review_page,
    rollback_page,
    thread_views,
)
from suggestions.review.posted import NOTE_MAX_CHARS

MAX_PREVIEW_HUNKS = 3


class StatusFilter(admin.SimpleListFilter):
    """Status, opening on "Pending": reviewers come for what waits; "All" shows every row."""

    title = "status"
    parameter_name = "status"
    ALL = "all"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [*Suggestion.Status.choices, (self.ALL, "All")]

    def choices(self, changelist: Any) -> Any:
        current = self.value() or Suggestion.Status.PENDING
        for value, label in self.lookup_choices:
            yield {
                "selected": current == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Suggestion]) -> QuerySet[Suggestion]:
        value = self.value() or Suggestion.Status.PENDING
        return queryset if value == self.ALL else queryset.filter(status=value)


CONTEXT_PREVIEW_CHARS = 24


def _clip_inline(text: str, limit: int = PREVIEW_CHARS) -> str:
    """Shortened, line breaks shown as ⏎, its edge spaces kept: they separate it from the words around."""
    flat = text.replace("\n", "⏎")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _hunk_preview(old: str, new: str, before: str = "", after: str = "") -> SafeString:
    """The change with a few words of the line around it, so ``+ main`` reads as where it goes."""
    if before or after:
        flat_before, flat_after = before.replace("\t", " "), after.replace("\t", " ")
        return format_html(
            '<span class="suggestion-context">{}</span>{}{}<span class="suggestion-context">{}</span>',
            ("…" + flat_before[-CONTEXT_PREVIEW_CHARS:])
            if len(flat_before) > CONTEXT_PREVIEW_CHARS
            else flat_before,
            format_html('<del class="suggestion-old">{}</del>', _clip_inline(old)) if old else "",
            format_html('<ins class="suggestion-new">{}</ins>', _clip_inline(new)) if new else "",
            (flat_after[:CONTEXT_PREVIEW_CHARS] + "…")
            if len(flat_after) > CONTEXT_PREVIEW_CHARS
            else flat_after,
        )
    if old and new:
        return format_html(
            '<del class="suggestion-old">{}</del> → <ins class="suggestion-new">{}</ins>',
            clip(old),
            clip(new),
        )
    if new:
        return format_html('+ <ins class="suggestion-new">{}</ins>', clip(new))
    return format_html('<del class="suggestion-old">{}</del>', clip(old))


@admin.register(Suggestion)
class SuggestionAdmin(ModelAdmin):
    list_display = ("path", "kind", "status", "preview", "author", "age", "decided_by", "review_link")
    list_display_links = ("path",)
    list_filter = (
        StatusFilter,
        "kind",
        "folder",
        ("document", admin.RelatedOnlyFieldListFilter),
        "author",
        "created",
        "decided_at",
    )
    ordering = ("path", "created")
    list_select_related = ("folder", "decided_by")
    search_fields = ("path", "new_path", "old_text", "new_text", "note", "comment", "uid")
    actions = (
        "accept_selected",
        "reject_selected",
        "undo_selected",
        "clean_up_selected",
        "export_csv",
        "export_json",
    )
    # A reader's page: what, by whom, what became of it; the ids, session and positions stay folded away.
    readonly_fields = ("what", "proposed", "rolled_back")
    fieldsets = (
        (None, {"fields": ("what", "proposed", "comment", "status", "decided_by", "decided_at", "note")}),
        (
            "Technical details",
            {
                "classes": ("collapse",),
                "fields": (
                    "uid",
                    "document",
                    "folder",
                    "token",
                    "client_name",
                    "session_id",
                    "tool",
                    "superseded_by",
                    "markup",
                    "doc_id",
                    "hunks",
                ),
            },
        ),
    )

    @admin.display(description="Suggestion")
    def what(self, obj: Suggestion) -> str:
        return rules_of(obj).what(obj)

    @admin.display(description="Rolled back")
    def rolled_back(self, obj: Suggestion) -> str:
        """Who rolled the accepted text back, and when (suggestions/lifecycle/rollback.py)."""
        if obj.rolled_back_at is None:
            return "-"
        by = obj.rolled_back_by.get_username() if obj.rolled_back_by is not None else "someone"
        doing = "is rolling it back" if obj.status == Suggestion.Status.REVERTING else "rolled it back"
        return f"{by} {doing} ({obj.rolled_back_at:%Y-%m-%d %H:%M:%S} UTC)"

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None or obj.rolled_back_at is None:
            return fieldsets
        (name, options), *rest = fieldsets
        return [(name, {**options, "fields": (*options["fields"], "rolled_back")}), *rest]

    @admin.display(description="Proposed")
    def proposed(self, obj: Suggestion) -> str:
        client = f" ({obj.client_name})" if obj.client_name else ""
        return f"by {obj.author}{client}, {review_page.age_of(obj.created)} ({obj.created:%Y-%m-%d %H:%M})"

    # -- permissions: browse with view (or review), decide with review; never add, edit or delete rows --

    def has_review_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return can_review(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or self.has_review_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    # -- changelist columns -------------------------------------------------------------------------------

    @admin.display(description="Old → new")
    def preview(self, obj: Suggestion) -> SafeString:
        preview = rules_of(obj).preview
        if preview is not None:  # no hunks to show
            return preview(obj)
        hunks = obj.hunks or [{"old": obj.old_text, "new": obj.new_text}]
        shown = [
            _hunk_preview(h.get("old", ""), h.get("new", ""), h.get("before", ""), h.get("after", ""))
            for h in hunks[:MAX_PREVIEW_HUNKS]
        ]
        if len(hunks) > MAX_PREVIEW_HUNKS:
            shown.append(format_html("… and {} more", len(hunks) - MAX_PREVIEW_HUNKS))
        return format_html_join(mark_safe(" · "), "{}", ((piece,) for piece in shown))

    @admin.display(description="Age", ordering="created")
    def age(self, obj: Suggestion) -> str:
        return review_page.age_of(obj.created)

    @admin.display(description="Review")
    def review_link(self, obj: Suggestion) -> SafeString | str:
        if not obj.is_pending or not obj.doc_id:  # a new file exists only once accepted
            return ""
        url = reverse("admin:suggestions_suggestion_review", args=[obj.doc_id])
        return format_html('<a class="button" style="white-space: nowrap" href="{}">Review</a>', url)

    # -- the change page: diff in context, Accept / Reject ---------------------------------------------------

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        extra = {"no_review_reason": review_page.NO_REVIEW_REASON, **(extra_context or {})}
        return super().changelist_view(request, extra)

    def get_urls(self) -> list[URLPattern]:
        decide = path(
            "<path:object_id>/decide/",
            self.admin_site.admin_view(self.decide_view),
            name="suggestions_suggestion_decide",
        )
        review = [
            path(
                "document/<str:doc_id>/review/",
                self.admin_site.admin_view(self.review_view),
                name="suggestions_suggestion_review",
            ),
            path(
                "document/<str:doc_id>/review/state/",
                self.admin_site.admin_view(self.review_state_view),
                name="suggestions_suggestion_review_state",
            ),
            path(
                "document/<str:doc_id>/review/thread/",
                self.admin_site.admin_view(lambda r, doc_id: review_page.thread_post_view(self, r, doc_id)),
                name="suggestions_suggestion_review_thread",
            ),
            path(
                "document/<str:doc_id>/decide-all/",
                self.admin_site.admin_view(self.decide_all_view),
                name="suggestions_suggestion_decide_all",
            ),
        ]
        way_in = path(
            "open/",
            self.admin_site.admin_view(lambda r: editor_page.open_view(self, r)),
            name="suggestions_suggestion_open",
        )
        inbox = path(
            "inbox/",
            self.admin_site.admin_view(lambda r: inbox_page.inbox_view(self, r)),
            name="suggestions_suggestion_inbox",
        )
        email = path(
            "email/",
            self.admin_site.admin_view(lambda r: email_page.email_view(self, r)),
            name="suggestions_suggestion_email",
        )
        rollback = path(
            "rollback/",
            self.admin_site.admin_view(lambda r: rollback_page.rollback_view(self, r)),
            name="suggestions_suggestion_rollback",
        )
        undo = path(
            "<str:uid>/undo/", self.admin_site.admin_view(self.undo_view), name="suggestions_suggestion_undo"
        )
        editor = [
            path(
                "document/<str:doc_id>/edit/",
                self.admin_site.admin_view(lambda r, doc_id: editor_page.editor_view(self, r, doc_id)),
                name="suggestions_suggestion_editor",
            ),
            path(
                "document/<str:doc_id>/edit/pending/",
                self.admin_site.admin_view(lambda r, doc_id: editor_page.pending_view(self, r, doc_id)),
                name="suggestions_suggestion_editor_pending",
            ),
            path(
                "document/<str:doc_id>/file/",
                self.admin_site.admin_view(lambda r, doc_id: editor_page.file_view(self, r, doc_id)),
                name="suggestions_suggestion_editor_file",
            ),
            path(
                "document/<str:doc_id>/edit/attach/",
                self.admin_site.admin_view(lambda r, doc_id: editor_files.attach_view(self, r, doc_id)),
                name="suggestions_suggestion_editor_attach",
            ),
            path(
                "document/<str:doc_id>/edit/decide-all/",
                self.admin_site.admin_view(lambda r, doc_id: editor_page.decide_all_view(self, r, doc_id)),
                name="suggestions_suggestion_editor_decide_all",
            ),
            path(
                "editor/decide/<str:uid>/",
                self.admin_site.admin_view(lambda r, uid: editor_page.decide_view(self, r, uid)),
                name="suggestions_suggestion_editor_decide",
            ),
            path(
                "document/<str:doc_id>/threads/",
                self.admin_site.admin_view(lambda r, doc_id: thread_views.threads_view(self, r, doc_id)),
                name="suggestions_suggestion_threads",
            ),
            path(
                "document/<str:doc_id>/threads/act/",
                self.admin_site.admin_view(
                    lambda r, doc_id: thread_views.thread_action_view(self, r, doc_id)
                ),
                name="suggestions_suggestion_thread_action",
            ),
            path(
                "editor/tree/<int:folder_id>/",
                self.admin_site.admin_view(lambda r, folder_id: editor_tree.tree_view(self, r, folder_id)),
                name="suggestions_suggestion_editor_tree",
            ),
            path(
                "editor/tree/<int:folder_id>/act/",
                self.admin_site.admin_view(
                    lambda r, folder_id: editor_tree.tree_action_view(self, r, folder_id)
                ),
                name="suggestions_suggestion_editor_tree_action",
            ),
            path(
                "editor/tree/<int:folder_id>/note/<str:doc_id>/",
                self.admin_site.admin_view(
                    lambda r, folder_id, doc_id: editor_links.note_outline_view(self, r, folder_id, doc_id)
                ),
                name="suggestions_suggestion_editor_note_outline",
            ),
            path(
                "editor/tree/<int:folder_id>/elsewhere/",
                self.admin_site.admin_view(
                    lambda r, folder_id: editor_links.other_folders_view(self, r, folder_id)
                ),
                name="suggestions_suggestion_editor_other_folders",
            ),
        ]
        return [*editor, way_in, inbox, email, rollback, decide, undo, *review, *super().get_urls()]

    def undo_view(self, request: HttpRequest, uid: str) -> HttpResponse:
        return admin_views.undo_view(self, request, uid)

    def review_view(self, request: HttpRequest, doc_id: str) -> HttpResponse:
        return review_page.review_view(self, request, doc_id)

    def review_state_view(self, request: HttpRequest, doc_id: str) -> HttpResponse:
        return review_page.review_state_view(self, request, doc_id)

    def decide_all_view(self, request: HttpRequest, doc_id: str) -> HttpResponse:
        return review_page.decide_all_view(self, request, doc_id)

    def decide_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return admin_views.decide_view(self, request, object_id)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        suggestion = self.get_object(request, unquote(object_id))
        extra = dict(extra_context or {})
        if suggestion is not None and self.has_view_permission(request, suggestion):
            extra["review"] = admin_views.review_diff(suggestion)
            extra["can_decide"] = suggestion.is_pending and self.has_review_permission(request)
            extra["decide_url"] = reverse("admin:suggestions_suggestion_decide", args=[suggestion.pk])
            extra["note_max_chars"] = NOTE_MAX_CHARS
            extra["review_url"] = (
                reverse("admin:suggestions_suggestion_review", args=[suggestion.doc_id])
                if suggestion.doc_id
                else ""
            )
            extra["no_review_reason"] = review_page.NO_REVIEW_REASON
            if suggestion.status in DECIDED:
                refusal = undo_refusal(suggestion)
                extra["undo_refusal"] = refusal or ""
                extra["can_undo"] = refusal is None and self.has_review_permission(request)
                extra["undo_url"] = reverse("admin:suggestions_suggestion_undo", args=[suggestion.uid])
            if rules_of(suggestion).accepting == "trash" and suggestion.is_pending:
                # All of them, whichever folders the proposing token saw: it was not told of the others.
                extra["linking"] = run_on_store(
                    functools.partial(delete_linking_paths, doc_id=suggestion.doc_id)
                )
        return super().change_view(request, object_id, form_url, extra)

    # -- bulk actions ------------------------------------------------------------------------------------

    @admin.action(description="Accept selected suggestions", permissions=["review"])
    def accept_selected(
        self, request: HttpRequest, queryset: QuerySet[Suggestion]
    ) -> TemplateResponse | None:
        return admin_views.bulk_decide(self, request, queryset, accept=True)

    @admin.action(description="Reject selected suggestions", permissions=["review"])
    def reject_selected(
        self, request: HttpRequest, queryset: QuerySet[Suggestion]
    ) -> TemplateResponse | None:
        return admin_views.bulk_decide(self, request, queryset, accept=False)

    @admin.action(description="Undo the decisions on selected suggestions", permissions=["review"])
    def undo_selected(self, request: HttpRequest, queryset: QuerySet[Suggestion]) -> TemplateResponse | None:
        return admin_views.bulk_undo(self, request, queryset)

    @admin.action(description="Export selected as an audit CSV", permissions=["view"])
    def export_csv(self, request: HttpRequest, queryset: QuerySet[Suggestion]) -> HttpResponse:
        return admin_views.audit_download(request, queryset, fmt="csv")

    @admin.action(description="Export selected as audit JSON", permissions=["view"])
    def export_json(self, request: HttpRequest, queryset: QuerySet[Suggestion]) -> HttpResponse:
        return admin_views.audit_download(request, queryset, fmt="json")

    @admin.action(description="Clean up leftovers of selected stale suggestions", permissions=["review"])
    def clean_up_selected(
        self, request: HttpRequest, queryset: QuerySet[Suggestion]
    ) -> TemplateResponse | None:
        return admin_views.bulk_clean_up(self, request, queryset)
