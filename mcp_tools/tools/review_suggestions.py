"""`review_suggestions`: the model asks to show suggestions to the person; hosts with MCP Apps render the
review page (`_meta.ui.resourceUri`), others read the text. The result's `_meta` hands the page its
single-use key for `review_decide` (mcp_tools/reviewing/app_keys.py); the model never sees it."""

from __future__ import annotations

from pydantic import Field, model_validator

from lensrelay.text.vaultpath import MAX_PATH_CHARS
from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, ToolResult, tool
from mcp_tools.reviewing import APP_META_KEY, REVIEW_APP_URI, app_keys
from mcp_tools.reviewing import page as _page  # noqa: F401  (registers the ui:// resource)
from mcp_tools.reviewing.reviewer import areviewer_of
from mcp_tools.reviewing.shown import ReviewOutput, ShownSuggestion, shown_suggestion
from suggestions.models import Suggestion
from suggestions.selectors import pending_rows, suggestion_in_folders

UID_PATTERN = r"^[0-9a-f]{1,32}$"
# A note with more pending suggestions than this shows the oldest ones first.
MAX_SHOWN = 100


class ReviewSuggestionsArgs(ToolArgs):
    path: str | None = Field(
        default=None, max_length=MAX_PATH_CHARS, description="A note: show all of its pending suggestions"
    )
    suggestion: str | None = Field(
        default=None, pattern=UID_PATTERN, description="One suggestion's id (as list_suggestions gives it)"
    )

    @model_validator(mode="after")
    def _one(self) -> ReviewSuggestionsArgs:
        if (self.path is None) == (self.suggestion is None):
            raise ValueError("give either path or suggestion")
        return self


def _lines(output: ReviewOutput) -> str:
    if not output.suggestions:
        return f"No pending suggestions in {output.path}."
    lines = [f"{len(output.suggestions)} suggestion(s) in {output.path}:"]
    for shown in output.suggestions:
        lines.append(f"- {shown.id} {shown.status.upper()} {shown.kind} by {shown.author}")
        lines += [f"  {{--{c.deleted}--}}{{++{c.inserted}++}}" for c in shown.changes[:3]]
    if output.can_decide:
        lines.append("The person can accept or reject them in the review shown in the chat.")
    else:
        lines.append(f"Shown for reading only: {output.why_not}")
    return "\n".join(lines)


def _shown_all(*, rows: list[Suggestion], raw: str | None) -> list[ShownSuggestion]:
    return [shown_suggestion(row, raw) for row in rows]


def _ordered(rows: list[Suggestion]) -> list[Suggestion]:
    return sorted(rows, key=lambda row: (row.created, row.pk))[:MAX_SHOWN]


@tool(
    name="review_suggestions",
    title="Show suggestions for review",
    description=(
        "Shows the person suggestions to review: all pending suggestions of a note (path), or one "
        "suggestion (its id). In a chat client with MCP Apps the person sees each change in context and "
        "can accept or reject it there, as themselves (when the session was connected with their OAuth "
        "consent and they may review); elsewhere the changes are listed as text. Use it when the person "
        "asks to review what was proposed."
    ),
    args=ReviewSuggestionsArgs,
    output=ReviewOutput,
    meta={"ui": {"resourceUri": REVIEW_APP_URI}},
)
async def review_suggestions(ctx: ToolContext, args: ReviewSuggestionsArgs) -> ToolResult:
    kb = await open_kb()
    if args.suggestion is not None:
        row = await kb.store.db(suggestion_in_folders, uid=args.suggestion, folder_ids=ctx.access.folder_ids)
        if row is None:
            raise ToolError(f"Error: No suggestion {args.suggestion} in the folders this session sees.")
        entry = kb.index.by_doc_id(row.doc_id)
        path, rows, query = row.path, [row], {"suggestion": row.uid}
    else:
        assert args.path is not None
        entry = kb.resolve(ctx, args.path)
        rows = _ordered(await kb.store.db(pending_rows, entry.doc_id))
        path, query = entry.user_path, {"path": entry.user_path}
    raw = await kb.raw_text(entry) if entry is not None and ctx.access.sees_folder(entry.folder_id) else None
    # On the database's thread: a decided suggestion names its reviewer, a row of its own.
    shown = await kb.store.db(_shown_all, rows=rows, raw=raw)
    reviewer = await areviewer_of(ctx.access)
    output = ReviewOutput(
        path=path, query=query, suggestions=shown, can_decide=reviewer.allowed, why_not=reviewer.refusal
    )
    meta = None
    if reviewer.allowed and ctx.access.token_id is not None:
        key = await app_keys.aissue(token_id=ctx.access.token_id, session_key=ctx.session_key)
        meta = {APP_META_KEY: {"key": key}}
    return ToolResult(_lines(output), output.model_dump(), (path,), meta=meta)
