from __future__ import annotations

from pydantic import Field

from lensrelay.files import file_kind
from lensrelay.files.kinds import extension
from lensrelay.text.vaultpath import InvalidPath, split_user_path, with_md_suffix
from mcp_tools.kb import KnowledgeBase, open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, tool
from mcp_tools.tools.support.files import file_change_reply
from mcp_tools.tools.support.writing import (
    COMMENT_DESCRIPTION,
    describe,
    proposer,
    refuse_binary,
    refuse_trash_path,
    refuse_windows_name,
    require_read,
)
from suggestions.errors import SuggestionError
from suggestions.lifecycle.filecreate import CREATABLE_EXTENSIONS, suggestion_propose_file_create
from suggestions.lifecycle.filetext import suggestion_propose_file_change
from suggestions.lifecycle.proposing import suggestion_propose_create, suggestion_propose_edits


class WriteArgs(ToolArgs):
    file_path: str = Field(
        description="Path of the document to create or overwrite (e.g. 'Lens/New Note.md')"
    )
    content: str = Field(description="The complete content of the document")
    comment: str | None = Field(default=None, description=COMMENT_DESCRIPTION)


@tool(
    name="write",
    title="Suggest a new or rewritten document",
    description=(
        "Writes a document as a suggestion. A new path creates the document with its content as one "
        "{++addition++} for review; an existing document (read it first) gets word-level suggestion hunks "
        "turning its current text into the given content."
    ),
    args=WriteArgs,
    read_only=False,
    idempotent=False,
    tasks=True,
)
async def write(ctx: ToolContext, args: WriteArgs) -> str:
    if not ctx.access.can_suggest:
        raise ToolError("This token is read-only (role view): it cannot propose changes.")
    refuse_trash_path(args.file_path)
    kb = await open_kb()
    if kb.index.resolve(ctx.access, args.file_path) is None:
        refuse_windows_name(args.file_path)
    entry = kb.index.resolve(ctx.access, args.file_path)
    try:
        if entry is not None and not entry.is_markdown:
            refuse_binary(entry)
            await require_read(ctx, entry, args.file_path)
            changed = await suggestion_propose_file_change(
                store=kb.store,
                entry=entry,
                proposer=proposer(ctx),
                tool="write",
                replacement=args.content,
                comment=args.comment,
            )
            if changed.suggestion is not None:
                ctx.record_proposal(changed.suggestion.uid)
            return file_change_reply(entry, changed)
        if entry is not None:
            await require_read(ctx, entry, args.file_path)
            outcome = await suggestion_propose_edits(
                store=kb.store,
                entry=entry,
                proposer=proposer(ctx),
                tool="write",
                comment=args.comment,
                replacement=args.content,
            )
            assert outcome.suggestion is not None
            ctx.record_proposal(outcome.suggestion.uid)
            text = (
                f"Suggested changes to {entry.user_path} as CriticMarkup for human review "
                f"(suggestion {outcome.suggestion.uid}, pending; {describe(outcome)})."
            )
            if outcome.superseded:
                text += f" It supersedes {len(outcome.superseded)} earlier pending suggestion(s)."
            return text
        folder_id, relative = _new_location(ctx, kb, args.file_path)
        if extension(relative) in CREATABLE_EXTENSIONS:
            suggestion = await suggestion_propose_file_create(
                store=kb.store,
                folder_id=folder_id,
                relative_path=relative,
                content=args.content,
                proposer=proposer(ctx),
                comment=args.comment,
            )
            ctx.record_proposal(suggestion.uid)
            return (
                f"Suggested creating {suggestion.path} for human review (suggestion {suggestion.uid}, "
                "pending): the file is created when a reviewer accepts."
            )
        suggestion = await suggestion_propose_create(
            store=kb.store,
            folder_id=folder_id,
            relative_path=relative,
            content=args.content,
            proposer=proposer(ctx),
            comment=args.comment,
        )
    except SuggestionError as exc:
        raise ToolError(str(exc)) from exc
    except FileExistsError as exc:
        raise ToolError(f"Error: {exc}") from exc
    except InvalidPath as exc:
        raise ToolError(f"Error: invalid path {args.file_path!r}: {exc}") from exc
    ctx.record_proposal(suggestion.uid)
    return (
        f"Created {suggestion.path} with its content as a suggestion for human review "
        f"(suggestion {suggestion.uid}, pending)."
    )


def _new_location(ctx: ToolContext, kb: KnowledgeBase, file_path: str) -> tuple[int, str]:
    creatable = extension(file_path) in CREATABLE_EXTENSIONS
    if extension(file_path) and file_kind(file_path) != "markdown" and not creatable:
        # "x.png" must not quietly become a note "x.png.md".
        raise ToolError(
            f"Error: {file_path} does not exist, and write creates only markdown notes, HTML, JSON and "
            "canvas files. An existing text file (CSV, YAML, ...) can be rewritten: read it first."
        )
    try:
        folder_name, relative = split_user_path(file_path if creatable else with_md_suffix(file_path))
    except InvalidPath as exc:
        raise ToolError(f"Error: invalid path {file_path!r}: {exc}") from exc
    for folder_id, name in kb.index.visible_folders(ctx.access):
        if name == folder_name:
            if kb.index.exists(f"{folder_name}{relative}"):
                raise ToolError(f"Error: {folder_name}{relative} already exists.")
            return folder_id, relative
    raise ToolError(
        f"Error: Folder not found: {folder_name}. Call info to list the folders you can write to."
    )
