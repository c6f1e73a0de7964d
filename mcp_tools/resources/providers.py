"""MCP resources: providers register here; the endpoint pages through them and asks them to read URIs.

A provider (documents, the conformance fixtures, ...) implements three methods:

    async def list(self, ctx: ToolContext, cursor: str | None) -> tuple[list[dict], str | None]
        One page of `Resource` dicts ({"uri", "name", "title"?, "description"?, "mimeType"?, "size"?})
        the caller may see, and the provider's own cursor for the next page (None: no more).
    async def read(self, ctx: ToolContext, uri: str) -> list[dict] | None
        The contents ({"uri", "mimeType", "text"} or {"uri", "mimeType", "blob": base64}) if the URI is
        this provider's and the caller may read it, else None (then the next provider is asked).
    def templates(self) -> list[dict]
        `ResourceTemplate` dicts ({"uriTemplate", "name", "description"?, "mimeType"?}).

Register one with `register_resource_provider(provider)` at import time (or as a decorator on a class,
which is instantiated). A provider that only exists in the test configuration checks the setting itself.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Protocol, TypeVar, runtime_checkable

from mcp_tools.registry import ToolContext

# A page from one provider is a page; an empty page from a provider with a successor moves on instead.
MAX_EMPTY_PAGES_SKIPPED = 50


# Module-level names, because inside a provider class `list` is the method.
Resource = dict[str, Any]
Resources = list[Resource]


@runtime_checkable
class ResourceProvider(Protocol):
    async def list(self, ctx: ToolContext, cursor: str | None) -> tuple[Resources, str | None]: ...

    async def read(self, ctx: ToolContext, uri: str) -> Resources | None: ...

    def templates(self) -> Resources: ...


class ResourceNotFound(LookupError):
    def __init__(self, uri: str) -> None:
        super().__init__(f"Resource not found: {uri}")
        self.uri = uri


class InvalidCursor(ValueError):
    pass


PROVIDERS: list[ResourceProvider] = []

P = TypeVar("P")


def register_resource_provider(provider: P, *, first: bool = False) -> P:
    """Add a provider (an instance, or a class that is instantiated without arguments). `first`: asked
    before the others (a provider that lists nothing, so every page stays as it was)."""
    instance = provider() if isinstance(provider, type) else provider
    if not isinstance(instance, ResourceProvider):
        raise TypeError(f"{provider!r} lacks list(ctx, cursor), read(ctx, uri) or templates()")
    if first:
        PROVIDERS.insert(0, instance)
    else:
        PROVIDERS.append(instance)
    return provider


def _encode_cursor(index: int, inner: str | None) -> str:
    raw = json.dumps({"p": index, "c": inner}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[int, str | None]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
        index, inner = data["p"], data["c"]
    except (binascii.Error, ValueError, KeyError, TypeError) as exc:
        raise InvalidCursor(f"Invalid cursor: {cursor!r}") from exc
    if (
        not isinstance(index, int)
        or not 0 <= index < len(PROVIDERS)
        or not (inner is None or isinstance(inner, str))
    ):
        raise InvalidCursor(f"Invalid cursor: {cursor!r}")
    return index, inner


async def list_resources(ctx: ToolContext, cursor: str | None) -> dict[str, Any]:
    """A `resources/list` result: one provider's page, with a cursor spanning all providers."""
    index, inner = _decode_cursor(cursor) if cursor else (0, None)
    for _ in range(MAX_EMPTY_PAGES_SKIPPED):
        if index >= len(PROVIDERS):
            return {"resources": []}
        items, next_inner = await PROVIDERS[index].list(ctx, inner)
        if next_inner is not None:
            next_cursor: str | None = _encode_cursor(index, next_inner)
        elif index + 1 < len(PROVIDERS):
            next_cursor = _encode_cursor(index + 1, None)
        else:
            next_cursor = None
        if items or next_cursor is None:
            result: dict[str, Any] = {"resources": items}
            if next_cursor is not None:
                result["nextCursor"] = next_cursor
            return result
        index, inner = _decode_cursor(next_cursor)
    return {"resources": [], "nextCursor": _encode_cursor(index, inner)}


async def read_resource(ctx: ToolContext, uri: str) -> dict[str, Any]:
    """A `resources/read` result; raises ResourceNotFound when no provider has the URI for this caller."""
    for provider in PROVIDERS:
        contents = await provider.read(ctx, uri)
        if contents is not None:
            return {"contents": contents}
    raise ResourceNotFound(uri)


def list_templates() -> dict[str, Any]:
    return {"resourceTemplates": [template for provider in PROVIDERS for template in provider.templates()]}
