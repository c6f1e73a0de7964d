"""MCP sessions (handshake protocol era), read marks (read-before-edit) and tasks (the Tasks extension), kept
in the database so every worker process sees them."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models
from django.utils import timezone


def _empty_dict() -> dict[str, Any]:
    return {}


def _empty_list() -> list[str]:  # referenced by migration 0001
    return []


class McpSession(models.Model):
    """One `initialize` handshake: issued as `Mcp-Session-Id`, ended by DELETE or by idling out."""

    id = models.CharField(max_length=64, primary_key=True)
    # None for the anonymous caller of the test configuration.
    token = models.ForeignKey(
        "lensrelay.ApiToken", null=True, blank=True, on_delete=models.CASCADE, related_name="mcp_sessions"
    )
    protocol_version = models.CharField(max_length=16)
    client_name = models.CharField(max_length=200, blank=True, default="")
    client_version = models.CharField(max_length=100, blank=True, default="")
    client_info = models.JSONField(default=_empty_dict, blank=True)
    client_capabilities = models.JSONField(default=_empty_dict, blank=True)
    log_level = models.CharField(max_length=16, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "MCP session"
        ordering: ClassVar = ["-last_seen_at"]
        indexes: ClassVar = [models.Index(fields=["last_seen_at"])]

    def __str__(self) -> str:
        return f"{self.client_name or 'client'} {self.id[:8]}… ({self.protocol_version})"


class ReadMark(models.Model):
    """This caller (session, or token and client) has read this document at `read_at`."""

    session_key = models.CharField(max_length=255)
    doc_id = models.CharField(max_length=100)
    read_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["session_key", "doc_id"], name="readmark_unique_key_doc"),
        ]
        indexes: ClassVar = [models.Index(fields=["read_at"])]

    def __str__(self) -> str:
        return f"{self.session_key} read {self.doc_id}"


class CredentialGeneration(models.Model):
    """One row whose `value` goes up, in the same transaction, with every change to a token, a token's
    folders or a session's end: workers keep tokens and sessions in memory while it stands still."""

    value = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"credential generation {self.value}"


class McpStream(models.Model):
    """A session that listens for server-sent notifications (it opened the GET stream at least once).

    `last_seq` numbers the session's events (the SSE `id`); taking the next number locks this row until
    the event is committed, so a session's events commit in the order of their numbers on every worker.
    `owner` names the GET stream serving the session now: a newer GET takes over and the older stream,
    on whichever worker, ends.
    """

    session = models.OneToOneField(McpSession, primary_key=True, on_delete=models.CASCADE, related_name="+")
    last_seq = models.BigIntegerField(default=0)
    owner = models.CharField(max_length=64, blank=True, default="")
    opened_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"stream of {self.session_id} at {self.last_seq}"


class McpSubscription(models.Model):
    """`resources/subscribe`: the session wants `notifications/resources/updated` for `uri`.

    `doc_id` is the document the URI named when subscribing (empty for resources that are not
    documents), so an edit finds its subscribers by id whatever the URI's spelling.
    """

    session = models.ForeignKey(McpSession, on_delete=models.CASCADE, related_name="+")
    uri = models.CharField(max_length=2048)
    doc_id = models.CharField(max_length=100, blank=True, default="", db_index=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["session", "uri"], name="mcpsubscription_unique_session_uri"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id} watches {self.uri}"


class McpEvent(models.Model):
    """One notification for a listening session, numbered `seq` within it; kept (bounded) for replay by
    `Last-Event-ID` on whichever worker the client reconnects to."""

    session = models.ForeignKey(McpSession, on_delete=models.CASCADE, related_name="+")
    seq = models.BigIntegerField()
    message = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["session", "seq"], name="mcpevent_unique_session_seq"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id} #{self.seq}"


class McpTask(models.Model):
    """A `tools/call` answered with a task (the Tasks extension, `io.modelcontextprotocol/tasks`): the
    suggestion the call proposed, which a person decides. The task keeps no status of its own: `tasks/get`
    reads it from the suggestion's row, so a decision, an undo or a purge is seen on every worker and after
    a restart without anything here being kept in step."""

    # Unguessable (the SEP: task ids may act as bearer handles); still only its own token may use it.
    id = models.CharField(max_length=64, primary_key=True)
    # None never: an anonymous caller (test configuration) gets no tasks. Deleting the token ends its tasks.
    token = models.ForeignKey("lensrelay.ApiToken", on_delete=models.CASCADE, related_name="+")
    # The folder it was proposed in, to hide the task from a token narrowed away from it even once the
    # suggestion is purged (folders are deleted with their rows: None then).
    folder_id = models.IntegerField(null=True, blank=True)
    tool = models.CharField(max_length=32)
    suggestion_uid = models.CharField(max_length=32, db_index=True)
    # The tool's own answer, repeated in the task's final result (a client resolving the task sees only that).
    answer = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Moved by every decision on the suggestion (its `suggestion_decided`, undo included): `lastUpdatedAt`.
    updated_at = models.DateTimeField(default=timezone.now)
    # `tasks/cancel` withdrew the pending suggestion (rejected it, undecided by anyone) at this time.
    cancelled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "MCP task"
        ordering: ClassVar = ["-created_at"]

    def __str__(self) -> str:
        return f"task {self.id[:8]}… for suggestion {self.suggestion_uid}"


class McpTaskWatch(models.Model):
    """A `subscriptions/listen` stream named this task in its `taskIds`: each change of the task's state
    (a decision, an undo, its suggestion purged) is pushed to the stream's session as `notifications/tasks`.
    Gone with the stream's session, or with the task."""

    session = models.ForeignKey(McpSession, on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey(McpTask, on_delete=models.CASCADE, related_name="+")

    class Meta:
        verbose_name = "MCP task watch"
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["session", "task"], name="mcptaskwatch_unique_session_task"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id} watches task {self.task_id[:8]}…"


class AppKey(models.Model):
    """A key the review app (an MCP Apps view, mcp_tools/reviewing/) must send with each decision: handed
    only in a review result's `_meta`, which hosts give the app and not the model, so a `tools/call` of an
    app-only tool that did not come from the app carries none. Bound to one credential and one MCP session,
    short-lived, and used once (deleting its row is the check: two workers cannot both accept one key)."""

    # sha256 of the key: the database never holds a usable key.
    key_hash = models.CharField(max_length=64, primary_key=True)
    token = models.ForeignKey("lensrelay.ApiToken", on_delete=models.CASCADE, related_name="+")
    session_key = models.CharField(max_length=255)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        verbose_name = "MCP app key"

    def __str__(self) -> str:
        return f"app key {self.key_hash[:8]}…"
