"""A note's outline for the editor's link completion (``[[Note#`` offers its headings, ``[[Note|`` its
aliases) and for Ctrl/Cmd-click on ``[[Note#Heading]]`` (the heading's line). Read-only JSON; who may list
the folder's tree (``editor_tree``) may read it, and only for a note of that folder.
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse

from lensrelay.access.auth import access_for_user
from lensrelay.docstore.persistence import stored_text
from lensrelay.docstore.trashdoc import is_trashed
from lensrelay.models import Document
from lensrelay.text.frontmatter import document_stats, split_frontmatter
from suggestions.models import Suggestion
from suggestions.review.editor_page import MARKDOWN_TYPE

# Enough for any real note; a hostile front matter with thousands of aliases is cut, not sent.
MAX_ALIASES = 100
MAX_HEADINGS = 500


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
