"""y-sweet's server API (as jamsocket's Rust server serves it for `@y-sweet/sdk` and `@y-sweet/client`).

Server-side routes take an API token: `POST /doc/new`, `POST /doc/<id>/auth` (mints a client token, see
lensrelay.access.client_tokens), `GET /doc/<id>/as-update`, `POST /doc/<id>/update`, `/check_store`.
Client routes take an API token or the document's client token: `GET /d/<id>/as-update`,
`POST /d/<id>/update`, the versions, and the socket `/d/<id>/ws/<id>` (lensrelay.sync.consumer).
"""

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

from lensrelay.access.auth import Access
from lensrelay.access.bearer import bearer_access
from lensrelay.access.client_tokens import client_token_mint
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
from lensrelay.observability import metrics
from lensrelay.sync.consumer import DOC_ID
from lensrelay.vault.folders import doc_scope

logger = logging.getLogger(__name__)

_DOC_ID_RE = regex.compile(DOC_ID)  # fullmatch: `$` would accept a trailing newline


async def _authorize(
    request: HttpRequest, doc_id: str, *, client_token: bool = True
) -> tuple[Access | None, Room | None, HttpResponse | None]:
    access = await bearer_access(request, doc_id if client_token else None)
    if isinstance(access, HttpResponse):
        return None, None, access
    act_for_this_request(access.actor)
    known, folder_id = await sync_to_async(doc_scope)(doc_id)
    # A document outside the token's folders is reported exactly like a missing one.
    if not known or not access.sees_folder(folder_id) or not access.sees_document(doc_id):
        return access, None, JsonResponse({"error": f"Document not found: {doc_id}"}, status=404)
    room = await get_store().get(doc_id)
    if room is None:
        return access, None, JsonResponse({"error": f"Document not found: {doc_id}"}, status=404)
    return access, room, None


@require_GET
async def as_update(request: HttpRequest, doc_id: str, *, client_token: bool = True) -> HttpResponse:
    """The whole document as one Yjs update."""
    _, room, error = await _authorize(request, doc_id, client_token=client_token)
    if error is not None:
        return error
    assert room is not None
    await room.flushed()
    return user_content_response(
        data=room.state_update(), content_type="application/octet-stream", filename=f"{doc_id}.ydoc"
    )


@csrf_exempt
@require_POST
async def apply_update(request: HttpRequest, doc_id: str, *, client_token: bool = True) -> HttpResponse:
    """Apply one Yjs update (all or nothing)."""
    access, room, error = await _authorize(request, doc_id, client_token=client_token)
    if error is not None:
        return error
    assert access is not None and room is not None
    if not access.can_write_live:
        return JsonResponse(
            {"error": "This token may not write documents (edit or admin role, or a full client token)."},
            status=403,
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
    metrics.update_received_http()
    await room.flushed()
    return JsonResponse({"ok": True})


@require_GET
async def versions(request: HttpRequest, doc_id: str) -> HttpResponse:
    """The document's retained versions, newest first (lens-relay's `GET /d/<id>/versions`)."""
    _, _, error = await _authorize(request, doc_id)
    if error is not None:
        return error
    summaries = await sync_to_async(versions_summaries)(doc_id=doc_id)
    return user_json_response(summaries, filename=f"{doc_id}-versions.json")


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
    return user_json_response(
        {**summary, "text": version_text(found)}, filename=f"{doc_id}-version-{found.pk}.json"
    )


@csrf_exempt
@require_POST
async def new_doc(request: HttpRequest) -> HttpResponse:
    access = await bearer_access(request, None)
    if isinstance(access, HttpResponse):
        return access
    act_for_this_request(access.actor)
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
    known, folder_id = await sync_to_async(doc_scope)(doc_id)
    if known and access.sees_folder(folder_id):
        # y-sweet: creating an existing document is a no-op, so getOrCreateDocAndToken works for a
        # folder token on its own notes. One it may not see is answered as if it did not exist.
        return JsonResponse({"docId": doc_id})
    if not access.can_write_live or access.folder_ids is not None:
        return JsonResponse(
            {"error": "Creating standalone documents needs an edit or admin token not limited to folders."},
            status=403,
        )
    try:
        await get_store().create(doc_id, YDoc.Kind.STANDALONE)
    except DocumentPurged:
        # Never again under this id, not even empty: a client still holding the old state would sync it in.
        return JsonResponse({"error": PURGED_MESSAGE, "docId": doc_id}, status=409)
    return JsonResponse({"docId": doc_id})


@require_GET
async def server_as_update(request: HttpRequest, doc_id: str) -> HttpResponse:
    """y-sweet's server-side `GET /doc/<id>/as-update`: an API token only."""
    return await as_update(request, doc_id, client_token=False)


@csrf_exempt
@require_POST
async def server_update(request: HttpRequest, doc_id: str) -> HttpResponse:
    """y-sweet's server-side `POST /doc/<id>/update`: an API token only."""
    return await apply_update(request, doc_id, client_token=False)


def public_base(request: HttpRequest) -> str:
    """This server's URL as clients reach it (`LENSRELAY_PUBLIC_URL`, else the request's host)."""
    if settings.LENSRELAY_PUBLIC_URL:
        return str(settings.LENSRELAY_PUBLIC_URL).rstrip("/")
    scheme = "https" if request.is_secure() else "http"
    return f"{scheme}://{request.get_host()}"


def socket_base(request: HttpRequest) -> str:
    base = public_base(request)
    return base.replace("https://", "wss://", 1).replace("http://", "ws://", 1)


def _auth_request(raw: bytes) -> tuple[bool | None, int | None, str | None]:
    """An `AuthDocRequest` body: (read_only, valid_for_seconds, error). read_only None: not asked."""
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, RecursionError):
        return None, None, "The body must be JSON: {authorization?, userId?, validForSeconds?}."
    if not isinstance(body, dict):
        return None, None, "The body must be a JSON object: {authorization?, userId?, validForSeconds?}."
    authorization = body.get("authorization")
    if authorization not in (None, "full", "read-only"):
        return None, None, 'authorization must be "full" or "read-only".'
    seconds = body.get("validForSeconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int) or seconds <= 0):
        return None, None, "validForSeconds must be a positive whole number of seconds."
    read_only = None if authorization is None else authorization == "read-only"
    return read_only, seconds, None


@csrf_exempt
@require_POST
async def auth_doc(request: HttpRequest, doc_id: str) -> HttpResponse:
    """Mint a client token for one document (y-sweet's `POST /doc/<id>/auth`)."""
    access, _, error = await _authorize(request, doc_id, client_token=False)
    if error is not None:
        return error
    assert access is not None
    raw = read_body(request, limit=64 * 1024)
    if raw is None:
        return body_too_large(64 * 1024)
    read_only, seconds, problem = _auth_request(raw)
    if problem is not None:
        return JsonResponse({"error": problem}, status=400)
    if read_only is False and not access.can_write_live:
        # Asked for explicitly, a wider token is refused rather than quietly narrowed.
        return JsonResponse(
            {"error": 'This token may only read: ask for "read-only" ("full" needs an edit or admin role).'},
            status=403,
        )
    if read_only is None:
        read_only = not access.can_write_live  # y-sweet's default is full; a reader gets what it may
    minted = await sync_to_async(client_token_mint)(
        access=access, doc_id=doc_id, read_only=read_only, valid_for_seconds=seconds
    )
    return JsonResponse(
        {
            "url": f"{socket_base(request)}/d/{doc_id}/ws",
            "baseUrl": f"{public_base(request)}/d/{doc_id}",
            "docId": doc_id,
            "token": minted.raw,
            "authorization": "read-only" if minted.read_only else "full",
        }
    )


@csrf_exempt
async def check_store(request: HttpRequest) -> HttpResponse:
    """y-sweet's `GET|POST /check_store`: whether the document store answers (an API token needed)."""
    if request.method not in ("GET", "POST"):
        return JsonResponse({"error": "GET or POST"}, status=405)
    access = await bearer_access(request, None)
    if isinstance(access, HttpResponse):
        return access

    def check() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")

    try:
        await sync_to_async(check)()
    except Exception as exc:
        logger.exception("check_store: the database check failed")
        return JsonResponse({"ok": False, "error": type(exc).__name__})
    return JsonResponse({"ok": True})


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
