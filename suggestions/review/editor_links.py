"""What the editor's links need beyond its own folder's tree, as read-only JSON for who may list that tree
(``editor_tree``): a note's outline for link completion (``[[Note#`` offers its headings, ``[[Note|`` its
aliases) and for Ctrl/Cmd-click on ``[[Note#Heading]]`` (the heading's line), only for a note of that
folder; and the other folders' entries, so that links into them resolve and open (paths only, no text).
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.urls import reverse

from lensrelay.access.auth import access_for_user
from lensrelay.docstore.persistence import stored_text
from lensrelay.docstore.trashdoc import TRASH, is_trashed
from lensrelay.models import Document, Folder
from lensrelay.text.frontmatter import document_stats, split_frontmatter
from suggestions.models import Suggestion
from suggestions.review.editor_page import MARKDOWN_TYPE

# Enough for any real note; a hostile front matter with thousands of aliases is cut, not sent.
MAX_ALIASES = 100
MAX_HEADINGS = 500
# A folder's entries sent at most: some 2 MB of JSON. Past it the editor calls the rest unresolved, told
# the list was cut, rather than stall on a listing of a folder far bigger than any vault people link in.
MAX_ENTRIES_PER_FOLDER = 20_000
# Names and paths are people's text: no browser that guesses a type may ever read markup in them.
_HTML_ESCAPED = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def aliases_of(properties: dict[str, Any] | None) -> list[str]:
    """The note's aliases as Obsidian reads them: ``aliases`` (or ``alias``), one text or a list of them."""
    if not properties:
        return []
    value = properties.get("aliases", properties.get("alias"))
    values = value if isinstance(value, list) else [value]
    texts = (str(v).strip() for v in values if isinstance(v, (str, int, float)))
    return [text for text in texts if text][:MAX_ALIASES]


def note_outline_view(
    model_admin: ModelAdmin[Suggestion], request: HttpRequest, folder_id: int, doc_id: str
) -> HttpResponse:
    """``{"path", "headings": [{"level", "text", "line"}], "aliases": [...]}`` of a note of the folder; 404
    for a note of another folder, a file, the trash or no such note."""
    if access_for_user(request.user) is None:
        raise PermissionDenied
    row = Document.objects.filter(folder_id=folder_id, doc_id=doc_id, type=MARKDOWN_TYPE).first()
    if row is None or is_trashed(row.path):
        raise Http404("No such note in this folder")
    text = stored_text(doc_id) or ""
    properties, _body, _error = split_frontmatter(text)
    headings = document_stats(text)["headings"][:MAX_HEADINGS]
    return JsonResponse({"path": row.path, "headings": headings, "aliases": aliases_of(properties)})


def other_folders_view(
    model_admin: ModelAdmin[Suggestion], request: HttpRequest, folder_id: int
) -> HttpResponse:
    """``{"editorUrl", "folders": [{"name", "outlineUrl", "entries": [{"doc_id", "path", "type"}],
    "truncated"}]}``: the notes and files of every folder but this one (its tree has them) that the person
    may see, by name; not their sub-folders, nor the trash. The URLs hold ``DOC`` for a note's doc_id."""
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET"])
    access = access_for_user(request.user)
    if access is None:
        raise PermissionDenied
    if not access.sees_folder(folder_id) or not Folder.objects.filter(pk=folder_id).exists():
        raise Http404("No such folder")
    others = [f for f in Folder.objects.exclude(pk=folder_id).order_by("name") if access.sees_folder(f.pk)]
    answer = {
        "editorUrl": reverse("admin:suggestions_suggestion_editor", args=["DOC"]),
        "folders": [_entries_of(folder) for folder in others],
    }
    return HttpResponse(json.dumps(answer).translate(_HTML_ESCAPED), content_type="application/json")


def _entries_of(folder: Folder) -> dict[str, Any]:
    rows = (
        folder.documents.exclude(type="folder")
        .exclude(path=TRASH)
        .exclude(path__startswith=TRASH + "/")
        .order_by("path")
        .values_list("doc_id", "path", "type")[: MAX_ENTRIES_PER_FOLDER + 1]
    )
    entries = [{"doc_id": doc_id, "path": path, "type": kind} for doc_id, path, kind in rows]
    return {
        "name": folder.name,
        "outlineUrl": reverse("admin:suggestions_suggestion_editor_note_outline", args=[folder.pk, "DOC"]),
        "entries": entries[:MAX_ENTRIES_PER_FOLDER],
        "truncated": len(entries) > MAX_ENTRIES_PER_FOLDER,
    }
