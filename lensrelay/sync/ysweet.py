"""y-sweet compatible document endpoints: the whole document as one update, applying one, creating one."""

from __future__ import annotations

import json
import logging

import regex
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from lensrelay.access.auth import Access, aauthenticate_token
from lensrelay.access.bearer import bearer_token, unauthorized
from lensrelay.access.limits import body_too_large, read_body
from lensrelay.access.user_content import user_content_response, user_json_response
from lensrelay.docstore.acting import act_for_this_request
from lensrelay.docstore.room import Origin, Room
from lensrelay.docstore.store import get_store
from lensrelay.docstore.tombstones import PURGED_MESSAGE, DocumentPurged
from lensrelay.history.selectors import (
    version_get,
    version_summary,
    version_text,
    versions_of,
    versions_summaries,
)
from lensrelay.models import YDoc, new_doc_id
from lensrelay.sync.consumer import DOC_ID
from lensrelay.vault.folders import doc_scope

logger = logging.getLogger(__name__)

_DOC_ID_RE = regex.compile(DOC_ID)  # fullmatch: `$` would accept a trailing newline


async def _authorize(
    request: HttpRequest, doc_id: str
) -> tuple[Access | None, Room | None, HttpResponse | None]:
    access = await aauthenticate_token(bearer_token(request))
    if access is None:
        return None, None, unauthorized()
    act_for_this_request(access.actor)
    known, folder_id = await sync_to_async(doc_scope)(doc_id)
    # A document outside the token's folders is reported exactly like a missing one.
    if not known or not access.sees_folder(folder_id):
        return access, None, JsonResponse({"error": f"Document not found: {doc_id}"}, status=404)
    room = await get_store().get(doc_id)
    if room is None:
        return access, None, JsonResponse({"error": f"Document not found: {doc_id}"}, status=404)
    return access, room, None


@require_GET
async def as_update(request: HttpRequest, doc_id: str) -> HttpResponse:
    _, room, error = await _authorize(request, doc_id)
    if error is not None:
        return error
    assert room is not None
    await room.flushed()
    return user_content_response(
        data=room.state_update(), content_type="application/octet-stream", filename=f"{doc_id}.ydoc"
    )


@csrf_exempt
@require_POST
async def apply_update(request: HttpRequest, doc_id: str) -> HttpResponse:
    access, room, error = await _authorize(request, doc_id)
    if error is not None:
        return error
    assert access is not None and room is not None
    if not access.can_write_live:
        return JsonResponse(
            {"error": "This token may not write documents (edit or admin role needed)."}, status=403
        )
    limit = settings.LENSRELAY_MAX_FRAME_BYTES
    body = read_body(request, limit=limit)
    if body is None:
        return body_too_large(limit)
    try:
        room.apply_update(body, Origin("http", author=access.actor.label))
    except ValueError as exc:
        return JsonResponse(
            {"error": "The body is not a valid Yjs update; nothing was applied.", "detail": str(exc)[:200]},
            status=400,
        )
    await room.flushed()
    return JsonResponse({"ok": True})


@require_GET
async def versions(request: HttpRequest, doc_id: str) -> HttpResponse:
    """The document's retained versions, newest first (lens-relay's `GET /d/<id>/versions`)."""
    _, _, error = await _authorize(request, doc_id)
    if error is not None:
        return error
    return JsonResponse(await sync_to_async(versions_summaries)(doc_id=doc_id), safe=False)


@require_GET
async def version(request: HttpRequest, doc_id: str, version_id: str) -> HttpResponse:
    """One version: its summary and text, or (`?format=update`) its whole state as one Yjs update."""
    _, _, error = await _authorize(request, doc_id)
    if error is not None:
        return error
    found = await sync_to_async(version_get)(doc_id=doc_id, version_id=version_id)
    if found is None:
        return JsonResponse({"error": f"Version not found: {version_id}"}, status=404)
    if request.GET.get("format") == "update":
        return user_content_response(
            data=bytes(found.state), content_type="application/octet-stream", filename=f"{doc_id}.ydoc"
        )
    newest = await sync_to_async(versions_of)(doc_id=doc_id)
    summary = version_summary(found, latest=bool(newest) and newest[0].pk == found.pk)
    return user_json_response({**summary, "text": version_text(found)})


@csrf_exempt
@require_POST
async def new_doc(request: HttpRequest) -> HttpResponse:
    access = await aauthenticate_token(bearer_token(request))
    if access is None:
        return unauthorized()
    act_for_this_request(access.actor)
    if not access.can_write_live or access.folder_ids is not None:
        return JsonResponse(
            {"error": "Creating standalone documents needs an edit or admin token not limited to folders."},
            status=403,
        )
    raw = read_body(request, limit=settings.LENSRELAY_MAX_FRAME_BYTES)
    if raw is None:
        return body_too_large(settings.LENSRELAY_MAX_FRAME_BYTES)
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, RecursionError):
        return JsonResponse({"error": "The body must be JSON."}, status=400)
    doc_id = body.get("docId") if isinstance(body, dict) else None
    if doc_id is None:
        doc_id = new_doc_id()
    if not isinstance(doc_id, str) or not _DOC_ID_RE.fullmatch(doc_id):
        return JsonResponse({"error": "docId must be 1-100 characters of A-Z a-z 0-9 _ . -"}, status=400)
    try:
        await get_store().create(doc_id, YDoc.Kind.STANDALONE)
    except DocumentPurged:
        # Never again under this id, not even empty: a client still holding the old state would sync it in.
        return JsonResponse({"error": PURGED_MESSAGE, "docId": doc_id}, status=409)
    return JsonResponse({"docId": doc_id})


@require_GET
async def ready(request: HttpRequest) -> HttpResponse:
    def check() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")

    try:
        await sync_to_async(check)()
    except Exception:
        # Unauthenticated: say only "not ready"; the reason (host, port, role) goes to the log.
        logger.exception("not ready: the database check failed")
        return JsonResponse({"ok": False}, status=503)
    return JsonResponse({"ok": True})
