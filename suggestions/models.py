"""One row per write-tool call: what an assistant proposed, where its markup sits, and what became of it."""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone

from lensrelay.models import ApiToken, Document, Folder
from suggestions.markup.records import HunkRecord, UndoRecord


def new_uid() -> str:
    return uuid.uuid4().hex[:16]


class Suggestion(models.Model):
    class Kind(models.TextChoices):
        EDIT = "edit", "Edit"
        CREATE = "create", "Create"
        MOVE = "move", "Move"
        DELETE = "delete", "Delete"
        # A whole-file replacement of a non-markdown text file (JSON, canvas, HTML, ...): no markup can go
        # inside such a file, so the row carries the old and new content and is applied on accept.
        REPLACE = "replace", "Replace file"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        # A reviewer has claimed the decision and the document is being changed (see
        # suggestions/lifecycle/claims.py).
        ACCEPTING = "accepting", "Being accepted"
        REJECTING = "rejecting", "Being rejected"
        # A reviewer has claimed undoing the decision; its markup is being written back
        # (suggestions/lifecycle/undoing.py).
        UNDOING = "undoing", "Being undone"
        # A reviewer has claimed rolling back an accepted change; its old text is being written back
        # (suggestions/lifecycle/rollback.py). Rolled back: the accepted text was replaced by the old one
        # again.
        REVERTING = "reverting", "Being rolled back"
        REVERTED = "reverted", "Rolled back"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"
        SUPERSEDED = "superseded", "Superseded"
        STALE = "stale", "Stale"

    uid = models.CharField(max_length=32, unique=True, default=new_uid, editable=False)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.EDIT)
    folder = models.ForeignKey(Folder, null=True, on_delete=models.SET_NULL, related_name="suggestions")
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.SET_NULL)
    doc_id = models.CharField(max_length=100, db_index=True)
    path = models.CharField(max_length=1100, help_text="User-facing path when proposed")
    new_path = models.CharField(max_length=1100, blank=True, help_text="Target path of a move")
    moves_folder = models.BooleanField(
        default=False, help_text="A move of a sub-folder and everything under it, rather than one document"
    )
    token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL)
    author = models.CharField(
        max_length=200, help_text="The token's name or the person's username, as written in the markup"
    )
    # A suggestion a person typed in suggesting mode (suggestions/people): its marks carry their user id.
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    session_id = models.CharField(max_length=200, blank=True)
    client_name = models.CharField(max_length=200, blank=True)
    tool = models.CharField(max_length=32)
    old_text = models.TextField(blank=True)
    new_text = models.TextField(blank=True)
    markup = models.TextField(blank=True, help_text="The CriticMarkup written into the document")
    comment = models.TextField(blank=True)
    base_hash = models.CharField(
        max_length=64,
        blank=True,
        help_text="For a file replacement: the sha256 of the content it was proposed on; accepting it "
        "is refused once the file has changed",
    )
    hunks: models.JSONField[list[HunkRecord], list[HunkRecord]] = models.JSONField(
        default=list, help_text="Each hunk's base and new text and its Yjs sticky start and end positions"
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING, db_index=True)
    created = models.DateTimeField(default=timezone.now, db_index=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    note = models.TextField(blank=True, help_text="The reviewer's note, shown to the assistant")
    revision: models.JSONField[list[str], list[str]] = models.JSONField(
        default=list,
        blank=True,
        help_text="The inserted text of each hunk as the reviewer changed it before accepting (empty: "
        "accepted as proposed); the hunks keep what was proposed",
    )
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL)
    undo: models.JSONField[UndoRecord, UndoRecord] = models.JSONField(
        default=dict,
        blank=True,
        help_text="How to undo the last decision: what it removed from the text and the Yjs positions around "
        "the text it left (empty: nothing to undo from here)",
    )
    rolled_back_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When its accepted text was rolled back (while rolling back: claimed)",
    )
    rolled_back_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decision_batch = models.CharField(
        max_length=32, blank=True, db_index=True, help_text="Shared by the suggestions of one bulk decision"
    )

    class Meta:
        ordering: ClassVar = ["-created"]
        permissions: ClassVar = [("review_suggestion", "Can review (accept or reject) suggestions")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.path} by {self.author} ({self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING

    @property
    def accepted_with_changes(self) -> bool:
        return bool(self.revision)

    def proposed_insertions(self) -> list[str]:
        """The inserted text of each hunk, as proposed."""
        return [hunk.get("new", "") for hunk in self.hunks or []]

    def revised_hunks(self) -> list[tuple[str, str]]:
        """``(proposed, accepted)`` inserted text of each hunk the reviewer changed before accepting."""
        pairs = zip(self.proposed_insertions(), self.revision or [], strict=False)
        return [(old, new) for old, new in pairs if old != new]


class SuggestionHold(models.Model):
    """A document whose markup and rows are being changed together (a proposal, a decision, an undo, a
    restore): the follower (suggestions.lifecycle.follow) leaves it alone while the hold stands. Written and
    committed before the markup changes, deleted after the rows are committed; `expires_at` lets the
    follower go on when the process holding it died."""

    doc_id = models.CharField(max_length=100, db_index=True)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"hold on {self.doc_id} until {self.expires_at:%H:%M:%S}"


class Thread(models.Model):
    """A discussion of a passage (or of a suggestion): the row indexing a thread the note's text holds
    (suggestions/markup/threads.py). Its comments stay here when the text loses them."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        RESOLVED = "resolved", "Resolved"

    uid = models.CharField(max_length=32, unique=True, default=new_uid, editable=False)
    folder = models.ForeignKey(Folder, null=True, on_delete=models.SET_NULL, related_name="threads")
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.SET_NULL)
    doc_id = models.CharField(max_length=100, db_index=True)
    path = models.CharField(max_length=1100, help_text="User-facing path when last seen")
    passage = models.TextField(blank=True, help_text="The text discussed, as last seen in the note")
    suggestion = models.ForeignKey(
        Suggestion,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="threads",
        help_text="The suggestion this thread discusses, if it is one's",
    )
    detached = models.BooleanField(
        default=False, help_text="Its passage is gone from the note; the comments are kept here"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True)
    author = models.CharField(max_length=200, help_text="Who started it, as written in the markup")
    token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL)
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    session_id = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField(default=timezone.now, db_index=True)
    updated = models.DateTimeField(default=timezone.now, db_index=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering: ClassVar = ["-updated"]

    def __str__(self) -> str:
        return f"Thread {self.uid} on {self.path} ({self.status})"


class ThreadComment(models.Model):
    uid = models.CharField(max_length=32, unique=True, default=new_uid, editable=False)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="comments")
    author = models.CharField(max_length=200)
    token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL)
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    session_id = models.CharField(max_length=200, blank=True)
    body = models.TextField()
    mentions: models.JSONField[list[str], list[str]] = models.JSONField(
        default=list, blank=True, help_text="Usernames of the staff it @mentions"
    )
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering: ClassVar = ["created", "pk"]

    def __str__(self) -> str:
        return f"Comment {self.uid} by {self.author}"


class EmailChoice(models.Model):
    """How a person wants to hear by email of what waits for them (suggestions to review, mentions)."""

    class Frequency(models.TextChoices):
        AT_ONCE = "at_once", "At once"
        HOURLY = "hourly", "An hourly digest"
        DAILY = "daily", "A daily digest"
        NEVER = "never", "Never"

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="email_choice"
    )
    frequency = models.CharField(max_length=8, choices=Frequency.choices, default=Frequency.DAILY)
    # At once: what was made after this has not been told yet.
    told_until = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.user}: {self.get_frequency_display()}"


class EmailMessage(models.Model):
    """The outbox: one row per message, made once (its `key` is unique) and sent by the derive process."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200, unique=True, help_text="What the message is about: made once")
    to = models.EmailField()
    subject = models.CharField(max_length=300)
    body = models.TextField()
    created = models.DateTimeField(default=timezone.now, db_index=True)
    sent_at = models.DateTimeField(null=True, blank=True, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"{self.subject} to {self.to}"
