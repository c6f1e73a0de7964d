"""The URLs a client uploads a blob to and downloads it from.

On S3-compatible storage these are presigned S3 URLs made by boto3 (through django-storages): the bytes go
straight to the bucket, signed for the announced type and length. No checksum header is signed in: Relay
clients do not send one. A blob is checked against its hash whenever it is read instead (`blob_read`).

On the filesystem store they are this server's own `/f/<doc>/upload` and
`/f/<doc>/download` routes with a signed, expiring ticket naming the document, the hash and the action, so
a client may use them without its bearer token, as it would a presigned URL.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.core import signing
from django.urls import reverse

from lensrelay.access.user_content import s3_overrides
from lensrelay.files.blobs import blob_key, file_storage, validate_hash

_SALT = "lensrelay.files.transfer"


def _s3_storage() -> Any | None:
    storage = file_storage()
    try:
        from storages.backends.s3 import S3Storage
    except ImportError:  # the s3 extra is not installed: the filesystem store is the only one
        return None
    return storage if isinstance(storage, S3Storage) else None


def uses_presigned_urls() -> bool:
    return _s3_storage() is not None


def ticket_make(*, action: str, doc_id: str, hash: str) -> str:
    return signing.dumps({"a": action, "d": doc_id, "h": validate_hash(hash)}, salt=_SALT, compress=True)


def ticket_valid(ticket: str, *, action: str, doc_id: str, hash: str) -> bool:
    """Whether a ticket from `ticket_make` grants this action on this blob and has not expired."""
    try:
        granted = signing.loads(ticket, salt=_SALT, max_age=settings.LENSRELAY_FILE_URL_SECONDS)
    except signing.BadSignature:  # expired tickets are BadSignature too
        return False
    return isinstance(granted, dict) and granted == {"a": action, "d": doc_id, "h": hash}


def _local_url(*, route: str, action: str, doc_id: str, hash: str) -> str:
    query = urlencode({"hash": hash, "ticket": ticket_make(action=action, doc_id=doc_id, hash=hash)})
    return f"{reverse(route, kwargs={'doc_id': doc_id})}?{query}"


def upload_url(*, doc_id: str, hash: str, content_type: str, content_length: int | None) -> str:
    """Where to PUT (S3) or POST/PUT (filesystem) the blob with this hash. Relative for the local routes:
    the view makes it absolute for the request's host."""
    hash = validate_hash(hash)
    s3 = _s3_storage()
    if s3 is None:
        return _local_url(route="file-upload", action="upload", doc_id=doc_id, hash=hash)
    params: dict[str, Any] = {
        "Bucket": s3.bucket_name,
        "Key": s3._normalize_name(blob_key(doc_id=doc_id, hash=hash)),
    }
    if content_type:
        params["ContentType"] = content_type
    if content_length is not None:
        params["ContentLength"] = content_length
    url: str = s3.connection.meta.client.generate_presigned_url(
        "put_object", Params=params, ExpiresIn=settings.LENSRELAY_FILE_URL_SECONDS
    )
    return url


def download_url(*, doc_id: str, hash: str, content_type: str = "", filename: str = "") -> str:
    """Where to GET the blob. A presigned S3 URL is signed to answer with the file's own type and the
    disposition of `lensrelay.access.user_content` (the local route sets those itself)."""
    hash = validate_hash(hash)
    s3 = _s3_storage()
    if s3 is None:
        return _local_url(route="file-download", action="download", doc_id=doc_id, hash=hash)
    url: str = s3.url(
        blob_key(doc_id=doc_id, hash=hash),
        parameters=s3_overrides(content_type=content_type, filename=filename or hash),
        expire=settings.LENSRELAY_FILE_URL_SECONDS,
    )
    return url
