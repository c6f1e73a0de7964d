"""Review of suggestions in the admin: browse with the view permission, decide with the review permission.

Rows are a record of what assistants proposed, so nobody adds, edits or deletes them here; the only
changes are decisions, made through the services (see ``admin_views``).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.timesince import timesince

from suggestions import admin_views
from suggestions.models import Suggestion

PREVIEW_CHARS = 40
REVIEW_PERMISSION = "suggestions.review_suggestion"


def clip(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@admin.register(Suggestion)
class SuggestionAdmin(admin.ModelAdmin):
    list_display = ("path", "kind", "status", "preview", "author", "age", "decided_by")
    list_display_links = ("path",)
    list_filter = ("status", "kind", "folder", "author", "created", "decided_at")
    list_select_related = ("folder", "decided_by")
    search_fields = ("path", "new_path", "old_text", "new_text", "note", "comment", "uid")
    actions = ("accept_selected", "reject_selected", "clean_up_selected")
    fieldsets = (
        (None, {"fields": ("uid", "kind", "status", "path", "new_path", "folder", "document", "created")}),
        ("Proposed by", {"fields": ("author", "token", "client_name", "session_id", "tool", "comment")}),
        ("Decision", {"fields": ("decided_at", "decided_by", "note", "superseded_by")}),
        ("Text", {"fields": ("old_text", "new_text", "markup")}),
        ("Anchors", {"classes": ("collapse",), "fields": ("doc_id", "hunks")}),
    )

    # -- permissions: browse with view (or review), decide with review; never add, edit or delete rows --

    def has_review_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm(REVIEW_PERMISSION)

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
        if obj.kind == Suggestion.Kind.MOVE:
            return format_html("move → {}", clip(obj.new_path))
        if obj.kind == Suggestion.Kind.DELETE:
            return format_html("<del>delete document</del>")
        return format_html(
            '<del class="suggestion-old">{}</del> → <ins class="suggestion-new">{}</ins>',
            clip(obj.old_text),
            clip(obj.new_text),
        )

    @admin.display(description="Age", ordering="created")
    def age(self, obj: Suggestion) -> str:
        return f"{timesince(obj.created, timezone.now())} ago"

    # -- the change page: diff in context, Accept / Reject ---------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        decide = path(
            "<path:object_id>/decide/",
            self.admin_site.admin_view(self.decide_view),
            name="suggestions_suggestion_decide",
        )
        return [decide, *super().get_urls()]

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
            extra["note_max_chars"] = admin_views.NOTE_MAX_CHARS
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

    @admin.action(description="Clean up leftovers of selected stale suggestions", permissions=["review"])
    def clean_up_selected(
        self, request: HttpRequest, queryset: QuerySet[Suggestion]
    ) -> TemplateResponse | None:
        return admin_views.bulk_clean_up(self, request, queryset)
