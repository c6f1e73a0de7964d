from __future__ import annotations

from collections import Counter

from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, tool
from mcp_tools.transport.versions import server_version


class InfoArgs(ToolArgs):
    pass


@tool(
    name="info",
    title="About this knowledge base",
    description="List the folders you can see with their document counts, your role, and the server version.",
    args=InfoArgs,
)
async def info(ctx: ToolContext, args: InfoArgs) -> str:
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
    return "\n".join(lines)
