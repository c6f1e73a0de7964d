"""The JSON API under /api/ (django-ninja), authenticated with `Authorization: Bearer <token>`."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError
from ninja.openapi.docs import ABS_TPL_PATH, Swagger
from ninja.security import HttpBearer

from lensrelay.access.auth import Access, aauthenticate_token
from lensrelay.access.bearer import unauthorized
from lensrelay.docstore.trashdoc import TRASH
from lensrelay.models import Document, Folder


class TokenAuth(HttpBearer):
    async def authenticate(self, request: HttpRequest, token: str) -> Access | None:  # type: ignore[override]
        return await aauthenticate_token(token, oauth_surface="api")


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


api = NinjaAPI(
    title="Lens Relay", version="0.1.0", auth=TokenAuth(), urls_namespace="api", docs=OfflineSwagger()
)


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return unauthorized()


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
    if settings.LENSRELAY_PUBLIC_URL:
        base = settings.LENSRELAY_PUBLIC_URL.rstrip("/")
        return base.replace("https://", "wss://", 1).replace("http://", "ws://", 1)
    scheme = "wss" if request.is_secure() else "ws"
    return f"{scheme}://{request.get_host()}"


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
