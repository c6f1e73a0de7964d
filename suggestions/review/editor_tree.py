"""The file tree beside the editor: a folder's entries as JSON, and new note, new folder, rename/move and
delete to trash through the vault's services (links rewritten, every worker and client follows through
the folder document). Listing needs a signed-in staff user; changing needs the live-edit permission.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.urls import reverse

from lensrelay.access.auth import EDIT_LIVE_PERMISSION, access_for_user
from lensrelay.docstore.store import DocStore, run_on_store
from lensrelay.docstore.trashdoc import TRASH, is_trashed
from lensrelay.models import Folder
from lensrelay.text.counts import counted
from lensrelay.text.vaultpath import InvalidPath
from lensrelay.vault.documents import document_create, subfolder_create
from lensrelay.vault.moves import MoveRefused, entry_move
from lensrelay.vault.trash import DeleteRefused, documents_trash
from suggestions.models import Suggestion

MAX_PATH_CHARS = 1024


def _folder_or_404(request: HttpRequest, folder_id: int) -> Folder:
    if access_for_user(request.user) is None:
        raise PermissionDenied
    folder = Folder.objects.filter(pk=folder_id).first()
    if folder is None:
        raise Http404("No such folder")
    return folder


def tree_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest, folder_id: int) -> HttpResponse:
    folder = _folder_or_404(request, folder_id)
    rows = folder.documents.exclude(path=TRASH).exclude(path__startswith=TRASH + "/").order_by("path")
    entries = [
        {
            "path": row.path,
            "type": row.type,
            "doc_id": row.doc_id,
            "url": ""
            if row.type == "folder"
            else reverse("admin:suggestions_suggestion_editor", args=[row.doc_id]),
        }
        for row in rows
    ]
    return JsonResponse({"folder": folder.name, "entries": entries})


def _relative(raw: str) -> str:
    path = raw.strip()
    if not path or len(path) > MAX_PATH_CHARS:
        raise InvalidPath("a path is required (at most 1024 characters)")
    return path if path.startswith("/") else f"/{path}"


def _on_store(work: Callable[[DocStore], Awaitable[Any]]) -> Any:
    return run_on_store(work)


def _act(request: HttpRequest, folder: Folder) -> tuple[str, str]:
    """Carry out the posted action; the message to show and the page to open next (a new note's editor;
    empty: stay). Raises the services' refusals."""
    action = request.POST.get("action", "")
    path = _relative(request.POST.get("path", ""))
    if action == "note":
        if not path.lower().endswith(".md"):
            path = f"{path}.md"
        document = _on_store(lambda store: document_create(store=store, folder=folder, path=path))
        return f"Created {document.user_path}.", reverse(
            "admin:suggestions_suggestion_editor", args=[document.doc_id]
        )
    if action == "folder":
        _on_store(lambda store: subfolder_create(store=store, folder=folder, path=path))
        return f"Created the folder {folder.name}{path}.", ""
    row = folder.documents.filter(path=path).first()
    if row is None or is_trashed(row.path):
        raise InvalidPath(f"{folder.name}{path} does not exist")
    if action == "move":
        new = _relative(request.POST.get("new_path", ""))
        is_folder = row.type == "folder"
        report = _on_store(
            lambda store: entry_move(store, folder_id=folder.pk, old=path, new=new, folder=is_folder)
        )
        return f"Moved to {folder.name}{new}; {report.links_rewritten} link(s) rewritten.", ""
    if action == "trash":
        force = request.POST.get("force") == "1"
        by = request.user.get_username()
        report = _on_store(
            lambda store: documents_trash(store=store, doc_ids=[row.doc_id], force=force, by=by)
        )
        return f"Moved {counted(len(report.trashed), 'entry', 'entries')} to the trash.", ""
    raise InvalidPath("action must be note, folder, move or trash")


def tree_action_view(
    model_admin: ModelAdmin[Suggestion], request: HttpRequest, folder_id: int
) -> HttpResponse:
    """POST ``action`` (note, folder, move, trash), ``path`` and for a move ``new_path``; JSON answer."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    folder = _folder_or_404(request, folder_id)
    if not request.user.has_perm(EDIT_LIVE_PERMISSION):
        raise PermissionDenied
    try:
        message, then = _act(request, folder)
    except (InvalidPath, FileExistsError, MoveRefused, DeleteRefused) as exc:
        return JsonResponse({"ok": False, "reason": str(exc)}, status=400)
    return JsonResponse({"ok": True, "message": message, "open": then})
