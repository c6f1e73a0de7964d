"""Admin for folders, documents and tokens. Thin: creation and revocation go through the services."""

from __future__ import annotations

import weakref
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from lensrelay.docstore import persistence
from lensrelay.docstore.store import run_on_store
from lensrelay.documents import documents_delete
from lensrelay.folders import folder_create, folder_delete
from lensrelay.models import ApiToken, Document, Folder
from lensrelay.tokens import token_create, token_revoke, token_set_folders, token_update
from lensrelay.vaultpath import InvalidPath, normalize_path, validate_folder_name

PREVIEW_CHARS = 4000
LISTED_ROWS = 200

admin.site.site_header = "Lens Relay"
admin.site.site_title = "Lens Relay admin"
admin.site.index_title = "Review suggestions, manage folders and tokens"


def _rows_list(rows: list[tuple[str, str]], empty: str) -> SafeString:
    if not rows:
        return format_html('<span class="quiet">{}</span>', empty)
    items = format_html_join("", '<li><a href="{}">{}</a></li>', rows)
    return format_html('<ul class="related-rows">{}</ul>', items)


class FolderForm(forms.ModelForm):
    class Meta:
        model = Folder
        fields = ("name",)

    def clean_name(self) -> str:
        # The same rules as every other way in; folder_create applies them again.
        try:
            return validate_folder_name(normalize_path(self.cleaned_data["name"].strip()))
        except InvalidPath as exc:
            raise forms.ValidationError(str(exc)) from exc


@admin.register(Folder)
class FolderAdmin(admin.ModelAdmin):
    form = FolderForm
    list_display = ("name", "doc_id", "document_count", "created")
    search_fields = ("name",)
    readonly_fields = ("doc_id", "created", "document_list", "token_list")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:  # type: ignore[override]
        return ["name"] if obj is None else ["name", "doc_id", "created", "document_list", "token_list"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Renaming changes every user-facing path; the folder doc's config keeps the original name.
        if obj is None:
            return ("doc_id", "created")
        return ("name", "doc_id", "created", "document_list", "token_list")

    @admin.display(description="Documents in it")
    def document_list(self, obj: Folder) -> SafeString:
        documents = obj.documents.exclude(type="folder").order_by("path")[:LISTED_ROWS]
        rows = [(reverse("admin:lensrelay_document_change", args=[d.pk]), d.path) for d in documents]
        return _rows_list(rows, "No documents yet.")

    @admin.display(description="Tokens limited to it")
    def token_list(self, obj: Folder) -> SafeString:
        tokens = obj.tokens.order_by("name")[:LISTED_ROWS]
        rows = [(reverse("admin:lensrelay_apitoken_change", args=[t.pk]), str(t)) for t in tokens]
        return _rows_list(rows, "None (tokens for all folders reach it too).")

    @admin.display(description="Documents")
    def document_count(self, obj: Folder) -> int:
        return obj.documents.exclude(type="folder").count()

    def save_model(self, request: HttpRequest, obj: Folder, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        created = folder_create(name=obj.name)
        obj.pk, obj.doc_id, obj.created = created.pk, created.doc_id, created.created

    def delete_model(self, request: HttpRequest, obj: Folder) -> None:
        folder_delete(folder=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Folder]) -> None:
        for folder in queryset:
            folder_delete(folder=folder)


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("user_path", "type", "modified", "doc_id")
    list_filter = ("folder", "type")
    search_fields = ("path", "doc_id")
    readonly_fields = ("folder", "uuid", "doc_id", "path", "type", "created", "modified", "content_preview")
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # documents come from folder documents (Yjs clients, imports, MCP)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    # Deleting goes through the folder document, like a client's delete: every worker, every connected
    # client and every view follows, and the next folder change cannot bring the row back.
    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        # The delete view runs in a transaction; the store's own database thread writes the change, so
        # it must start after that transaction ends (SQLite would wait on its write lock forever).
        doc_id = obj.doc_id
        transaction.on_commit(
            lambda: run_on_store(lambda store: documents_delete(store=store, doc_ids=[doc_id]))
        )

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        doc_ids = list(queryset.values_list("doc_id", flat=True))
        transaction.on_commit(
            lambda: run_on_store(lambda store: documents_delete(store=store, doc_ids=doc_ids))
        )

    @admin.display(description="Path", ordering="path")
    def user_path(self, obj: Document) -> str:
        return obj.user_path

    @admin.display(description="Content")
    def content_preview(self, obj: Document) -> str:
        text = persistence.stored_text(obj.doc_id) or ""
        more = f"\n… ({len(text) - PREVIEW_CHARS} more characters)" if len(text) > PREVIEW_CHARS else ""
        return format_html(
            '<pre style="white-space: pre-wrap; max-width: 60em">{}{}</pre>', text[:PREVIEW_CHARS], more
        )


class ApiTokenForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ("name", "role", "folders", "expires_at")
        labels = {"folders": "Folders (none selected: all folders)"}
        help_texts = {"folders": "Leave empty to reach every folder, including folders created later."}

    def clean_expires_at(self) -> Any:
        expires_at = self.cleaned_data.get("expires_at")
        changed = self.instance.pk is None or "expires_at" in self.changed_data
        if changed and expires_at is not None and expires_at <= timezone.now():
            raise forms.ValidationError("The expiry must be in the future.")
        return expires_at


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    form = ApiTokenForm
    list_display = ("name", "role", "scope", "prefix", "created", "expires_at", "last_used_at", "status")
    list_filter = ("role", "folders")
    search_fields = ("name", "prefix")
    filter_horizontal = ("folders",)
    actions = ("revoke_selected",)
    # The raw value of a token created by a request, from save_model to the page that shows it once.
    _raw_tokens: weakref.WeakKeyDictionary[HttpRequest, str] = weakref.WeakKeyDictionary()

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:  # type: ignore[override]
        if obj is None:
            return ["name", "role", "folders", "expires_at"]
        return ["name", "role", "folders", "expires_at", "prefix", "created", "last_used_at", "revoked_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return () if obj is None else ("prefix", "created", "last_used_at", "revoked_at")

    @admin.display(description="Folders")
    def scope(self, obj: ApiToken) -> str:
        return ", ".join(f.name for f in obj.folders.all()) or "all folders"

    @admin.display(description="Status")
    def status(self, obj: ApiToken) -> str:
        if obj.revoked:
            return "revoked"
        return "expired" if obj.expired else "active"

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if change:
            # Through the service: a lowered role or a nearer expiry ends the token's MCP sessions.
            token_update(token=obj, name=obj.name, role=obj.role, expires_at=obj.expires_at)
            return
        token, raw = token_create(name=obj.name, role=obj.role, folders=form.cleaned_data.get("folders", []))
        if obj.expires_at is not None:
            token.expires_at = obj.expires_at
            token.save(update_fields=["expires_at"])
        # The form's instance becomes the saved token, so the admin's log entry and redirect name it.
        obj.pk, obj._state = token.pk, token._state
        obj.token_hash, obj.prefix, obj.created = token.token_hash, token.prefix, token.created
        self._raw_tokens[request] = raw

    def response_add(
        self, request: HttpRequest, obj: ApiToken, post_url_continue: str | None = None
    ) -> HttpResponse:
        raw = self._raw_tokens.pop(request, None)
        if raw is None:
            return super().response_add(request, obj, post_url_continue)
        base = (settings.LENSRELAY_PUBLIC_URL or request.build_absolute_uri("/")).rstrip("/")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Token {obj.name} created",
            "token": obj,
            "raw": raw,
            "scope": self.scope(obj),
            "mcp_command": (
                f'claude mcp add --transport http lens {base}/mcp --header "Authorization: Bearer {raw}"'
            ),
            "changelist_url": reverse("admin:lensrelay_apitoken_changelist"),
        }
        response = TemplateResponse(request, "admin/lensrelay/apitoken/created.html", context)
        response["Cache-Control"] = "no-store"
        return response

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        # On creation token_create already set the folders, in the same transaction. A change goes through
        # the service: losing a folder closes the token's sockets on it and ends its MCP sessions.
        if change:
            token_set_folders(token=form.instance, folders=form.cleaned_data.get("folders") or ())
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        count = 0
        for token in queryset:
            if not token.revoked:
                token_revoke(token=token)
                count += 1
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)
