from __future__ import annotations

from collections import Counter

from pydantic import BaseModel

from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolResult, tool
from mcp_tools.transport.versions import server_version


class InfoArgs(ToolArgs):
    pass


class FolderInfo(BaseModel):
    name: str
    documents: int


class InfoOutput(BaseModel):
    version: str
    token: str
    role: str
    all_folders: bool
    folders: list[FolderInfo]
    can_suggest: bool


@tool(
    name="info",
    title="About this knowledge base",
    description="List the folders you can see with their document counts, your role, and the server version.",
    args=InfoArgs,
    output=InfoOutput,
)
async def info(ctx: ToolContext, args: InfoArgs) -> ToolResult:
    kb = await open_kb()
    counts = Counter(e.folder_id for e in kb.visible(ctx))
    folders = kb.index.visible_folders(ctx.access)
    lines = [f"Lens Relay {server_version()}", f"Token: {ctx.access.name} (role: {ctx.access.role})"]
    scope = "all folders" if ctx.access.folder_ids is None else ", ".join(name for _, name in folders)
    lines.append(f"Access: {scope}")
    lines.append("")
    lines.append("Folders:")
    lines += [f"- {name}/ ({counts.get(fid, 0)} documents)" for fid, name in folders] or ["- (none)"]
    can = "read, search" + (", propose changes (suggestions)" if ctx.access.can_suggest else "")
    lines += ["", f"You can: {can}."]
    data = InfoOutput(
        version=server_version(),
        token=ctx.access.name,
        role=str(ctx.access.role),
        all_folders=ctx.access.folder_ids is None,
        folders=[FolderInfo(name=name, documents=counts.get(fid, 0)) for fid, name in folders],
        can_suggest=ctx.access.can_suggest,
    )
    return ToolResult("\n".join(lines), data.model_dump())
