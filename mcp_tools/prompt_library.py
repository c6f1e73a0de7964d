"""The knowledge base's prompts, and completion of note paths and folder names for them and for the
`lens://{path}` resource template. Each renders for the caller: only its token's folders, its suggestions.

- `review_feedback {path?}`: what reviewers and people said about this token's suggestions (notes on
  decisions, replies in their discussions), to act on;
- `summarize_changes {folder, since}`: the notes of a folder changed since a date, to summarise;
- `fix_broken_links {folder}`: the wikilinks of a folder that name no note, to fix as suggestions.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from lensrelay.models import Document
from mcp_tools.kb import KnowledgeBase, open_kb, target_of
from mcp_tools.prompts import (
    Prompt,
    PromptArgument,
    PromptError,
    register_prompt,
    register_resource_completer,
)
from mcp_tools.registry import ToolContext
from mcp_tools.resources.documents import SCHEME
from mcp_tools.tools.list_suggestions import discussion
from suggestions.selectors import suggestions_of_token

LISTED = 200  # notes or links a prompt lists at most; it says how many more there were


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": {"type": "text", "text": text}}


def _more(total: int) -> str:
    return f"\n(and {total - LISTED} more)" if total > LISTED else ""


def _folder(ctx: ToolContext, kb: KnowledgeBase, name: str) -> tuple[int, str]:
    wanted = name.strip().strip("/")
    for folder_id, folder_name in kb.index.visible_folders(ctx.access):
        if folder_name == wanted:
            return folder_id, folder_name
    raise PromptError(f"Unknown folder: {name!r}. Complete the argument to see your folders.")


async def _review_feedback(ctx: ToolContext, arguments: dict[str, str]) -> list[dict[str, Any]]:
    if ctx.access.token_id is None:
        return [_user("This caller has no token, so no suggestions of its own: there is nothing to act on.")]
    kb = await open_kb()
    rows = await kb.store.db(
        suggestions_of_token,
        token_id=ctx.access.token_id,
        folder_ids=ctx.access.folder_ids,
        path=arguments.get("path") or None,
        limit=LISTED,
    )
    lines: list[str] = []
    for row in rows:
        said = discussion(row)
        if not row.note and not said and not row.accepted_with_changes:
            continue
        lines.append(f"- Suggestion {row.uid} ({row.status}, {row.kind} of {row.path}):")
        if row.note:
            lines.append(f"  The reviewer's note: {row.note}")
        if row.accepted_with_changes:
            lines.append(
                "  Accepted with the reviewer's changes: " + "; ".join(new for _, new in row.revised_hunks())
            )
        lines += [f"  {s.author} said: {s.text}" for s in said]
    if not lines:
        return [_user("Nobody has left notes on your suggestions yet: there is nothing to act on.")]
    return [
        _user(
            "People left notes on your suggestions in the knowledge base. For each: read the note it is "
            "about (read), then act on what they said. Where a suggestion was rejected with a reason, "
            "propose a corrected edit (edit); where someone asked a question, answer in its discussion "
            "(reply with the suggestion's id); where a reviewer changed your text, learn from it.\n\n"
            + "\n".join(lines)
        )
    ]


def _changed_since(folder_id: int, since: datetime) -> list[tuple[str, datetime]]:
    rows = Document.objects.filter(folder_id=folder_id, type="markdown", modified__gte=since)
    return [(row.user_path, row.modified) for row in rows.select_related("folder").order_by("-modified")]


async def _summarize_changes(ctx: ToolContext, arguments: dict[str, str]) -> list[dict[str, Any]]:
    kb = await open_kb()
    folder_id, name = _folder(ctx, kb, arguments["folder"])
    try:
        since = datetime.fromisoformat(arguments["since"].strip())
    except ValueError as exc:
        raise PromptError(
            f"`since` must be a date like 2026-11-01 (got {arguments['since'][:40]!r})."
        ) from exc
    if since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    changed = await kb.store.db(_changed_since, folder_id, since)
    if not changed:
        return [_user(f"No note of {name} changed since {since:%Y-%m-%d}: there is nothing to summarise.")]
    listed = "\n".join(f"- {path} (changed {when:%Y-%m-%d %H:%M})" for path, when in changed[:LISTED])
    return [
        _user(
            f"Summarise what changed in the folder {name} since {since:%Y-%m-%d}. Read each of these notes "
            "(read; the most recent first), group the changes by theme, and name any pending suggestions "
            f"the read footer lists.\n\n{listed}{_more(len(changed))}"
        )
    ]


async def _fix_broken_links(ctx: ToolContext, arguments: dict[str, str]) -> list[dict[str, Any]]:
    kb = await open_kb()
    folder_id, name = _folder(ctx, kb, arguments["folder"])
    graph = kb.link_graph(ctx)
    targets = {target_of(e) for e in kb.visible(ctx, files=True)}
    notes = [e for e in kb.visible(ctx) if e.folder_id == folder_id]
    texts = await kb.view_texts(notes)
    broken: list[str] = []
    for entry in notes:
        for resolved in graph.links(target_of(entry), texts.get(entry.doc_id, "")):
            target = resolved.resolution.target
            if target is None or target not in targets:
                broken.append(f"- {entry.user_path}: [[{resolved.link.target}]]")
    if not broken:
        return [_user(f"Every wikilink in {name} names a note: there is nothing to fix.")]
    listed = "\n".join(dict.fromkeys(broken[:LISTED]))
    return [
        _user(
            f"These wikilinks in the folder {name} name no note. For each, find the note it most likely "
            "means (glob, search), and propose the corrected link as a suggestion (edit); if no note fits, "
            f"leave it and say so.\n\n{listed}{_more(len(broken))}"
        )
    ]


async def _note_paths(ctx: ToolContext, prefix: str) -> list[str]:
    kb = await open_kb()
    wanted = prefix.casefold()
    return [e.user_path for e in kb.visible(ctx) if e.user_path.casefold().startswith(wanted)]


async def _folder_names(ctx: ToolContext, prefix: str) -> list[str]:
    kb = await open_kb()
    wanted = prefix.casefold()
    return [name for _, name in kb.index.visible_folders(ctx.access) if name.casefold().startswith(wanted)]


async def _complete(ctx: ToolContext, argument: str, prefix: str) -> list[str]:
    if argument == "path":
        return await _note_paths(ctx, prefix)
    if argument == "folder":
        return await _folder_names(ctx, prefix)
    return []


async def _complete_resource(ctx: ToolContext, uri: str, argument: str, prefix: str) -> list[str]:
    return await _note_paths(ctx, prefix) if uri == SCHEME + "{path}" and argument == "path" else []


FOLDER = PromptArgument("folder", "A folder's name (complete it to see yours)", required=True)

register_prompt(
    Prompt(
        name="review_feedback",
        title="Act on reviewers' notes",
        description="What people said about your suggestions (decision notes, replies), to act on",
        render=_review_feedback,
        arguments=(PromptArgument("path", "Only suggestions on this note or under this folder path"),),
        complete=_complete,
    )
)
register_prompt(
    Prompt(
        name="summarize_changes",
        title="Summarise a folder's changes",
        description="The notes of a folder changed since a date, to summarise",
        render=_summarize_changes,
        arguments=(FOLDER, PromptArgument("since", "A date, e.g. 2026-11-01", required=True)),
        complete=_complete,
    )
)
register_prompt(
    Prompt(
        name="fix_broken_links",
        title="Fix broken links",
        description="The wikilinks of a folder that name no note, to fix as suggestions",
        render=_fix_broken_links,
        arguments=(FOLDER,),
        complete=_complete,
    )
)
register_resource_completer(_complete_resource)
