"""The live editor page of one document and the small JSON endpoints it calls.

The page is CodeMirror bound to the document's Yjs text over ``/d/<id>/ws`` (the session authenticates
the socket, ``lensrelay.access.auth.access_for_user``; the server refuses updates from staff without the
live-edit permission). Suggestions are decided through the services of ``suggestions.lifecycle.deciding``,
exactly as the review pages decide them; views here only check who asks and translate to JSON.
"""

from __future__ import annotations

import posixpath
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse

from lensrelay.access.auth import (
    EDIT_LIVE_PERMISSION,
    SUGGEST_PERMISSION,
    VIEW_DOCUMENT_PERMISSION,
    access_for_user,
)
from lensrelay.access.csp import editor_csp
from lensrelay.access.user_content import shown_inline, user_content_response
from lensrelay.docstore.trashdoc import TRASH
from lensrelay.files.blobs import BlobCorrupt, BlobMissing, blob_read
from lensrelay.files.kinds import mimetype
from lensrelay.models import Document
from suggestions.lifecycle.cleaning import suggestion_clean_up
from suggestions.lifecycle.deciding import Decision, suggestion_bulk
from suggestions.markup.revising import revision_summary
from suggestions.models import Suggestion
from suggestions.permissions import can_review
from suggestions.review.posted import posted_decision, posted_note
from suggestions.review.review_page import summary
from suggestions.review.thread_views import may_comment
from suggestions.selectors import pending_of_document

# Text the page can edit: everything a folder holds as a Y.Text (files with a blob have a hash).
MARKDOWN_TYPE = "markdown"
SUGGEST_ONLY_NOTICE = (
    "Suggesting: what you type and delete becomes a suggestion under your name, for a reviewer to accept "
    "or reject. Changing the note directly needs the permission “Can edit documents live”."
)
READ_ONLY_REASON = (
    "Read only: you can follow this document live, but typing in it needs the permission “Can edit "
    "documents live”. Ask an administrator to grant it."
)
UNDO_URL = "/admin/suggestions/suggestion/UID/undo/"


def _document_or_404(request: HttpRequest, doc_id: str) -> Document:
    if access_for_user(request.user) is None:
        raise PermissionDenied
    document = Document.objects.select_related("folder").filter(doc_id=doc_id).first()
    if document is None:
        raise Http404("No such document")
    return document


def preview_kind(content_type: str) -> str:
    """How the page shows a stored file of this type: an element for the passive types the file route
    serves inline (image, pdf, audio, video), else '' (a download link only)."""
    if not shown_inline(content_type):
        return ""
    main = content_type.split(";", 1)[0].strip().lower()
    if main == "application/pdf":
        return "pdf"
    return main.split("/", 1)[0]


# The note a person had open last, in their session: the knowledge base's way in opens it again.
LAST_NOTE_KEY = "lensrelay.editor.last_note"


def open_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest) -> HttpResponse:
    """The knowledge base's way in (the admin home and `/`): the note this person had open last, else the
    first note of the first folder."""
    if access_for_user(request.user) is None:
        raise PermissionDenied
    notes = Document.objects.filter(type=MARKDOWN_TYPE).exclude(path__startswith=TRASH + "/")
    last = request.session.get(LAST_NOTE_KEY)
    row = notes.filter(doc_id=last).first() if isinstance(last, str) else None
    if row is None:
        row = notes.order_by("folder__name", "path").first()
    if row is None:
        messages.info(request, "There are no notes yet: import a vault or add a folder first.")
        return redirect("admin:index")
    return redirect("admin:suggestions_suggestion_editor", row.doc_id)


def editor_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest, doc_id: str) -> HttpResponse:
    document = _document_or_404(request, doc_id)
    if document.type == MARKDOWN_TYPE:
        request.session[LAST_NOTE_KEY] = doc_id
    can_edit = request.user.has_perm(EDIT_LIVE_PERMISSION)
    # Suggesting mode (lensrelay.sync.suggesting): a toggle for who may edit live, always on for who may
    # only suggest; the socket enforces it either way.
    suggest_only = not can_edit and request.user.has_perm(SUGGEST_PERMISSION)
    is_text = not document.hash and document.type != "folder"
    config: dict[str, Any] = {
        "docId": doc_id,
        "path": document.user_path,
        "folder": document.folder.name,
        "folderDocId": document.folder.doc_id,
        "user": request.user.get_username(),
        "userId": request.user.pk,
        "suggestOnly": suggest_only,
        "text": is_text,
        "markdown": document.type == MARKDOWN_TYPE,
        "canEdit": can_edit,
        "canReview": can_review(request.user),
        "wsPath": f"/d/{doc_id}/ws",
        "decideUrl": reverse("admin:suggestions_suggestion_editor_decide", args=["UID"]),
        "decideAllUrl": reverse("admin:suggestions_suggestion_editor_decide_all", args=[doc_id]),
        "undoUrl": UNDO_URL,
        "pendingUrl": reverse("admin:suggestions_suggestion_editor_pending", args=[doc_id]),
        "treeUrl": reverse("admin:suggestions_suggestion_editor_tree", args=[document.folder_id]),
        "outlineUrl": reverse(
            "admin:suggestions_suggestion_editor_note_outline", args=[document.folder_id, "DOC"]
        ),
        "otherFoldersUrl": reverse(
            "admin:suggestions_suggestion_editor_other_folders", args=[document.folder_id]
        ),
        "threadsUrl": reverse("admin:suggestions_suggestion_threads", args=[doc_id]),
        "threadActionUrl": reverse("admin:suggestions_suggestion_thread_action", args=[doc_id]),
        "canComment": may_comment(request.user),
        "treeActionUrl": reverse(
            "admin:suggestions_suggestion_editor_tree_action", args=[document.folder_id]
        ),
        # Pasted and dropped files (editor_files) and the embedded images' bytes (file_view).
        "attachUrl": reverse("admin:suggestions_suggestion_editor_attach", args=[doc_id]),
        "fileUrl": reverse("admin:suggestions_suggestion_editor_file", args=["DOC"]),
        "maxFileBytes": settings.LENSRELAY_MAX_FILE_BYTES,
        "canViewFiles": request.user.has_perm(VIEW_DOCUMENT_PERMISSION),
    }
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": f"Edit {document.user_path}",
        "document": document,
        "config": config,
        "read_only_reason": "" if can_edit or suggest_only else READ_ONLY_REASON,
        "suggest_only_notice": SUGGEST_ONLY_NOTICE if suggest_only else "",
        "review_url": reverse("admin:suggestions_suggestion_review", args=[doc_id]),
        "document_url": reverse("admin:lensrelay_document_change", args=[document.pk]),
    }
    preview = ""
    if document.hash and request.user.has_perm(VIEW_DOCUMENT_PERMISSION):
        preview = preview_kind(mimetype(document.path))
        context["file_url"] = reverse("admin:suggestions_suggestion_editor_file", args=[doc_id])
        context["file_name"] = posixpath.basename(document.path)
    context["preview"] = preview
    request.current_app = model_admin.admin_site.name
    response = TemplateResponse(request, "admin/suggestions/editor/page.html", context)
    # The preview elements load the file from this origin; a PDF needs <object> allowed, nothing else does.
    response["Content-Security-Policy"] = editor_csp(host=request.get_host(), objects=preview == "pdf")
    return response


def file_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest, doc_id: str) -> HttpResponse:
    """The stored bytes of a file document, with the user-content headers: inline only for the passive
    allow-list (the page's preview), an attachment otherwise; never a page of this origin."""
    document = _document_or_404(request, doc_id)
    if not request.user.has_perm(VIEW_DOCUMENT_PERMISSION):
        raise PermissionDenied
    if not document.hash:
        raise Http404("This document is text, not a stored file")
    try:
        data = blob_read(doc_id=doc_id, hash=document.hash)
    except BlobMissing as exc:
        raise Http404("The file's bytes are not stored") from exc
    except BlobCorrupt:
        return HttpResponse("The stored file does not match its hash.", status=502, content_type="text/plain")
    response = user_content_response(
        data=data, content_type=mimetype(document.path), filename=posixpath.basename(document.path)
    )
    # The page's <object> shows a PDF from here; other sites still cannot frame it.
    response["X-Frame-Options"] = "SAMEORIGIN"
    return response


def pending_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest, doc_id: str) -> HttpResponse:
    """The document's pending and stale suggestions with their proposed hunks: the page shows a suggestion
    a person typed inside as stale (before the server's follower marks it, too) with its choices."""
    _document_or_404(request, doc_id)
    live = (Suggestion.Status.PENDING, Suggestion.Status.STALE)
    rows = [
        {
            "uid": s.uid,
            "author": s.author,
            "kind": s.kind,
            "status": s.status,
            "hunks": [{"old": h.get("old", ""), "new": h.get("new", "")} for h in (s.hunks or [])],
        }
        for s in Suggestion.objects.filter(doc_id=doc_id, status__in=live).order_by("created")
    ]
    return JsonResponse({"pending": rows})


def _answer(decision: Decision, *, choice: str) -> JsonResponse:
    suggestion = decision.suggestion
    verb = {"accept": "Accepted", "reject": "Rejected", "clean_up": "Cleaned up"}[choice]
    if decision.ok:
        detail = f" ({decision.detail})" if decision.detail else ""
        if suggestion.accepted_with_changes:
            detail += f" with your changes: {revision_summary(suggestion.revised_hunks())}"
        message = f"{verb} the {suggestion.get_kind_display().lower()} of {suggestion.path}{detail}."
        return JsonResponse({"ok": True, "status": suggestion.status, "message": message})
    reason = f"Could not {choice.replace('_', ' ')}: {decision.reason}."
    return JsonResponse({"ok": False, "status": suggestion.status, "reason": reason}, status=409)


def decide_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest, uid: str) -> HttpResponse:
    """POST ``decision=accept|reject|clean_up``, an optional ``note`` and, to accept with changes, the
    ``revision`` (the inserted text of each part as the reviewer changed it); JSON with what happened.
    ``clean_up`` removes a stale suggestion's leftovers and keeps what the person typed."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not can_review(request.user):
        raise PermissionDenied
    suggestion = Suggestion.objects.filter(uid=uid).first()
    if suggestion is None:
        raise Http404("No such suggestion")
    choice = request.POST.get("decision", "")
    if choice == "clean_up":
        return _answer(suggestion_clean_up(suggestion=suggestion, user=request.user), choice=choice)
    if choice not in ("accept", "reject"):
        return JsonResponse(
            {"ok": False, "reason": "decision must be accept, reject or clean_up"}, status=400
        )
    decision = posted_decision(request, suggestion=suggestion, accept=choice == "accept")
    return _answer(decision, choice=choice)


def decide_all_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest, doc_id: str) -> HttpResponse:
    """POST ``decision=accept|reject``: every pending suggestion of the document (the page confirmed)."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not can_review(request.user):
        raise PermissionDenied
    choice = request.POST.get("decision")
    if choice not in ("accept", "reject"):
        return JsonResponse({"ok": False, "reason": "decision must be accept or reject"}, status=400)
    pending = pending_of_document(doc_id=doc_id)
    if not pending:
        return JsonResponse({"ok": False, "reason": "Nothing is pending in this document."}, status=409)
    accept = choice == "accept"
    decisions = suggestion_bulk(
        suggestions=pending, user=request.user, accept=accept, note=posted_note(request)
    )
    ok = all(d.ok for d in decisions)
    decided = [d.suggestion.uid for d in decisions if d.ok]
    return JsonResponse({"ok": ok, "message": summary(decisions, accept=accept), "decided": decided})
