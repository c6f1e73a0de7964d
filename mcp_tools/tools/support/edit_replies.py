"""How `edit` and `multi_edit` answer: one style for both, success and failure alike.

A reply opens with one sentence saying what happened (`Edited <path>: …`, `Dry run of <path>: …`, or
`Error: …`), then the details as labelled blocks: one line per edit, the unified diff of a dry run, the
resulting text when asked for, and for a failure the recovery hint and the promise that nothing changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp_tools.registry import ToolError
from mcp_tools.tools.support.writing import describe
from suggestions.lifecycle.filetext import FileOutcome
from suggestions.lifecycle.proposing import EditSpec, Outcome

UNCHANGED = "No edit was applied; the document is unchanged."


def _short(text: str, limit: int = 50) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit] + "..."


def recovery_hint(error: str) -> str:
    """What the assistant can do next about a refused edit (seed 004: hints should be actionable)."""
    if "not found" in error:
        return "Read the document to see its current content, then retry with the exact old_string."
    if "matches" in error:
        return "Set replace_all to true for that edit, or make its old_string longer so it is unique."
    if "delimiter" in error or "CriticMarkup" in error:
        return "Remove CriticMarkup from old_string/new_string; the server writes the markup itself."
    if "must read" in error or "read it first" in error:
        return "Call read on the document, then retry."
    if "changed while" in error or "kept changing" in error:
        return "Read the document again, then retry."
    return "Check the error above, read the document again, and retry."


def edit_refused(error: str) -> ToolError:
    """A refused edit: the reason, that nothing changed, and what to do next."""
    reason = error.removeprefix("Error: ").rstrip()
    return ToolError(f"Error: {reason}\n{UNCHANGED}\nRecovery: {recovery_hint(reason)}")


def _edit_lines(specs: Sequence[EditSpec], occurrences: Sequence[int]) -> list[str]:
    lines = ["Edits:"]
    for number, (spec, count) in enumerate(zip(specs, occurrences, strict=True), start=1):
        plural = "occurrence" if count == 1 else "occurrences"
        lines.append(
            f"- {number} of {len(specs)}: {_short(spec.old_string)!r} matched, {count} {plural} replaced"
        )
    return lines


def edit_reply(
    *,
    user_path: str,
    specs: Sequence[EditSpec],
    outcome: Outcome | FileOutcome,
    dry_run: bool = False,
    include_content: bool = False,
) -> str:
    """The answer to an edit that succeeded (or a dry run that would)."""
    chars = sum(len(spec.old_string) * count for spec, count in zip(specs, outcome.occurrences, strict=True))
    if dry_run:
        head = (
            f"Dry run of {user_path}: {len(specs)} edit(s) would replace {chars} characters. "
            "Nothing was changed and no suggestion was made."
        )
    else:
        row = outcome.suggestion
        assert row is not None
        if isinstance(outcome, FileOutcome):
            how = (
                "as a suggested new version for human review (no CriticMarkup in the file; it changes "
                "when a reviewer accepts)"
            )
            detail = ""
        else:
            how = "with CriticMarkup suggestion for human review"
            detail = f"; {describe(outcome)}"
        head = (
            f"Edited {user_path}: replaced {chars} characters {how} (suggestion {row.uid}, pending{detail})."
        )
        if len(specs) == 1 and outcome.occurrences[0] > 1:
            head += f" {outcome.occurrences[0]} occurrences replaced."
        if outcome.superseded:
            earlier = len(outcome.superseded)
            head += f" It supersedes {earlier} earlier pending suggestion(s) on the same text."
    lines = [head]
    if len(specs) > 1 or dry_run:
        lines += ["", *_edit_lines(specs, outcome.occurrences)]
    if dry_run:
        lines += ["", "Diff:", outcome.diff.rstrip("\n")]
    if include_content:
        lines += ["", "Resulting content (as if accepted):", outcome.view_after]
    return "\n".join(lines)
