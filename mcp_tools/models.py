"""MCP sessions (handshake protocol era) and read marks (read-before-edit), kept in the database so
every worker process sees them."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models
from django.utils import timezone


def _empty_dict() -> dict[str, Any]:
    return {}


def _empty_list() -> list[str]:
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
    subscriptions = models.JSONField(default=_empty_list, blank=True)
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
