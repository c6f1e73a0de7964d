"""The JSON API under /api/ (django-ninja), authenticated with `Authorization: Bearer <token>`."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError
from ninja.openapi.docs import ABS_TPL_PATH, Swagger
from ninja.security import HttpBearer

from lensrelay.access.auth import REFUSALS, Access, aauthenticate_token, atoken_refusal
from lensrelay.access.bearer import header_refusal, unauthorized
from lensrelay.docstore.store import store_session
from lensrelay.docstore.trashdoc import TRASH
from lensrelay.models import Document, Folder
from lensrelay.sync.ysweet import socket_base
from lensrelay.text.vaultpath import InvalidPath
from lensrelay.vault.moves import MoveRefused, entry_move


class TokenAuth(HttpBearer):
    async def authenticate(self, request: HttpRequest, token: str) -> Access | None:  # type: ignore[override]
        access = await aauthenticate_token(token, oauth_surface="api")
        if access is None:
            # Said in the 401 (the exception handler below cannot ask the database itself).
            request.token_refusal = await atoken_refusal(token)  # type: ignore[attr-defined]
        return access


def request_access(request: Any) -> Access:
    access = request.auth
    assert isinstance(access, Access)
    return access


class OfflineSwagger(Swagger):
    """/api/docs from this server's own files (no CDN), though django-ninja is not an installed app.

    django-ninja renders its offline page only when "ninja" is in INSTALLED_APPS, and its CDN page from
    `template_cdn` otherwise. It is not installed here (an installed app is imported at start-up; see
    settings), and its templates and static files are added by path, so this points "CDN" at the
    offline page.
    """

    template_cdn = str(ABS_TPL_PATH / "swagger.html")


def _operation(summary: str, responses: dict[str, str], **extra: Any) -> dict[str, Any]:
    """An OpenAPI operation of a route served by a plain Django view (bearer-authenticated unless
    `security=[]`); JSON error bodies `{error, reason?}`."""
    answers: dict[str, Any] = {}
    for status, description in responses.items():
        answer: dict[str, Any] = {"description": description}
        if status.startswith(("4", "5")):
            answer["content"] = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
        answers[status] = answer
    return {"summary": summary, "responses": answers, "security": [{"TokenAuth": []}], **extra}


def _param(name: str, where: str = "path", *, required: bool = True, kind: str = "string") -> dict[str, Any]:
    return {"name": name, "in": where, "required": required, "schema": {"type": kind}}


_DOC = _param("doc_id")
_HASH_QUERY = _param("hash", "query")
_BINARY = {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
_JSON_OBJECT = {"application/json": {"schema": {"type": "object"}}}
_AUTH = {"401": "missing, malformed, unknown, expired or revoked token (the body's `reason` says which)"}
_DOC_ANSWERS = {**_AUTH, "404": "unknown document, or one outside the token's folders"}


def _as_update(summary: str) -> dict[str, Any]:
    return {"get": _operation(summary, {"200": "binary Yjs update", **_DOC_ANSWERS}, parameters=[_DOC])}


def _update(summary: str) -> dict[str, Any]:
    answers = {
        "200": "`{ok}`",
        "400": "not a Yjs update",
        **_DOC_ANSWERS,
        "403": "read-only",
        "413": "too large",
    }
    return {
        "post": _operation(
            summary, answers, parameters=[_DOC], requestBody={"required": True, "content": _BINARY}
        )
    }


# Routes served by plain Django views (binary bodies, y-sweet's and lens-relay's own paths, /mcp), listed so
# /api/docs and the OpenAPI schema show every HTTP route. lensrelay/urls.py is the one that serves them.
PLAIN_ROUTES: dict[str, dict[str, Any]] = {
    "/check_store": {
        method: _operation("y-sweet: whether the document store answers", {"200": "`{ok}`", **_AUTH})
        for method in ("get", "post")
    },
    "/doc/new": {
        "post": _operation(
            "y-sweet: create a standalone document (unscoped edit or admin token); an existing id is a no-op",
            {"200": "`{docId}`", "400": "bad docId", **_AUTH, "403": "token may not", "409": "purged id"},
            requestBody={"required": False, "content": _JSON_OBJECT},
        )
    },
    "/doc/{doc_id}/auth": {
        "post": _operation(
            "y-sweet: mint a client token for one document `{url, baseUrl, docId, token, authorization}`",
            {"200": "the client token", "400": "bad body", **_DOC_ANSWERS, "403": '"full" for a reader'},
            parameters=[_DOC],
            requestBody={"required": False, "content": _JSON_OBJECT},
        )
    },
    "/doc/{doc_id}/as-update": _as_update("y-sweet (server token): the whole document as one Yjs update"),
    "/doc/{doc_id}/update": _update("y-sweet (server token): apply one Yjs update, all or nothing"),
    "/d/{doc_id}/as-update": _as_update(
        "The whole document as one Yjs update (API token or the document's client token)"
    ),
    "/d/{doc_id}/update": _update(
        "Apply one Yjs update, all or nothing (API token or the document's client token)"
    ),
    "/d/{doc_id}/versions": {
        "get": _operation(
            "The document's versions, newest first", {"200": "list", **_DOC_ANSWERS}, parameters=[_DOC]
        )
    },
    "/d/{doc_id}/versions/{version_id}": {
        "get": _operation(
            "One version with its text, or (`?format=update`) its state as one Yjs update",
            {"200": "the version", **_DOC_ANSWERS},
            parameters=[_DOC, _param("version_id"), _param("format", "query", required=False)],
        )
    },
    "/f/{doc_id}/upload-url": {
        "post": _operation(
            "An upload URL for a file blob `{uploadUrl}`",
            {"200": "`{uploadUrl}`", "400": "bad hash or length", **_DOC_ANSWERS, "403": "read-only"},
            parameters=[
                _DOC,
                _HASH_QUERY,
                _param("content_type", "query", required=False),
                _param("content_length", "query", required=False, kind="integer"),
            ],
        )
    },
    "/f/{doc_id}/download-url": {
        "get": _operation(
            "A download URL for a stored blob `{downloadUrl}`",
            {"200": "`{downloadUrl}`", "400": "bad hash", **_DOC_ANSWERS},
            parameters=[_DOC, _HASH_QUERY],
        )
    },
    "/f/{doc_id}/upload": {
        "post": _operation(
            "The filesystem store's upload (multipart; the upload URL's ticket or a bearer token)",
            {"200": "stored", "400": "bad body or hash", **_DOC_ANSWERS, "403": "bad ticket"},
            parameters=[_DOC, _HASH_QUERY],
        )
    },
    "/f/{doc_id}/download": {
        "get": _operation(
            "The filesystem store's download (the download URL's ticket or a bearer token)",
            {"200": "the file", "400": "bad hash", **_DOC_ANSWERS, "403": "bad ticket"},
            parameters=[_DOC, _HASH_QUERY],
        )
    },
    "/f/{doc_id}/history": {
        "get": _operation("The document's stored blobs", {"200": "list", **_DOC_ANSWERS}, parameters=[_DOC])
    },
    "/f/{doc_id}/{hash}": {
        "delete": _operation(
            "Delete an old blob (not the one the entry names)",
            {"200": "deleted", **_DOC_ANSWERS, "403": "read-only", "409": "the current blob"},
            parameters=[_DOC, _param("hash")],
        )
    },
    "/f/{doc_id}": {
        "head": _operation(
            "Whether the document (or `?hash=` blob) has files: 200 or 404, no body",
            {"200": "yes", **_DOC_ANSWERS},
            parameters=[_DOC, _param("hash", "query", required=False)],
        )
    },
    "/ready": {
        "get": {**_operation("Readiness", {"200": "`{ok: true}`", "503": "not ready"}), "security": []}
    },
    "/metrics": {
        method: {
            "summary": "Prometheus metrics (text format, OpenMetrics on request); see docs/metrics.md",
            "responses": {
                "200": {
                    "description": "the exposition",
                    "content": {"text/plain": {"schema": {"type": "string"}}},
                },
                "401": {"description": "LENSRELAY_METRICS_TOKEN is set: missing or wrong metrics token"},
                "403": {
                    "description": "no metrics token is set and the address is not in LENSRELAY_METRICS_ALLOW"
                },
                "503": {"description": "the exposition cannot be built right now"},
            },
            # Its own token (or an allowed address), never an API token.
            "security": [{"MetricsToken": []}, {}],
        }
        for method in ("get", "head")
    },
    "/mcp": {
        "post": _operation(
            "The MCP endpoint (Streamable HTTP, JSON-RPC 2.0); see docs/mcp.md",
            {"200": "JSON-RPC answer or event stream", "202": "notification accepted", **_AUTH},
            requestBody={"required": True, "content": _JSON_OBJECT},
        )
    },
}


class LensRelayApi(NinjaAPI):
    """The ninja API, whose schema also lists the routes served by plain Django views (`PLAIN_ROUTES`)."""

    def get_openapi_schema(self, *, path_prefix: str | None = None, path_params: Any = None) -> Any:
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        schema["paths"].update(PLAIN_ROUTES)
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})["MetricsToken"] = {
            "type": "http",
            "scheme": "bearer",
            "description": "LENSRELAY_METRICS_TOKEN, for GET /metrics only",
        }
        components.setdefault("schemas", {})["Error"] = {
            "type": "object",
            "properties": {"error": {"type": "string"}, "reason": {"type": "string"}},
            "required": ["error"],
        }
        return schema


api = LensRelayApi(
    title="Lens Relay", version="0.1.0", auth=TokenAuth(), urls_namespace="api", docs=OfflineSwagger()
)


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    reason = header_refusal(request) or getattr(request, "token_refusal", None) or "unknown"
    return unauthorized(REFUSALS[reason], reason=reason)


class FolderOut(Schema):
    name: str
    doc_id: str
    documents: int


class DocumentOut(Schema):
    path: str
    folder: str
    doc_id: str
    ws_url: str


def ws_base(request: HttpRequest) -> str:
    return socket_base(request)


def _with_md(path: str) -> list[str]:
    """A path as given, and with ``.md`` when it has none: MCP tools accept both, so does the API."""
    return [path] if path.lower().endswith(".md") else [path, f"{path}.md"]


@api.get("/folders", response=list[FolderOut], summary="Folders the token can see")
async def list_folders(request: HttpRequest) -> list[FolderOut]:
    access = request_access(request)

    def query() -> list[FolderOut]:
        documents = Count("documents", filter=~Q(documents__type="folder"))
        folders = Folder.objects.annotate(n=documents).order_by("name")
        if access.folder_ids is not None:
            folders = folders.filter(id__in=access.folder_ids)
        return [FolderOut(name=f.name, doc_id=f.doc_id, documents=f.n) for f in folders]

    return await sync_to_async(query)()


@api.get("/documents", response=list[DocumentOut], summary="Documents, optionally by folder and path")
async def list_documents(
    request: HttpRequest, folder: str | None = None, path: str | None = None
) -> list[DocumentOut]:
    access = request_access(request)
    base = ws_base(request)

    def query() -> list[DocumentOut]:
        # The folders' trash is not listed (see lensrelay.vault.trash); Relay clients see it in filemeta_v0.
        documents = (
            Document.objects.select_related("folder")
            .exclude(type="folder")
            .exclude(path__startswith=TRASH + "/")
        )
        if access.folder_ids is not None:
            documents = documents.filter(folder_id__in=access.folder_ids)
        if folder:
            documents = documents.filter(folder__name=folder)
        if path:
            wanted = path if path.startswith("/") else f"/{path}"
            if folder is None and "/" in path.lstrip("/"):
                # A user-facing path names its folder first: "Lens/Notes/Ideas.md".
                name, _, rest = path.lstrip("/").partition("/")
                documents = documents.filter(folder__name=name, path__in=_with_md(f"/{rest}"))
            else:
                documents = documents.filter(path__in=_with_md(wanted))
        return [
            DocumentOut(
                path=d.user_path, folder=d.folder.name, doc_id=d.doc_id, ws_url=f"{base}/d/{d.doc_id}/ws"
            )
            for d in documents
        ]

    return await sync_to_async(query)()


class MoveIn(Schema):
    folder: str
    path: str  # folder-relative, as Relay clients name entries: "/Notes/Ideas.md"
    new_path: str


class MoveOut(Schema):
    folder: str
    path: str
    new_path: str
    links_rewritten: int
    documents_rewritten: int


class ErrorOut(Schema):
    error: str


def _relative(path: str) -> str:
    return path if path.startswith("/") else f"/{path}"


@api.post(
    "/documents/move",
    response={200: MoveOut, 400: ErrorOut, 403: ErrorOut, 404: ErrorOut},
    summary="Move or rename a note or sub-folder within its folder; every link to it follows (edit role)",
)
async def move_document(request: HttpRequest, body: MoveIn) -> tuple[int, MoveOut | ErrorOut]:
    access = request_access(request)
    if not access.can_write_live:
        return 403, ErrorOut(error=f"This token may not move notes (role {access.role}): edit or admin only.")
    old, new = _relative(body.path), _relative(body.new_path)
    folder = await Folder.objects.filter(name=body.folder).afirst()
    # Another folder's existence is not said: unknown and out of reach read alike.
    if folder is None or not access.sees_folder(folder.pk):
        return 404, ErrorOut(error=f"No folder named {body.folder!r}.")
    row = await Document.objects.filter(folder=folder, path=old).afirst()
    if row is None or row.path.startswith(TRASH + "/"):
        return 404, ErrorOut(error=f"{folder.name}{old} does not exist.")
    try:
        async with store_session() as store:
            report = await entry_move(
                store, folder_id=folder.pk, old=old, new=new, folder=row.type == "folder"
            )
    except (MoveRefused, InvalidPath) as exc:
        return 400, ErrorOut(error=str(exc))
    return 200, MoveOut(
        folder=folder.name,
        path=old,
        new_path=new,
        links_rewritten=report.links_rewritten,
        documents_rewritten=report.documents_rewritten,
    )
