"""Admin for folders, documents and tokens. Thin: creation and revocation go through the services."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from lensrelay.docstore import persistence
from lensrelay.docstore.store import run_on_store
from lensrelay.documents import documents_delete
from lensrelay.folders import folder_create, folder_delete
from lensrelay.models import ApiToken, Document, Folder
from lensrelay.tokens import token_create, token_revoke

PREVIEW_CHARS = 4000


@admin.register(Folder)
class FolderAdmin(admin.ModelAdmin):
    list_display = ("name", "doc_id", "document_count", "created")
    search_fields = ("name",)
    readonly_fields = ("doc_id", "created")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:  # type: ignore[override]
        return ["name"] if obj is None else ["name", "doc_id", "created"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Renaming changes every user-facing path; the folder doc's config keeps the original name.
        return ("doc_id", "created") if obj is None else ("name", "doc_id", "created")

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


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "role", "scope", "prefix", "created", "expires_at", "last_used_at", "status")
    list_filter = ("role", "folders")
    search_fields = ("name", "prefix")
    filter_horizontal = ("folders",)
    actions = ("revoke_selected",)

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
            super().save_model(request, obj, form, change)
            return
        token, raw = token_create(name=obj.name, role=obj.role)
        token.expires_at = obj.expires_at
        token.save(update_fields=["expires_at"])
        obj.pk = token.pk
        obj.token_hash, obj.prefix, obj.created = token.token_hash, token.prefix, token.created
        messages.warning(
            request,
            format_html("Token created. Copy it now, it will not be shown again: <code>{}</code>", raw),
        )

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        count = 0
        for token in queryset:
            if not token.revoked:
                token_revoke(token=token)
                count += 1
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)
