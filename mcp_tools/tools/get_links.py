from __future__ import annotations

from pydantic import BaseModel, Field

from mcp_tools.kb import open_kb, target_of
from mcp_tools.registry import ToolArgs, ToolContext, ToolResult, tool


class GetLinksArgs(ToolArgs):
    file_path: str = Field(description="Path to the document (e.g. 'Lens/Photosynthesis.md')")


def _section(title: str, lines: list[str]) -> str:
    return title + "\n" + "\n".join(f"- {line}" for line in (lines or ["(none)"]))


class AmbiguousLink(BaseModel):
    link: str
    target: str
    candidates: list[str]


class GetLinksOutput(BaseModel):
    backlinks: list[str] = Field(description="Paths of the documents linking to this one")
    forward: list[str] = Field(description="Paths of the documents this one links to")
    unresolved: list[str] = Field(description="Link targets that name no document you can see")
    ambiguous: list[AmbiguousLink]


@tool(
    name="get_links",
    title="Links of a document",
    description=(
        "Get backlinks and forward links for a document: the documents that link TO it (backlinks) and "
        "the documents it links TO (forward links), plus its unresolved and ambiguous wikilinks. Embeds "
        "(![[diagram.png]]) count as links, so an image, PDF or canvas shows the notes embedding it."
    ),
    args=GetLinksArgs,
    output=GetLinksOutput,
)
async def get_links(ctx: ToolContext, args: GetLinksArgs) -> ToolResult:
    kb = await open_kb()
    entry = kb.resolve(ctx, args.file_path)
    graph = kb.link_graph(ctx)
    # Every file may be linked to (embeds of images, PDFs, canvases); only notes hold links.
    by_target = {target_of(e): e for e in kb.visible(ctx, files=True)}
    notes = kb.visible(ctx)
    texts = await kb.view_texts(notes)
    sources = {target_of(e): texts[e.doc_id] for e in notes}
    me = target_of(entry)

    forward: list[str] = []
    unresolved: list[str] = []
    ambiguous: list[str] = []
    choices: list[AmbiguousLink] = []
    for resolved in graph.links(me, sources.get(me, "")):
        resolution, link = resolved.resolution, resolved.link
        target = resolution.target
        # A link into a folder the caller cannot see is reported like an unresolved one.
        if target is None or target not in by_target:
            unresolved.append(f"[[{link.target}]]")
            continue
        forward.append(target.user_path)
        if resolution.ambiguous:
            others = ", ".join(c.user_path for c in resolution.candidates if c in by_target)
            ambiguous.append(f"[[{link.target}]] -> {target.user_path} (candidates: {others})")
            candidates = [c.user_path for c in resolution.candidates if c in by_target]
            choices.append(AmbiguousLink(link=link.target, target=target.user_path, candidates=candidates))
    backlinks = [source.user_path for source in graph.backlinks(me, sources)]
    parts = [
        _section("Backlinks (documents linking to this):", backlinks),
        _section("Forward links (documents this links to):", sorted(set(forward))),
    ]
    if unresolved:
        parts.append(_section("Unresolved links (no such document):", sorted(set(unresolved))))
    if ambiguous:
        parts.append(_section("Ambiguous links (resolved to the nearest):", sorted(set(ambiguous))))
    data = GetLinksOutput(
        backlinks=backlinks,
        forward=sorted(set(forward)),
        unresolved=sorted({u[2:-2] for u in unresolved}),
        ambiguous=choices,
    )
    return ToolResult("\n\n".join(parts), data.model_dump(), (*data.backlinks, *data.forward))
