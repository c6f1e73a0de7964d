"""Asking the person behind an assistant to confirm a risky proposal, where the client can ask them.

A forced `delete` of a note other notes link to is confirmed through `elicitation/create` when the session
declared the elicitation capability (handshake versions from 2025-06-18, over a streamed response). Where
the client cannot ask (no capability, 2026-07-28's stateless requests, no stream), the proposal goes ahead
and the answer says how it was checked instead: the reviewer sees every linking note before deciding.
"""

from __future__ import annotations

from typing import Any

from mcp_tools.registry import ToolContext, ToolError
from mcp_tools.transport.outbound import ClientRequestError

CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {
        "confirm": {
            "type": "boolean",
            "title": "Suggest the delete",
            "description": "The linking notes' links stop resolving if a reviewer accepts it",
            "default": False,
        }
    },
    "required": ["confirm"],
}


async def confirm_forced_delete(ctx: ToolContext, *, path: str, linking: list[str]) -> str:
    """What to add to the answer; raises ToolError when the person declines (nothing is proposed)."""
    scope: Any = ctx.extra.get("mcp")
    shown = ", ".join(linking[:10]) + (f" and {len(linking) - 10} more" if len(linking) > 10 else "")
    if scope is not None and scope.client_supports("elicitation"):
        message = (
            f"Your assistant wants to suggest deleting {path}. {len(linking)} note(s) link to it ({shown}); "
            "their links stop resolving if a reviewer accepts. Suggest the delete?"
        )
        try:
            answer = await scope.ask_client(
                "elicitation/create", {"message": message, "requestedSchema": CONFIRM_SCHEMA}
            )
        except ClientRequestError:
            answer = None
        if answer is not None:
            content = answer.get("content") if isinstance(answer.get("content"), dict) else {}
            action = answer.get("action", "no answer")
            if action != "accept" or content.get("confirm") is not True:
                raise ToolError(
                    f"Error: the person did not confirm deleting {path} ({action}). Nothing was suggested."
                )
            return " The person confirmed it through your client."
    return (
        f" Your client could not ask the person to confirm (it offers no elicitation here): the reviewer "
        f"sees the {len(linking)} linking note(s) before deciding."
    )
