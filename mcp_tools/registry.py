"""The tool registry: each tool is a pydantic argument model plus an async handler returning text, or a
`ToolResult` with the same answer as data (checked against the tool's output model) and the notes it names.

Tool modules (one per tool, under `mcp_tools/tools/`) register themselves with `@tool(...)`. The
transport lists them per caller and calls them; it never knows what a tool does.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from lensrelay.access.auth import Access
from mcp_tools.tool_icons import ICON_VERSIONS, tool_icons


class ToolError(Exception):
    """A failure the assistant should read: returned as a result with `isError: true`."""


class ToolArgs(BaseModel):
    """Base for argument models: unknown arguments are refused, as the schema promises.

    Each model is built (its validator and schema) when first used, not at import: a fresh server's first
    answer needs one tool's model, not all of them (issue 11, start-up)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


@dataclass
class ToolContext:
    access: Access
    # Read-before-edit is tracked under this key: the MCP session id, or the token and client name
    # in the stateless protocol era.
    session_key: str
    client_name: str = ""
    session_id: str | None = None
    # This server's address as the caller reached it (LENSRELAY_PUBLIC_URL first, else the request's
    # host once Django has checked it against ALLOWED_HOSTS), for links a person opens; None when unknown.
    public_base: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # The suggestions this call proposed (uids), so the transport can answer with a task that completes
    # when a person decides (the Tasks extension, mcp_tools/transport/tasking.py).
    proposed: list[str] = field(default_factory=list)

    def record_proposal(self, uid: str) -> None:
        """This call proposed the suggestion `uid` (a write tool says so once it is made)."""
        self.proposed.append(uid)

    async def record_read(self, doc_id: str) -> None:
        """Remember that this caller has read the document (read-before-edit)."""
        from mcp_tools.callers import sessions

        await sessions.arecord_read_coarse(session_key=self.session_key, doc_id=doc_id)

    async def has_read(self, doc_id: str) -> bool:
        from mcp_tools.callers import sessions

        return await sessions.ahas_read(session_key=self.session_key, doc_id=doc_id)


@dataclass(frozen=True)
class ToolResult:
    """An answer as text (what every client reads) and as data (`structuredContent`, matching the tool's
    `output` model), with the notes it lists (user paths, sent as `resource_link` items)."""

    text: str
    structured: dict[str, Any]
    links: tuple[str, ...] = ()
    # The result's `_meta`: for the host and an MCP Apps view, not the model (mcp_tools/reviewing/).
    meta: dict[str, Any] | None = None


Handler = Callable[[ToolContext, Any], Awaitable[str | ToolResult]]
# Output schemas and resource links arrived in 2025-06-18: older clients get the text alone.
NO_STRUCTURED_VERSIONS = frozenset({"2025-03-26"})
A = TypeVar("A", bound=ToolArgs)
R = TypeVar("R", str, ToolResult, str | ToolResult)


def _always() -> bool:
    return True


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    args: type[ToolArgs]
    handler: Handler
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    # Test fixtures (the conformance suite's) are registered only when the setting enables them.
    fixture: bool = False
    # A tool that needs optional parts (semantic search's model) is offered only while they are there.
    offered_when: Callable[[], bool] = _always
    # The shape of its `ToolResult.structured` (its `outputSchema`); None: it answers text only.
    output: type[BaseModel] | None = None
    # It proposes a suggestion a person decides: a client declaring the Tasks extension may be answered
    # with a task that completes on the decision (mcp_tools/transport/tasking.py).
    tasks: bool = False
    # The tool's `_meta` (MCP Apps: `{"ui": {"resourceUri": ..., "visibility": [...]}}`), in versions
    # whose `Tool` has `_meta`.
    meta: dict[str, Any] | None = None

    @property
    def app_only(self) -> bool:
        """Hidden from the model (MCP Apps `visibility: ["app"]`): only an app view may call it."""
        ui = (self.meta or {}).get("ui") or {}
        return list(ui.get("visibility") or ("model", "app")) == ["app"]

    def input_schema(self) -> dict[str, Any]:
        return copy.deepcopy(_input_schema(self.args))

    def output_schema(self) -> dict[str, Any] | None:
        return None if self.output is None else copy.deepcopy(_output_schema(self.output))

    def definition(self, protocol_version: str | None = None) -> dict[str, Any]:
        definition: dict[str, Any] = {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema(),
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.read_only,
                "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent,
                "openWorldHint": False,
            },
        }
        output = self.output_schema()
        if output is not None and protocol_version not in NO_STRUCTURED_VERSIONS:
            definition["outputSchema"] = output
        if protocol_version in ICON_VERSIONS:
            definition["icons"] = tool_icons(name=self.name, read_only=self.read_only)
        if self.meta is not None and protocol_version not in NO_STRUCTURED_VERSIONS:
            definition["_meta"] = self.meta
        return definition

    def available_to(self, access: Access) -> bool:
        return self.read_only or access.can_suggest

    def parse(self, arguments: dict[str, Any] | None) -> ToolArgs:
        try:
            return self.args.model_validate(arguments or {})
        except ValidationError as exc:
            raise ToolError(describe_validation_error(self.name, exc)) from exc


# A model's JSON schema is made once: pydantic builds it afresh at every call (~2 ms a tool), and every new
# session lists the tools (50 assistants starting at once held the loop for half a second).
@functools.cache
def _input_schema(args: type[BaseModel]) -> dict[str, Any]:
    schema = args.model_json_schema(by_alias=True)
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema["additionalProperties"] = False
    schema.setdefault("properties", {})
    return schema


@functools.cache
def _output_schema(output: type[BaseModel]) -> dict[str, Any]:
    schema = output.model_json_schema(mode="serialization")
    schema.pop("title", None)
    return schema


REGISTRY: dict[str, Tool] = {}


def tool(
    *,
    name: str,
    title: str,
    description: str,
    args: type[A],
    read_only: bool = True,
    destructive: bool = False,
    idempotent: bool = True,
    fixture: bool = False,
    offered_when: Callable[[], bool] = _always,
    output: type[BaseModel] | None = None,
    tasks: bool = False,
    meta: dict[str, Any] | None = None,
) -> Callable[[Callable[[ToolContext, A], Awaitable[R]]], Callable[[ToolContext, A], Awaitable[R]]]:
    def register(
        handler: Callable[[ToolContext, A], Awaitable[R]],
    ) -> Callable[[ToolContext, A], Awaitable[R]]:
        if name in REGISTRY:
            raise RuntimeError(f"tool {name!r} registered twice")
        REGISTRY[name] = Tool(
            name=name,
            title=title,
            description=description,
            args=args,
            handler=handler,
            read_only=read_only,
            destructive=destructive,
            idempotent=idempotent,
            fixture=fixture,
            offered_when=offered_when,
            output=output,
            tasks=tasks,
            meta=meta,
        )
        return handler

    return register


def describe_validation_error(tool_name: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        if error["type"] == "extra_forbidden":
            problems.append(f"unknown argument '{where}'")
        elif error["type"] == "missing":
            problems.append(f"missing required argument '{where}'")
        else:
            got = error.get("input")
            problems.append(f"'{where}': {error['msg']} (got {type(got).__name__} {got!r:.60})")
    return f"Invalid arguments for {tool_name}: " + "; ".join(problems) + "."
