"""The Document admin's "Versions" pages: the list, one version's text and its diff to now, and restore.

Restoring is confirm-then-act: the confirmation page names what will change (and the pending suggestions
whose markup the old text lacks); its form posts back `post=yes`. Everything shown is HTML-escaped:
documents come from anyone who can edit them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from lensrelay.docstore import persistence
from lensrelay.docstore.offload import offloaded_sync
from lensrelay.history.difftable import compared
from lensrelay.history.models import DocVersion
from lensrelay.history.restoring import RestoreError, version_restore
from lensrelay.history.selectors import version_get, version_text, versions_of
from lensrelay.models import Document

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin

RESTORE_PERMISSION = "lensrelay.edit_live"
# Texts longer than this (both sides together) are compared in a heavy-work process: HtmlDiff of a long
# note takes seconds of pure Python, and from the request thread it would starve the event loop.
COMPARE_IN_PROCESS_CHARS = 64 * 1024


def _document(model_admin: ModelAdmin[Document], request: HttpRequest, object_id: str) -> Document:
    document = model_admin.get_object(request, unquote(object_id))
    if document is None:
        raise Http404("No such document.")
    if not model_admin.has_view_permission(request, document):
        raise PermissionDenied
    return document


def _version(document: Document, version_id: str) -> DocVersion:
    version = version_get(doc_id=document.doc_id, version_id=version_id)
    if version is None:
        raise Http404("No such version of this document.")
    return version


def _context(model_admin: ModelAdmin[Document], request: HttpRequest, document: Document, title: str) -> Any:
    return {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "original": document,
        "title": title,
        "document_url": reverse("admin:lensrelay_document_change", args=[document.pk]),
        "versions_url": reverse("admin:lensrelay_document_versions", args=[document.pk]),
        "can_restore": request.user.has_perm(RESTORE_PERMISSION),
    }


def versions_view(model_admin: ModelAdmin[Document], request: HttpRequest, object_id: str) -> HttpResponse:
    document = _document(model_admin, request, object_id)
    context = _context(model_admin, request, document, f"Versions of {document.user_path}")
    context["versions"] = versions_of(doc_id=document.doc_id)
    return TemplateResponse(request, "admin/lensrelay/document/versions.html", context)


def version_comparison(
    old: str, new: str, *, old_label: str, new_label: str, count_edits: bool = False
) -> tuple[SafeString, int]:
    """The side-by-side diff from ``old`` to ``new`` (escaped: documents come from anyone who can edit
    them), and how many edits restoring ``new`` makes; long texts are compared in a heavy-work process
    while the request thread waits."""
    args = (old, new, old_label, new_label, count_edits)
    if len(old) + len(new) > COMPARE_IN_PROCESS_CHARS:
        table, edits = offloaded_sync(compared, *args)
    else:
        table, edits = compared(*args)
    return mark_safe(table), edits  # the lines are escaped by HtmlDiff, the labels by diff_table


def _compared(document: Document, version: DocVersion) -> tuple[str, str, str]:
    """The version's text, the document's text now, and the version's label."""
    label = f"Version {version.pk} ({version.created:%Y-%m-%d %H:%M:%S} UTC)"
    return version_text(version), persistence.stored_text(document.doc_id) or "", label


def version_view(
    model_admin: ModelAdmin[Document], request: HttpRequest, object_id: str, version_id: str
) -> HttpResponse:
    document = _document(model_admin, request, object_id)
    version = _version(document, version_id)
    text, current, label = _compared(document, version)
    context = _context(model_admin, request, document, f"{label} of {document.user_path}")
    diff, _ = version_comparison(text, current, old_label=label, new_label="Now")
    context.update(
        version=version,
        text=text,
        same_as_now=text == current,
        diff=diff,
        restore_url=reverse("admin:lensrelay_document_version_restore", args=[document.pk, version.pk]),
    )
    return TemplateResponse(request, "admin/lensrelay/document/version.html", context)


def version_restore_view(
    model_admin: ModelAdmin[Document], request: HttpRequest, object_id: str, version_id: str
) -> HttpResponse:
    document = _document(model_admin, request, object_id)
    if not request.user.has_perm(RESTORE_PERMISSION):
        raise PermissionDenied
    version = _version(document, version_id)
    back = reverse("admin:lensrelay_document_versions", args=[document.pk])
    if request.method == "POST" and request.POST.get("post") == "yes":
        try:
            restored = version_restore(version=version, user=request.user)
        except RestoreError as exc:
            model_admin.message_user(request, str(exc), messages.ERROR)
            return redirect(back)
        if restored.edits:
            said = (
                f"Restored version {version.pk} of {version.created:%Y-%m-%d %H:%M:%S} UTC as a new change "
                f"({restored.edits} edit(s)); connected clients have it."
            )
        else:
            said = f"The document already had the text of version {version.pk}: nothing changed."
        model_admin.message_user(request, " ".join([said, *restored.notes]), messages.SUCCESS)
        return redirect(back)
    text, current, label = _compared(document, version)
    context = _context(model_admin, request, document, f"Restore {label} of {document.user_path}?")
    diff, edits = version_comparison(
        current, text, old_label="Now", new_label=f"After restoring {label}", count_edits=True
    )
    context.update(version=version, edits=edits, diff=diff)
    return TemplateResponse(request, "admin/lensrelay/document/version_restore.html", context)
