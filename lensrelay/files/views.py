"""y-sweet's file routes for Relay clients: `/f/<doc_id>/...` upload and download URLs, the filesystem
store's upload and download, existence, history and deleting an old blob.

Token and folder checks are those of the document routes: a document outside the token's folders is
answered exactly like a missing one (404). Uploading needs an edit or admin token; the local upload and
download routes also take the signed ticket that upload-url and download-url put in their URLs.
"""

from __future__ import annotations

import asyncio
import io
import posixpath

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParser, MultiPartParserError
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from lensrelay.access.auth import Access
from lensrelay.access.bearer import bearer_access
from lensrelay.access.limits import body_too_large, read_body
from lensrelay.access.user_content import user_content_response, user_content_url
from lensrelay.docstore.acting import act_for_this_request
from lensrelay.docstore.tombstones import PURGED_MESSAGE, DocumentPurged, document_is_purged
from lensrelay.files import pending, selectors, transfer
from lensrelay.files.blobs import (
    BlobCorrupt,
    BlobMissing,
    InvalidHash,
    blob_delete,
    blob_exists,
    blob_list,
    blob_put,
    blob_read,
    sha256_hex,
    validate_hash,
)
from lensrelay.files.kinds import mimetype


def _not_found(doc_id: str) -> JsonResponse:
    return JsonResponse({"error": f"Document not found: {doc_id[:100]}"}, status=404)


def _bad_hash() -> JsonResponse:
    return JsonResponse({"error": "hash must be the sha256 of the file: 64 hexadecimal digits."}, status=400)


def _purged(doc_id: str) -> JsonResponse:
    return JsonResponse({"error": PURGED_MESSAGE, "docId": doc_id[:100]}, status=409)


def _no_write() -> JsonResponse:
    return JsonResponse(
        {"error": "This token may not upload or delete files (edit or admin role needed)."}, status=403
    )


async def _authorize(
    request: HttpRequest, doc_id: str, *, write: bool = False, register: bool = False
) -> tuple[Access | None, JsonResponse | None]:
    """The caller's access to the document's files, or the answer to give instead. With `register`, an
    unknown id (a file a client is about to add) is recorded for the caller's folder first."""
    # A y-sweet client token for this very document works too (lensrelay.access.client_tokens).
    found = await bearer_access(request, doc_id)
    if isinstance(found, JsonResponse):
        return None, found
    access = found
    act_for_this_request(access.actor)
    if not selectors.file_doc_id_valid(doc_id):
        return access, _not_found(doc_id)
    known, folder_id = await sync_to_async(selectors.file_scope)(doc_id)
    if not known and register and access.can_write_live:
        try:
            await sync_to_async(pending.file_doc_register)(access=access, doc_id=doc_id)
        except pending.TooManyPending as exc:
            return access, JsonResponse({"error": str(exc)}, status=429)
        except DocumentPurged:
            return access, _purged(doc_id)
        known, folder_id = await sync_to_async(selectors.file_scope)(doc_id)
        if not known:  # registered for no folder: only a token for every folder may use it
            return access, _not_found(doc_id)
    if not known or not access.sees_folder(folder_id):
        return access, _not_found(doc_id)
    if write and not access.can_write_live:
        return access, _no_write()
    return access, None


def _too_many_blobs() -> JsonResponse:
    return JsonResponse(
        {
            "error": f"This file has no folder entry yet and already holds {pending.PENDING_BLOBS_PER_FILE} "
            "uploads; add its entry before uploading another version."
        },
        status=429,
    )


def _hash_arg(request: HttpRequest) -> str | None:
    try:
        return validate_hash(request.GET.get("hash"))
    except InvalidHash:
        return None


@csrf_exempt
@require_http_methods(["POST"])
async def upload_url(request: HttpRequest, doc_id: str) -> HttpResponse:
    _, error = await _authorize(request, doc_id, write=True, register=True)
    if error is not None:
        return error
    digest = _hash_arg(request)
    if digest is None:
        return _bad_hash()
    if not await sync_to_async(pending.pending_blob_allowed)(doc_id=doc_id, hash=digest):
        return _too_many_blobs()
    raw_length = request.GET.get("content_length")
    length: int | None = None
    if raw_length:
        try:
            length = int(raw_length)
        except ValueError:
            length = -1
        if length < 0:
            return JsonResponse({"error": "content_length must be a whole number of bytes."}, status=400)
        if length > settings.LENSRELAY_MAX_FILE_BYTES:
            return body_too_large(settings.LENSRELAY_MAX_FILE_BYTES)
    url = transfer.upload_url(
        doc_id=doc_id, hash=digest, content_type=request.GET.get("content_type", ""), content_length=length
    )
    return JsonResponse({"uploadUrl": request.build_absolute_uri(url)})


@require_http_methods(["GET"])
async def download_url(request: HttpRequest, doc_id: str) -> HttpResponse:
    _, error = await _authorize(request, doc_id)
    if error is not None:
        return error
    digest = _hash_arg(request)
    if digest is None:
        return _bad_hash()
    if not await asyncio.to_thread(blob_exists, doc_id=doc_id, hash=digest):
        return JsonResponse({"error": f"No file {digest} is stored for {doc_id}."}, status=404)
    path = await sync_to_async(selectors.file_path)(doc_id)
    url = await asyncio.to_thread(
        transfer.download_url,
        doc_id=doc_id,
        hash=digest,
        content_type=mimetype(path) if path else "application/octet-stream",
        filename=posixpath.basename(path),
    )
    return JsonResponse(
        {"downloadUrl": user_content_url(relative=url, absolute=request.build_absolute_uri(url))}
    )


async def _ticket_or_token(request: HttpRequest, doc_id: str, *, action: str) -> JsonResponse | None:
    """The local routes accept the signed ticket of upload-url/download-url, or a bearer token."""
    digest = _hash_arg(request)
    if digest is None:
        return _bad_hash()
    ticket = request.GET.get("ticket")
    if ticket:
        if transfer.ticket_valid(ticket, action=action, doc_id=doc_id, hash=digest):
            return None
        return JsonResponse(
            {"error": "This file URL is invalid or has expired; ask for a new one."}, status=403
        )
    _, error = await _authorize(request, doc_id, write=action == "upload", register=action == "upload")
    return error


def _uploaded_bytes(request: HttpRequest, body: bytes) -> bytes | None:
    """The file in a multipart body (the first file field), or the body itself."""
    if not (request.content_type or "").startswith("multipart/"):
        return body
    parser = MultiPartParser(request.META, io.BytesIO(body), request.upload_handlers, request.encoding)
    _, files = parser.parse()
    for name in files:
        uploaded = files.get(name)
        if uploaded is not None:
            data: bytes = uploaded.read()
            return data
    return None


@csrf_exempt
@require_http_methods(["POST", "PUT"])
async def upload(request: HttpRequest, doc_id: str) -> HttpResponse:
    error = await _ticket_or_token(request, doc_id, action="upload")
    if error is not None:
        return error
    digest = _hash_arg(request)
    assert digest is not None
    limit = settings.LENSRELAY_MAX_FILE_BYTES
    # A multipart envelope adds a few hundred bytes around the file; the file itself is checked below.
    body = read_body(request, limit=limit + 64 * 1024)
    if body is None:
        return body_too_large(limit)
    try:
        data = _uploaded_bytes(request, body)
    except MultiPartParserError as exc:
        return JsonResponse({"error": f"The multipart body could not be read: {exc}"}, status=400)
    if data is None:
        return JsonResponse({"error": "The multipart body holds no file."}, status=400)
    if len(data) > limit:
        return body_too_large(limit)
    if sha256_hex(data) != digest:
        return JsonResponse(
            {"error": "The uploaded bytes do not match the hash; nothing was stored.", "hash": digest},
            status=400,
        )
    # A ticket handed out before a purge is still signed: the tombstone decides.
    if await sync_to_async(document_is_purged)(doc_id):
        return _purged(doc_id)
    if not await sync_to_async(pending.pending_blob_allowed)(doc_id=doc_id, hash=digest):
        return _too_many_blobs()
    await asyncio.to_thread(blob_put, doc_id=doc_id, data=data)
    return JsonResponse({"ok": True, "hash": digest, "size": len(data)})


@require_http_methods(["GET"])
async def download(request: HttpRequest, doc_id: str) -> HttpResponse:
    error = await _ticket_or_token(request, doc_id, action="download")
    if error is not None:
        return error
    digest = _hash_arg(request)
    assert digest is not None
    try:
        data = await asyncio.to_thread(blob_read, doc_id=doc_id, hash=digest)
    except BlobMissing:
        return JsonResponse({"error": f"No file {digest} is stored for {doc_id}."}, status=404)
    except BlobCorrupt:
        return JsonResponse({"error": "The stored file does not match its hash."}, status=502)
    path = await sync_to_async(selectors.file_path)(doc_id)
    response = user_content_response(
        data=data,
        content_type=mimetype(path) if path else "application/octet-stream",
        filename=posixpath.basename(path) or digest,
    )
    response["ETag"] = f'"{digest}"'
    # Content-addressed: these bytes never change.
    response["Cache-Control"] = "private, max-age=31536000, immutable"
    return response


@require_http_methods(["HEAD"])
async def exists(request: HttpRequest, doc_id: str) -> HttpResponse:
    """200 when the document has a stored file (with ?hash=, that one), 404 otherwise."""
    _, error = await _authorize(request, doc_id)
    if error is not None:
        return HttpResponse(status=error.status_code)
    if "hash" in request.GET:
        digest = _hash_arg(request)
        if digest is None:
            return HttpResponse(status=400)
        found = await asyncio.to_thread(blob_exists, doc_id=doc_id, hash=digest)
    else:
        found = bool(await asyncio.to_thread(blob_list, doc_id=doc_id))
    return HttpResponse(status=200 if found else 404)


@require_http_methods(["GET"])
async def history(request: HttpRequest, doc_id: str) -> HttpResponse:
    _, error = await _authorize(request, doc_id)
    if error is not None:
        return error
    blobs = await asyncio.to_thread(blob_list, doc_id=doc_id)
    current = await sync_to_async(selectors.file_hash)(doc_id)
    return JsonResponse(
        {
            "files": [
                {
                    "hash": blob.hash,
                    "size": blob.size,
                    "lastModified": int(blob.modified.timestamp() * 1000) if blob.modified else None,
                    "isLatest": blob.hash == current,
                }
                for blob in blobs
            ]
        }
    )


@csrf_exempt
@require_http_methods(["DELETE"])
async def delete(request: HttpRequest, doc_id: str, hash: str) -> HttpResponse:
    """Delete one stored version of a file. The version the file's entry names is refused: deleting the
    file itself goes through the folder (to the trash), never by losing its bytes."""
    _, error = await _authorize(request, doc_id, write=True)
    if error is not None:
        return error
    try:
        digest = validate_hash(hash)
    except InvalidHash:
        return _bad_hash()
    if await sync_to_async(selectors.file_hash)(doc_id) == digest:
        return JsonResponse(
            {"error": "This is the file's current content; delete the file from its folder instead."},
            status=409,
        )
    if not await asyncio.to_thread(blob_delete, doc_id=doc_id, hash=digest):
        return JsonResponse({"error": f"No file {digest} is stored for {doc_id}."}, status=404)
    return JsonResponse({"deleted": digest})
