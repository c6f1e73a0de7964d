"""`review_decide`: the review page's Accept and Reject. App-only (`_meta.ui.visibility: ["app"]`): hosts
hide it from the model, and the transport refuses any call without the page's single-use key
(mcp_tools/reviewing/app_keys.py). It decides as the person who granted the OAuth access, through the same
service as the admin and the editor (one claim, one winner), within the grant's folders."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lensrelay.access.acting import staff_actor
from lensrelay.docstore.acting import acting_as
from mcp_tools.kb import open_kb
from mcp_tools.registry import ToolArgs, ToolContext, ToolError, tool
from mcp_tools.reviewing import REVIEW_APP_URI, app_keys
from mcp_tools.reviewing.reviewer import areviewer_of
from mcp_tools.tools.review_suggestions import UID_PATTERN
from suggestions.lifecycle.deciding import suggestion_decide
from suggestions.selectors import suggestion_in_folders

# As the admin's and the editor's note field.
NOTE_MAX_CHARS = 2000


class ReviewDecideArgs(ToolArgs):
    suggestion: str = Field(pattern=UID_PATTERN, description="The suggestion's id")
    decision: Literal["accept", "reject"]
    note: str = Field(default="", max_length=NOTE_MAX_CHARS, description="The reviewer's note")
    app_key: str = Field(
        max_length=app_keys.KEY_MAX_CHARS, description="The review app's key (from the review result's _meta)"
    )


@tool(
    name="review_decide",
    title="Decide a suggestion (review app)",
    description=(
        "The review app's Accept and Reject: decides one pending suggestion as the person reviewing, with "
        "an optional note. Only the review app can call it."
    ),
    args=ReviewDecideArgs,
    read_only=False,
    idempotent=False,
    meta={"ui": {"resourceUri": REVIEW_APP_URI, "visibility": ["app"]}},
)
async def review_decide(ctx: ToolContext, args: ReviewDecideArgs) -> str:
    # The transport checked and spent `app_key` before this runs (dispatch: app-only tools).
    reviewer = await areviewer_of(ctx.access)
    if not reviewer.allowed:
        raise ToolError(f"Error: {reviewer.refusal}")
    kb = await open_kb()
    row = await kb.store.db(suggestion_in_folders, uid=args.suggestion, folder_ids=ctx.access.folder_ids)
    if row is None:
        raise ToolError(f"Error: No suggestion {args.suggestion} in the folders this session sees.")
    accept = args.decision == "accept"
    # The person decides, not the assistant: the note's history names them, like an admin decision.
    with acting_as(staff_actor(reviewer.user)):
        decision = await suggestion_decide(
            store=kb.store, suggestion=row, user=reviewer.user, accept=accept, note=args.note.strip()
        )
    if not decision.ok:
        raise ToolError(f"Error: Could not {args.decision} suggestion {row.uid}: {decision.reason}.")
    verb = "Accepted" if accept else "Rejected"
    detail = f" ({decision.detail})" if decision.detail else ""
    return f"{verb} the {row.kind} of {row.path}{detail}, as {reviewer.user.get_username()}."
