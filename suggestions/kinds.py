"""What each kind of suggestion is, in one table beside the model: what accepting it does to the documents,
whether its note goes to the trash, how the admin names and previews it, and what cannot be undone or rolled
back. The services and pages look a kind up here instead of branching on ``Suggestion.Kind``; a new kind is
one more entry (and the effect it needs, in ``suggestions.lifecycle.deciding``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from django.utils.html import format_html
from django.utils.safestring import SafeString

from suggestions.markup.shown import changed_lines, clip
from suggestions.models import Suggestion

Kind = Suggestion.Kind
Status = Suggestion.Status

# What accepting a suggestion does: its CriticMarkup in the note is accepted ("markup"), or the note is
# moved, put in the trash, or its whole content replaced. Rejecting rejects the markup of a "markup" kind
# and changes no document for the others.
Effect = Literal["markup", "move", "trash", "replace_file"]


@dataclass(frozen=True)
class KindRules:
    accepting: Effect
    # The admin's one line ("Move A to B") and, for a kind with no hunks, its changelist preview.
    what: Callable[[Suggestion], str]
    preview: Callable[[Suggestion], SafeString] | None = None
    # A change outside the note's text, in words for its change page, with the two texts to show side by
    # side (None: nothing to compare); None when the change is markup in the note.
    explained: Callable[[Suggestion], tuple[str, tuple[str, str] | None] | None] | None = None
    # The decision (True: accepting, False: rejecting) that sends the note to the trash, if any.
    trashed_on: bool | None = None
    # Decided statuses whose decision cannot be undone here, with the reason the reviewer reads.
    undo_refused: Mapping[str, str] = field(default_factory=dict)
    # Why an accepted one is not rolled back here (None: its recorded text can be).
    not_reverted: Callable[[Suggestion], str] | None = None

    @property
    def marked(self) -> bool:
        """Its change is CriticMarkup in a note: decided surgically, cleaned up, undone from the text."""
        return self.accepting == "markup"

    @property
    def whole_file(self) -> bool:
        """The row carries a file's whole content before and after (no markup can go inside the file)."""
        return self.accepting == "replace_file"


def _edit_what(s: Suggestion) -> str:
    parts = len(s.hunks or [])
    return f"Edit of {s.path}" + (f" in {parts} places" if parts > 1 else "")


def _create_explained(s: Suggestion) -> tuple[str, tuple[str, str] | None] | None:
    if s.doc_id:  # a note holding its content as one addition: reviewed as markup
        return None
    return (
        f"Create {s.path} (no markup inside the file; accepting creates it with this content, "
        "rejecting leaves nothing):",
        ("", s.new_text),
    )


KINDS: dict[str, KindRules] = {
    Kind.EDIT: KindRules(accepting="markup", what=_edit_what),
    Kind.CREATE: KindRules(
        accepting="markup",
        what=lambda s: f"Create {s.path}",
        explained=_create_explained,
        trashed_on=False,
        undo_refused={
            Status.REJECTED: (
                "a rejected new note went to the trash and cannot be undone here: restore it from the trash"
            )
        },
        not_reverted=lambda s: "a note it created: move it to the trash if it should go",
    ),
    Kind.MOVE: KindRules(
        accepting="move",
        what=lambda s: (
            f"Move {s.path} to {s.new_path}" + (" (a folder and all in it)" if s.moves_folder else "")
        ),
        preview=lambda s: format_html("move → {}", clip(s.new_path)),
        explained=lambda s: (f"Move {s.path} to {s.new_path}; links to it are rewritten.", None),
        undo_refused={Status.ACCEPTED: "an accepted move cannot be undone here: move the note back"},
        not_reverted=lambda s: f"an accepted move: move {s.new_path} back to {s.path} if it should go back",
    ),
    Kind.DELETE: KindRules(
        accepting="trash",
        what=lambda s: f"Delete {s.path}",
        preview=lambda s: format_html("<del>delete document</del>"),
        explained=lambda s: (f"Delete {s.path}.", None),
        trashed_on=True,
        undo_refused={
            Status.ACCEPTED: "an accepted delete cannot be undone here: restore the note from the trash"
        },
        not_reverted=lambda s: "an accepted delete: the note is in its folder's trash; restore it from there",
    ),
    Kind.REPLACE: KindRules(
        accepting="replace_file",
        what=lambda s: f"Replace the content of {s.path}",
        preview=lambda s: format_html("replace file: {}", changed_lines(s.old_text, s.new_text)),
        explained=lambda s: (
            f"Replace the content of {s.path} (no markup inside the file; accepting writes the "
            "new content, and is refused if the file has changed since):",
            (s.old_text, s.new_text),
        ),
        undo_refused={
            Status.ACCEPTED: (
                "an accepted file replacement cannot be undone here: restore an earlier version of the file"
            )
        },
        not_reverted=lambda s: (
            "an accepted file replacement: restore an earlier version of the file from its history"
        ),
    ),
}

# The kinds whose change is markup in a note: the follower watches them, the review pages show them in text.
MARKED_KINDS: tuple[str, ...] = tuple(kind for kind, rules in KINDS.items() if rules.marked)


def rules_of(suggestion: Suggestion) -> KindRules:
    return KINDS[suggestion.kind]
