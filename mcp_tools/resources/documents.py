"""Documents as MCP resources: `lens://Lens/Notes/Ideas.md`, the same text `read` shows.

A URI is `lens://` followed by the user path with each segment percent-encoded (UTF-8), so spaces,
Unicode and characters such as `#` or `?` survive any URI parser. Reading decodes the whole remainder at
once: no segment of a document path can contain `/`, so a client that expands the template `lens://{path}`
the RFC 6570 way (encoding `/` as `%2F`) reaches the same document as one that keeps the slashes.

Scope is the caller's: documents in folders the token does not see are neither listed nor readable, and
a URI naming one reads exactly like a URI naming nothing.

Many spellings name one document (any character percent-encoded or not, NFD or NFC, `.md` left out);
`canonical_of` resolves a URI exactly as reading it does and answers the one URI `resources/list` gives
that document, with its id, so subscriptions are kept once per document whatever the spelling.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote, unquote

from lensrelay.vault.paths import DocEntry
from mcp_tools.kb import KnowledgeBase, open_kb
from mcp_tools.registry import ToolContext, ToolError
from mcp_tools.resources.providers import InvalidCursor, Resources, register_resource_provider

SCHEME = "lens://"
MIME_TYPE = "text/markdown"
PAGE_SIZE = 100


@lru_cache(maxsize=8192)
def document_uri(user_path: str) -> str:
    """`Lens/Über Photosynthese.md` -> `lens://Lens/%C3%9Cber%20Photosynthese.md`. Each segment is encoded
    (no segment holds `/`); remembered, as results list the same notes again and again."""
    return SCHEME + quote(user_path, safe="/")


def path_of_uri(uri: str) -> str | None:
    """The user path a `lens://` URI names, or None when it is not one of ours or does not decode."""
    if not uri.startswith(SCHEME):
        return None
    try:
        path = unquote(uri[len(SCHEME) :], errors="strict")
    except UnicodeDecodeError:
        return None
    return path or None


def _encode_cursor(after: str) -> str:
    raw = json.dumps({"after": after}, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> str:
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        after = data["after"]
    except (binascii.Error, ValueError, KeyError, TypeError) as exc:
        raise InvalidCursor(f"Invalid cursor: {cursor!r}") from exc
    if not isinstance(after, str):
        raise InvalidCursor(f"Invalid cursor: {cursor!r}")
    return after


def _title(entry: DocEntry) -> str:
    name = entry.path.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


def document_of_uri(kb: KnowledgeBase, ctx: ToolContext, uri: str) -> DocEntry | None:
    """The markdown document a URI names, if the caller may see it: percent-decoded whole, NFC-normalised
    and resolved with `.md` optional by the path index, as every tool path is."""
    path = path_of_uri(uri)
    if path is None:
        return None
    try:
        entry = kb.resolve(ctx, path)
    except ToolError:
        return None
    return entry if entry.is_markdown else None


async def _document_at(ctx: ToolContext, uri: str) -> DocEntry | None:
    return document_of_uri(await open_kb(), ctx, uri)


@dataclass(frozen=True)
class CanonicalDocument:
    uri: str  # the URI `resources/list` gives the document
    doc_id: str


class DocumentResources:
    """The caller's markdown documents, ordered by user path; a cursor is the last path of a page, so
    documents added or removed between pages neither repeat nor shift the rest."""

    def __init__(self, page_size: int = PAGE_SIZE) -> None:
        self.page_size = page_size

    async def list(self, ctx: ToolContext, cursor: str | None) -> tuple[Resources, str | None]:
        after = _decode_cursor(cursor) if cursor else None
        kb = await open_kb()
        entries = [e for e in kb.visible(ctx) if after is None or e.user_path > after]
        page = entries[: self.page_size]
        texts = await kb.view_texts(page)
        items: Resources = [
            {
                "uri": document_uri(entry.user_path),
                "name": entry.user_path,
                "title": _title(entry),
                "mimeType": MIME_TYPE,
                "size": len(texts[entry.doc_id].encode("utf-8", "surrogatepass")),
            }
            for entry in page
        ]
        more = len(entries) > self.page_size
        return items, (_encode_cursor(page[-1].user_path) if more else None)

    async def read(self, ctx: ToolContext, uri: str) -> Resources | None:
        entry = await _document_at(ctx, uri)
        if entry is None:
            return None
        kb = await open_kb()
        return [{"uri": uri, "mimeType": MIME_TYPE, "text": await kb.view_text(entry)}]

    async def doc_id_of(self, ctx: ToolContext, uri: str) -> str | None:
        """The id of the markdown document the URI names for this caller, or None."""
        entry = await _document_at(ctx, uri)
        return None if entry is None else entry.doc_id

    async def canonical_of(self, ctx: ToolContext, uri: str) -> CanonicalDocument | None:
        """The document any spelling of a URI names for this caller, as one URI and id; None if none."""
        entry = await _document_at(ctx, uri)
        return None if entry is None else CanonicalDocument(document_uri(entry.user_path), entry.doc_id)

    def templates(self) -> Resources:
        return [
            {
                "uriTemplate": SCHEME + "{path}",
                "name": "document",
                "title": "Knowledge-base document",
                "description": (
                    "A markdown document by its path, folder first (e.g. lens://Lens/Notes/Ideas.md); "
                    "percent-encode each path segment. Reads the text as if pending suggestions were "
                    "accepted."
                ),
                "mimeType": MIME_TYPE,
            }
        ]


DOCUMENTS = DocumentResources()
register_resource_provider(DOCUMENTS)
