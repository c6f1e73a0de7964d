from __future__ import annotations

import json

from pydantic import Field

from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, tool
from mcp_tools.writing import COMMENT_DESCRIPTION, proposer, require_read, writable_entry
from suggestions.errors import SuggestionError
from suggestions.filetext import FileOutcome, suggestion_propose_file_change
from suggestions.proposing import EditSpec, Outcome, suggestion_propose_edits


class OneEdit(ToolArgs):
    old_string: str = Field(description="Text to find, exactly as read shows it")
    new_string: str = Field(description="Replacement text")
    replace_all: bool = Field(default=False, description="Replace all occurrences (default false)")


class MultiEditArgs(ToolArgs):
    file_path: str = Field(description="Path to the document to modify")
    edits: list[OneEdit] = Field(
        min_length=1, description="Edits applied in sequence; all succeed or none apply"
    )
    dry_run: bool = Field(default=False, description="Preview as a unified diff without changing anything")
    include_content: bool = Field(
        default=False, description="Include the document's resulting text (accepted view) in the response"
    )
    comment: str | None = Field(default=None, description=COMMENT_DESCRIPTION)


def _short(text: str, limit: int = 50) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


@tool(
    name="multi_edit",
    title="Suggest several edits at once",
    description=(
        "Several find-and-replace edits on one document, applied in sequence and atomically (all succeed "
        "or none apply), written as one CriticMarkup suggestion for review. dry_run returns a unified diff "
        "and changes nothing. You must read the document first."
    ),
    args=MultiEditArgs,
    read_only=False,
    idempotent=False,
)
async def multi_edit(ctx: ToolContext, args: MultiEditArgs) -> str:
    kb = await open_kb()
    entry = writable_entry(ctx, kb, args.file_path)
    await require_read(ctx, entry, args.file_path)
    specs = [EditSpec(e.old_string, e.new_string, e.replace_all) for e in args.edits]
    outcome: Outcome | FileOutcome
    try:
        # A text file that is not markdown: one whole-file replacement suggestion, no markup.
        propose = suggestion_propose_edits if entry.is_markdown else suggestion_propose_file_change
        outcome = await propose(
            store=kb.store,
            entry=entry,
            proposer=proposer(ctx),
            specs=specs,
            tool="multi_edit",
            comment=args.comment,
            dry_run=args.dry_run,
        )
    except SuggestionError as exc:
        raise ToolError(
            json.dumps(
                {
                    "success": False,
                    "file_path": entry.user_path,
                    "error": str(exc),
                    "edits_applied": 0,
                    "message": "Operation failed. No changes applied - document unchanged.",
                    "recovery_hint": _hint(str(exc)),
                },
                ensure_ascii=False,
                indent=2,
            )
        ) from exc
    result: dict[str, object] = {
        "success": True,
        "file_path": entry.user_path,
        "dry_run": args.dry_run,
        "edits_applied": 0 if args.dry_run else len(specs),
        "edits": [
            {"old_string": _short(spec.old_string), "matched": True, "occurrences_replaced": count}
            for spec, count in zip(specs, outcome.occurrences, strict=True)
        ],
    }
    if args.dry_run:
        result["diff"] = outcome.diff
    else:
        assert outcome.suggestion is not None
        result["suggestion"] = outcome.suggestion.uid
        result["status"] = "pending review"
        if isinstance(outcome, FileOutcome):
            result["kind"] = "replace file (applied when accepted; no markup in the file)"
        else:
            result["hunks"] = len(outcome.hunks)
            result["characters_marked_for_deletion"] = outcome.marked_for_deletion
            result["characters_inserted"] = outcome.inserted
        if outcome.superseded:
            result["superseded"] = outcome.superseded
    if args.include_content:
        result["final_content"] = outcome.view_after
    return json.dumps(result, ensure_ascii=False, indent=2)


def _hint(error: str) -> str:
    if "not found" in error:
        return "Read the document to see its current content, then retry with the exact old_string."
    if "matches" in error:
        return "Set replace_all to true for that edit, or make its old_string longer so it is unique."
    if "delimiter" in error:
        return "Remove CriticMarkup from old_string/new_string; the server writes the markup itself."
    return "Check the error details and retry."
