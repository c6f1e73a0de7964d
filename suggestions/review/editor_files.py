"""A file pasted or dropped into the editor, added beside the note as an attachment of its folder.

The editor embeds it as ``![[name]]`` once this answers. The file goes through the vault's own service
(``lensrelay.vault.attachments.attachment_write``: blob stored, entry in the folder document, every worker
and client follows) under the same size limit as a Relay client's upload. Adding a file changes the folder,
so it needs the live-edit permission (not only the permission to suggest); the admin session and its CSRF
token authenticate the request. The name is the uploaded file's own, made safe for a wikilink and never
a path: the file always lands in the note's directory, and a name already taken there gets a free one
(``name 1.png``), so nothing is ever replaced.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from datetime import UTC, datetime

from django.conf import settings
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.urls import reverse

from lensrelay.access.auth import EDIT_LIVE_PERMISSION, access_for_user
from lensrelay.docstore import folderdoc
from lensrelay.docstore.store import DocStore, run_on_store
from lensrelay.docstore.trashdoc import is_trashed
from lensrelay.files.kinds import MARKDOWN, file_kind
from lensrelay.models import Document, Folder
from lensrelay.text.vaultpath import InvalidPath
from lensrelay.vault.attachments import attachment_write
from suggestions.models import Suggestion
from suggestions.review.editor_page import MARKDOWN_TYPE

MAX_NAME_CHARS = 120
# What a wikilink or an Obsidian file name cannot hold, and what no file name should.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f\\/:*?\"<>|#^\[\]]")
# A browser names a pasted screenshot "image.png"; Obsidian calls it this.
_PASTED = "Pasted image {stamp}"
_EXTENSIONS = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "application/pdf": ".pdf",
}


def _refused(reason: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"ok": False, "reason": reason}, status=status)


def safe_name(raw: str, content_type: str, *, now: datetime) -> str:
    """The file's name as it will be stored: the last segment of what the browser sent, without control or
    link-breaking characters, an extension kept (or taken from the type), at most ``MAX_NAME_CHARS``.
    Raises InvalidPath when nothing usable is left or the name is a note's (``.md``)."""
    name = unicodedata.normalize("NFC", raw.replace("\\", "/").rsplit("/", 1)[-1])
    # Invisible format characters too (a right-to-left override can make "gnp.exe" read as "exe.png").
    name = "".join("-" if unicodedata.category(ch) in ("Cc", "Cf") else ch for ch in name)
    name = re.sub(r"\s+", " ", _UNSAFE.sub("-", name)).strip(" .")
    stem, extension = posixpath.splitext(name)
    if not extension:
        extension = _EXTENSIONS.get(content_type.split(";", 1)[0].strip().lower(), "")
    if not stem or stem.lower() == "image":
        stem = _PASTED.format(stamp=now.strftime("%Y%m%d%H%M%S"))
    if not extension:
        raise InvalidPath("the file needs a name with an extension (such as .png or .pdf)")
    if len(extension) > 16 or not re.fullmatch(r"\.[\w-]+", extension):
        raise InvalidPath("the file's extension is not one a vault can hold")
    name = f"{stem[: MAX_NAME_CHARS - len(extension)].rstrip(' .')}{extension}"
    if file_kind(name) == MARKDOWN:
        raise InvalidPath("a note cannot be added as a file: create it in the file tree")
    return name


def free_path(taken: set[str], directory: str, name: str) -> str:
    """``directory/name``, or ``directory/stem N.ext`` with the smallest N free (compared ignoring case, as
    the vault compares paths)."""
    stem, extension = posixpath.splitext(name)
    lowered = {path.lower() for path in taken}
    candidate = posixpath.join(directory, name)
    number = 1
    while candidate.lower() in lowered:
        candidate = posixpath.join(directory, f"{stem} {number}{extension}")
        number += 1
    return candidate


async def _write(store: DocStore, *, folder: Folder, directory: str, name: str, data: bytes) -> Document:
    room = await store.get(folder.doc_id)
    assert room is not None
    path = free_path(set(folderdoc.entries(room.doc)), directory, name)
    return await attachment_write(store=store, folder=folder, path=path, data=data)


def attach_view(model_admin: ModelAdmin[Suggestion], request: HttpRequest, doc_id: str) -> HttpResponse:
    """POST a multipart ``file`` beside the note ``doc_id``; JSON ``{ok, name, path, embed, url}`` or
    ``{ok: false, reason}`` (nothing stored)."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if access_for_user(request.user) is None:
        raise PermissionDenied
    note = Document.objects.select_related("folder").filter(doc_id=doc_id, type=MARKDOWN_TYPE).first()
    if note is None or is_trashed(note.path):
        raise Http404("No such note")
    if not request.user.has_perm(EDIT_LIVE_PERMISSION):
        return _refused("Adding a file needs the permission “Can edit documents live”.", status=403)
    limit = settings.LENSRELAY_MAX_FILE_BYTES
    # The multipart envelope adds a little around the file; refuse a body far over the limit unread.
    if int(request.META.get("CONTENT_LENGTH") or 0) > limit + 64 * 1024:
        return _too_large(limit)
    try:
        uploaded = request.FILES.get("file")
    except MultiPartParserError as exc:
        return _refused(f"The upload could not be read: {exc}")
    if uploaded is None:
        return _refused("No file was sent.")
    if uploaded.size is None or uploaded.size > limit:
        return _too_large(limit)
    try:
        name = safe_name(uploaded.name or "", uploaded.content_type or "", now=datetime.now(UTC))
    except InvalidPath as exc:
        return _refused(f"Not added: {exc}.")
    data = uploaded.read()
    directory = posixpath.dirname(note.path)
    folder = note.folder
    try:
        document = run_on_store(
            lambda store: _write(store, folder=folder, directory=directory, name=name, data=data)
        )
    except (InvalidPath, FileExistsError, IsADirectoryError, ValueError) as exc:
        return _refused(f"Not added: {exc}.")
    stored = posixpath.basename(document.path)
    return JsonResponse(
        {
            "ok": True,
            "name": stored,
            "path": document.path,
            "doc_id": document.doc_id,
            "embed": f"![[{stored}]]",
            "url": reverse("admin:suggestions_suggestion_editor_file", args=[document.doc_id]),
            "message": f"Added {document.user_path}.",
        }
    )


def _too_large(limit: int) -> JsonResponse:
    megabytes = limit / (1024 * 1024)
    return _refused(
        f"The file is larger than the limit of {megabytes:g} MB ({limit} bytes); nothing was added.",
        status=413,
    )
