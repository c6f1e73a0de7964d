"""Admin for folders, documents and tokens. Thin: creation and revocation go through the services."""

from __future__ import annotations

import functools
import weakref
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.contrib.auth import admin as auth_admin
from django.contrib.auth import forms as auth_forms
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.timesince import timesince
from oauth2_provider import admin as oauth_admin
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_id_token_model,
    get_refresh_token_model,
)

from lensrelay.access.actor_names import username_check
from lensrelay.access.invitations import invitation_refusal, invitation_send
from lensrelay.access.tokens import token_create, token_revoke, token_set_folders, token_update
from lensrelay.adminbase import FilteredLookupsOnly, ModelAdmin
from lensrelay.docstore import persistence
from lensrelay.docstore.store import DocStore, run_on_store
from lensrelay.docstore.trashdoc import TRASH, is_trashed
from lensrelay.history import admin_views as history_admin
from lensrelay.models import ApiToken, Document, Folder
from lensrelay.text.counts import counted
from lensrelay.text.vaultpath import (
    InvalidPath,
    normalize_path,
    refuse_trash,
    validate_folder_name,
    validate_relative_path,
)
from lensrelay.vault.folders import folder_create, folder_delete, folder_name_clash
from lensrelay.vault.moves import MoveRefused, entry_move, folder_rename
from lensrelay.vault.trash import (
    DeleteRefused,
    RestoreRefused,
    TrashDetails,
    document_restore,
    documents_trash,
    linking_notes,
    trash_details,
)
from lensrelay.webhooks import admin as webhooks_admin  # noqa: F401  (registers the webhook admin)

PREVIEW_CHARS = 4000
LISTED_ROWS = 200

admin.site.site_header = "Lens Relay"
admin.site.site_title = "Lens Relay admin"
admin.site.index_title = "Review suggestions, manage folders and tokens"
# The app list beside every page took a quarter of a 1280 px screen and squeezed the lists under their
# filters; the breadcrumbs and the home page lead everywhere it did.
admin.site.enable_nav_sidebar = False


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
        # The same rules as every other way in; folder_create and folder_rename apply them again.
        try:
            name = validate_folder_name(normalize_path(self.cleaned_data["name"].strip()))
        except InvalidPath as exc:
            raise forms.ValidationError(str(exc)) from exc
        clash = folder_name_clash(name=name, folder_id=self.instance.pk)
        if clash is not None:
            raise forms.ValidationError(clash)
        return name


@admin.register(Folder)
class FolderAdmin(ModelAdmin):
    form = FolderForm
    list_display = ("name", "doc_id", "document_count", "created")
    search_fields = ("name",)
    readonly_fields = ("doc_id", "created", "document_list", "token_list")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:  # type: ignore[override]
        return ["name"] if obj is None else ["name", "doc_id", "created", "document_list", "token_list"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if obj is None:
            return ("doc_id", "created")
        return ("doc_id", "created", "document_list", "token_list")

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
            # A rename moves every user-facing path in the folder: through the move service, so links
            # written with the folder's name follow and every worker's path index re-reads it. After the
            # admin's transaction (see DocumentAdmin.save_model).
            if "name" in form.changed_data:
                folder_id, name = obj.pk, obj.name
                obj.name = form.initial["name"]

                def rename() -> None:
                    try:
                        report = run_on_store(
                            lambda store: folder_rename(store, folder_id=folder_id, name=name)
                        )
                    except MoveRefused as exc:
                        self.message_user(request, f"Not renamed: {exc}", messages.ERROR)
                        return
                    self.message_user(
                        request, f"Renamed to {name}; {report.links_rewritten} link(s) rewritten."
                    )

                transaction.on_commit(rename)
            return
        created = folder_create(name=obj.name)
        obj.pk, obj.doc_id, obj.created = created.pk, created.doc_id, created.created

    def delete_model(self, request: HttpRequest, obj: Folder) -> None:
        folder_delete(folder=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Folder]) -> None:
        for folder in queryset:
            folder_delete(folder=folder)


async def _trash_details(store: DocStore, *, rows: list[Document]) -> dict[str, TrashDetails]:
    return await trash_details(store=store, rows=rows)


async def _restore(store: DocStore, *, doc_id: str) -> str:
    return await document_restore(store=store, doc_id=doc_id)


class TrashFilter(admin.SimpleListFilter):
    title = "trash"
    parameter_name = "trash"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("no", "Not in the trash"), ("yes", "In the trash")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        in_trash = Q(path=TRASH) | Q(path__startswith=TRASH + "/")
        if self.value() == "yes":
            return queryset.filter(in_trash)
        if self.value() == "no":
            return queryset.exclude(in_trash)
        return queryset


class DocumentRenameForm(forms.ModelForm):
    class Meta:
        model = Document
        fields = ("path",)
        labels = {"path": "Path in its folder"}
        help_texts = {"path": "Renaming moves it (a sub-folder with everything in it); links follow."}

    def clean_path(self) -> str:
        path = normalize_path(self.cleaned_data["path"].strip())
        if is_trashed(self.instance.path):
            raise forms.ValidationError("It is in the trash: restore it first.")
        try:
            # The move service refuses the trash too; said here, the form shows it as its error.
            return refuse_trash(validate_relative_path(path))
        except InvalidPath as exc:
            raise forms.ValidationError(str(exc)) from exc


@admin.register(Document)
class DocumentAdmin(ModelAdmin):
    form = DocumentRenameForm
    list_display = ("user_path", "type", "trashed", "modified", "doc_id")
    list_filter = (TrashFilter, "folder", "type")
    list_select_related = ("folder",)
    search_fields = ("path", "doc_id")
    readonly_fields = ("folder", "uuid", "doc_id", "type", "created", "modified", "content_preview")
    fields = ("folder", "path", "uuid", "doc_id", "type", "created", "modified", "content_preview")
    actions = ("delete_selected", "trash_selected_force", "restore_selected")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # documents come from folder documents (Yjs clients, imports, MCP)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        trashed = obj is not None and is_trashed(obj.path)
        return (*self.readonly_fields, "path") if trashed else self.readonly_fields

    # A rename is a move, through the move service like every other: links follow, the folder document
    # changes, and every worker and client sees it. After the admin's transaction: the store's database
    # thread writes the change (SQLite would otherwise wait on this transaction's write lock forever).
    def save_model(self, request: HttpRequest, obj: Document, form: Any, change: bool) -> None:
        if "path" not in form.changed_data:
            return
        folder_id, old, new, is_folder = obj.folder_id, form.initial["path"], obj.path, obj.type == "folder"
        obj.path = old  # the row follows the folder document, not the form

        def move() -> None:
            try:
                report = run_on_store(
                    lambda store: entry_move(store, folder_id=folder_id, old=old, new=new, folder=is_folder)
                )
            except MoveRefused as exc:
                self.message_user(request, f"Not renamed: {exc}", messages.ERROR)
                return
            self.message_user(request, f"Moved to {new}; {report.links_rewritten} link(s) rewritten.")

        transaction.on_commit(move)

    # Deleting moves to the folder's trash through the folder document, like every delete: every worker,
    # every connected client and every view follows, and a restore brings it back.
    def delete_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> HttpResponse:
        obj = self.get_object(request, unquote(object_id))
        if obj is None or not self.has_delete_permission(request, obj):
            return super().delete_view(request, object_id, extra_context)
        if request.method == "POST":
            return self._trash(request, [obj], force=request.POST.get("force") == "1", back=request.path)
        linking = run_on_store(lambda store: linking_notes(store, doc_ids=[obj.doc_id]))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "object": obj,
            "title": f"Move {obj.user_path} to the trash?",
            "linking": [e.user_path for e in linking],
            "trashed": is_trashed(obj.path),
        }
        return TemplateResponse(request, "admin/lensrelay/document/delete_confirmation.html", context)

    def _trash(self, request: HttpRequest, rows: list[Document], *, force: bool, back: str) -> HttpResponse:
        doc_ids = [row.doc_id for row in rows if not is_trashed(row.path)]
        try:
            by = request.user.get_username()
            report = run_on_store(
                lambda store: documents_trash(store=store, doc_ids=doc_ids, force=force, by=by)
            )
        except DeleteRefused as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return HttpResponseRedirect(back)
        for row in rows:
            self.log_change(request, row, "Moved to the trash.")
        moved = counted(len(report.trashed), "entry", "entries")
        self.message_user(request, f"Moved {moved} to the trash.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:lensrelay_document_changelist"))

    @admin.action(description="Move selected documents to the trash", permissions=["delete"])
    def delete_selected(self, request: HttpRequest, queryset: QuerySet[Document]) -> HttpResponse:
        return self._trash(request, list(queryset), force=False, back=request.get_full_path())

    @admin.action(
        description="Move selected documents to the trash, even if notes link to them", permissions=["delete"]
    )
    def trash_selected_force(self, request: HttpRequest, queryset: QuerySet[Document]) -> HttpResponse:
        return self._trash(request, list(queryset), force=True, back=request.get_full_path())

    @admin.action(description="Restore selected documents from the trash", permissions=["delete"])
    def restore_selected(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        for doc_id in queryset.values_list("doc_id", flat=True):
            try:
                where = run_on_store(functools.partial(_restore, doc_id=doc_id))
            except RestoreRefused as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                self.message_user(request, f"Restored {where}.", messages.SUCCESS)

    @admin.display(description="In the trash", boolean=True)
    def trashed(self, obj: Document) -> bool:
        return is_trashed(obj.path)

    # The trash list says when, by whom and from where each entry was deleted (read from the folder
    # documents for the rows on the page only).
    TRASH_COLUMNS = ("user_path", "type", "trashed_when", "trashed_by", "trashed_from", "doc_id")

    def get_list_display(self, request: HttpRequest) -> Any:
        return self.TRASH_COLUMNS if request.GET.get("trash") == "yes" else self.list_display

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        changelist = super().get_changelist_instance(request)
        rows = [row for row in changelist.result_list if is_trashed(row.path)]
        if rows:
            details = run_on_store(functools.partial(_trash_details, rows=rows))
            for row in rows:
                row.trash_details = details.get(row.doc_id)
        return changelist

    @admin.display(description="Deleted")
    def trashed_when(self, obj: Document) -> SafeString | str:
        details = getattr(obj, "trash_details", None)
        if details is None or details.trashed_at is None:
            return "—"
        when = details.trashed_at
        age = (
            "just now"
            if (timezone.now() - when).total_seconds() < 60
            else f"{timesince(when).split(',')[0]} ago"
        )
        return format_html('<span title="{}">{}</span>', f"{when:%Y-%m-%d %H:%M:%S} UTC", age)

    @admin.display(description="Deleted by")
    def trashed_by(self, obj: Document) -> str:
        details = getattr(obj, "trash_details", None)
        return details.by if details is not None and details.by else "—"

    @admin.display(description="Deleted from")
    def trashed_from(self, obj: Document) -> str:
        details = getattr(obj, "trash_details", None)
        return details.original if details is not None else "—"

    def get_urls(self) -> list[URLPattern]:
        # Version history: the list, one version with its diff to now, and restoring it.
        view = self.admin_site.admin_view
        own = [
            path("<path:object_id>/versions/", view(self._versions), name="lensrelay_document_versions"),
            path(
                "<path:object_id>/versions/<str:version_id>/",
                view(self._version),
                name="lensrelay_document_version",
            ),
            path(
                "<path:object_id>/versions/<str:version_id>/restore/",
                view(self._version_restore),
                name="lensrelay_document_version_restore",
            ),
        ]
        return own + super().get_urls()

    def _versions(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return history_admin.versions_view(self, request, object_id)

    def _version(self, request: HttpRequest, object_id: str, version_id: str) -> HttpResponse:
        return history_admin.version_view(self, request, object_id, version_id)

    def _version_restore(self, request: HttpRequest, object_id: str, version_id: str) -> HttpResponse:
        return history_admin.version_restore_view(self, request, object_id, version_id)

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
class ApiTokenAdmin(ModelAdmin):
    form = ApiTokenForm
    # Dates as days and ages, so the row (and its status) fits beside the filters at 1280 px; the creation
    # date is on the token's own page.
    list_display = ("name", "kind", "role", "scope", "prefix", "expires", "last_used", "status")
    list_filter = ("role", "folders", ("oauth_application", admin.EmptyFieldListFilter))
    search_fields = ("name", "prefix")
    secret_fields = ("token_hash",)
    filter_horizontal = ("folders",)
    actions = ("revoke_selected",)
    # The raw value of a token created by a request, from save_model to the page that shows it once.
    _raw_tokens: weakref.WeakKeyDictionary[HttpRequest, str] = weakref.WeakKeyDictionary()

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:  # type: ignore[override]
        if obj is None:
            return ["name", "role", "folders", "expires_at"]
        fields = ["name", "role", "folders", "expires_at", "prefix", "created", "last_used_at", "revoked_at"]
        return [*fields, "user", "oauth_application"] if obj.oauth_application_id else fields

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return (
            ()
            if obj is None
            else ("prefix", "created", "last_used_at", "revoked_at", "user", "oauth_application")
        )

    @admin.display(description="Kind")
    def kind(self, obj: ApiToken) -> str:
        """OAuth grants (an assistant a person connected) are listed, revoked and narrowed like tokens."""
        if obj.oauth_application_id is None:
            return "API token"
        return "OAuth grant"

    @admin.display(description="Folders")
    def scope(self, obj: ApiToken) -> str:
        return ", ".join(f.name for f in obj.folders.all()) or "all folders"

    @admin.display(description="Expires", ordering="expires_at")
    def expires(self, obj: ApiToken) -> str:
        return f"{obj.expires_at:%Y-%m-%d}" if obj.expires_at else "never"

    @admin.display(description="Last used", ordering="last_used_at")
    def last_used(self, obj: ApiToken) -> str:
        if obj.last_used_at is None:
            return "never"
        if (timezone.now() - obj.last_used_at).total_seconds() < 60:
            return "just now"
        return f"{timesince(obj.last_used_at).split(',')[0]} ago"

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
        obj.name = token.name  # cleaned, and numbered when another actor goes by it
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


# The libraries' admins on the same base: people's password hashes and the OAuth credentials (stored in
# clear by django-oauth-toolkit, masked on its pages) must not be bisected through the change lists either.
class _UsernameApart:
    """A username no token or assistant already goes by (lensrelay.access.actor_names)."""

    cleaned_data: dict[str, Any]
    instance: Any

    def clean_username(self) -> str:
        inherited = getattr(super(), "clean_username", None)  # the creation form checks uniqueness
        username = str(inherited() if inherited is not None else self.cleaned_data["username"])
        try:
            return username_check(username=username, user_id=self.instance.pk)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None


class UserCreationForm(_UsernameApart, auth_forms.AdminUserCreationForm):  # type: ignore[misc]
    pass


class UserChangeForm(_UsernameApart, auth_forms.UserChangeForm):  # type: ignore[misc]
    pass


class UserAdmin(FilteredLookupsOnly, auth_admin.UserAdmin):  # type: ignore[type-arg]
    secret_fields = ("password",)
    add_form = UserCreationForm
    form = UserChangeForm
    actions = ("send_invitation",)

    @admin.action(
        description="Email the selected people a link to choose their password", permissions=["change"]
    )
    def send_invitation(self, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponse | None:
        """The ``delete_selected`` convention: say who gets a link and who does not (and why), then send."""
        people = list(queryset.order_by("username"))
        refused = [(person, reason) for person in people if (reason := invitation_refusal(person))]
        invited = [person for person in people if invitation_refusal(person) is None]
        if request.POST.get("post") != "yes":
            context = {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": "Send invitation links?",
                "invited": invited,
                "refused": refused,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(request, "admin/auth/user/invite_confirmation.html", context)
        base = settings.LENSRELAY_PUBLIC_URL or request.build_absolute_uri("/")
        for person in invited:
            invitation_send(user=person, base_url=base)
            self.log_change(request, person, "Sent an invitation link to choose a password.")
        self.message_user(request, f"Sent {counted(len(invited), 'invitation link')}.", messages.SUCCESS)
        if refused:
            names = "; ".join(f"{person.get_username()} {reason}" for person, reason in refused)
            self.message_user(request, f"Not sent: {names}.", messages.WARNING)
        return None


class GroupAdmin(FilteredLookupsOnly, auth_admin.GroupAdmin):
    pass


class ApplicationAdmin(FilteredLookupsOnly, oauth_admin.ApplicationAdmin):
    secret_fields = ("client_secret",)


class AccessTokenAdmin(FilteredLookupsOnly, oauth_admin.AccessTokenAdmin):
    secret_fields = ("token", "token_checksum")


class RefreshTokenAdmin(FilteredLookupsOnly, oauth_admin.RefreshTokenAdmin):
    secret_fields = ("token", "token_checksum")


class GrantAdmin(FilteredLookupsOnly, oauth_admin.GrantAdmin):
    secret_fields = ("code", "code_challenge")


class IDTokenAdmin(FilteredLookupsOnly, oauth_admin.IDTokenAdmin):
    pass


for _model, _model_admin in (
    (get_user_model(), UserAdmin),
    (Group, GroupAdmin),
    (get_application_model(), ApplicationAdmin),
    (get_access_token_model(), AccessTokenAdmin),
    (get_refresh_token_model(), RefreshTokenAdmin),
    (get_grant_model(), GrantAdmin),
    (get_id_token_model(), IDTokenAdmin),
):
    admin.site.unregister(_model)
    admin.site.register(_model, _model_admin)
