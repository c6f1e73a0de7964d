"""Where a search looks: the caller's folders, narrowed to a folder, sub-folder or document path.

Folders outside the caller's access are reported exactly like folders that do not exist.
"""

from __future__ import annotations

from dataclasses import dataclass

from lensrelay.search.query import MAX_QUERY_CHARS
from mcp_tools.kb import KnowledgeBase
from mcp_tools.registry import ToolContext, ToolError


@dataclass(frozen=True)
class SearchScope:
    folder_ids: frozenset[int] | None  # None: every folder (an unrestricted caller)
    prefix: str | None  # folder-relative: "/Notes/" for a sub-folder, "/Notes/Cell.md" for one document

    def holds(self, folder_id: int, path: str) -> bool:
        if self.folder_ids is not None and folder_id not in self.folder_ids:
            return False
        if self.prefix is None:
            return True
        return path.startswith(self.prefix) if self.prefix.endswith("/") else path == self.prefix


def require_query(text: str, *, empty: str, noun: str) -> None:
    """Refuse a blank or overlong query with a message saying what to do instead."""
    if not text.strip():
        raise ToolError(f"Error: The {noun} is empty. {empty}")
    if len(text) > MAX_QUERY_CHARS:
        raise ToolError(f"Error: The {noun} is too long (at most {MAX_QUERY_CHARS} characters).")


def search_scope(ctx: ToolContext, kb: KnowledgeBase, path: str | None) -> SearchScope:
    if not path or not path.strip("/"):
        return SearchScope(ctx.access.folder_ids, None)
    folder_name, _, rest = path.strip("/").partition("/")
    folder_id = next((fid for fid, name in kb.index.visible_folders(ctx.access) if name == folder_name), None)
    if folder_id is None:
        raise ToolError(f"Error: Folder not found: {path}")
    if not rest:
        return SearchScope(frozenset({folder_id}), None)
    document = kb.index.resolve(ctx.access, path) if not path.endswith("/") else None
    if document is not None:
        return SearchScope(frozenset({folder_id}), document.path)
    return SearchScope(frozenset({folder_id}), f"/{rest}/")


def notes_in_scope(ctx: ToolContext, kb: KnowledgeBase, scope: SearchScope) -> dict[str, str]:
    """doc id -> user path of every note the caller may see within the scope."""
    return {
        entry.doc_id: entry.user_path
        for entry in kb.index.visible(ctx.access)
        if scope.holds(entry.folder_id, entry.path)
    }
