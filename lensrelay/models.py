"""The relay's data: Yjs documents and their persisted state, folders, documents and API tokens."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone

from lensrelay.text.vaultpath import folder_name_key


def new_doc_id() -> str:
    return f"{settings.LENSRELAY_RELAY_ID}-{uuid.uuid4()}"


class YDoc(models.Model):
    """A Yjs document the server knows; its state lives in snapshots plus the update log."""

    class Kind(models.TextChoices):
        FOLDER = "folder", "Folder document"
        CONTENT = "content", "Content document"
        STANDALONE = "standalone", "Standalone document"

    doc_id = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.STANDALONE)
    # The folder a content document was created in. It never changes by itself: a folder document may
    # name only its own folder's content, so a filemeta entry cannot pull in another folder's text.
    folder = models.ForeignKey(
        "Folder", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=True
    )
    created = models.DateTimeField(default=timezone.now)
    # SHA-256 of the text when the stored state held no update after `content_upto` (a log id): a
    # re-import compares hashes instead of loading the document. Valid only while no logged update,
    # nor a snapshot, goes past that id; empty when unknown.
    content_hash = models.CharField(max_length=64, blank=True, default="")
    content_upto = models.BigIntegerField(default=0)

    class Meta:
        verbose_name = "Yjs document"

    def __str__(self) -> str:
        return self.doc_id


class YUpdate(models.Model):
    """Append-only log of binary Yjs v1 updates, written before they are broadcast."""

    doc_id = models.CharField(max_length=100)
    data = models.BinaryField()
    writer = models.CharField(max_length=32, default="", help_text="The process that logged it")
    # Who made the change (a token's or user's name), when known: version history names it.
    author = models.CharField(max_length=200, blank=True, default="")
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes: ClassVar = [models.Index(fields=["doc_id", "id"])]


class YSnapshot(models.Model):
    """A compacted state: every logged update of the document up to `upto_update_id`, merged."""

    doc_id = models.CharField(max_length=100, unique=True)
    data = models.BinaryField()
    # Indexed: every process looks for snapshots newer than its log cursor on each poll.
    upto_update_id = models.BigIntegerField(default=0, db_index=True)
    updated = models.DateTimeField(default=timezone.now)


class DerivedCursor(models.Model):
    """How far a follower of the update log (the derive process) has done its work: every row up to
    `last_update_id` is reflected in the derived views, so a restarted follower resumes from here."""

    name = models.CharField(max_length=50, unique=True)
    last_update_id = models.BigIntegerField(default=0)
    updated = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.name} @ {self.last_update_id}"


class PurgedDocument(models.Model):
    """A tombstone: the id of a document a purge removed for good. The id is never used again, so nothing
    (a client, a folder entry, an upload, `POST /doc/new`) can bring a purged document back under it."""

    doc_id = models.CharField(max_length=100, unique=True)
    purged_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "purged document"

    def __str__(self) -> str:
        return self.doc_id


class Folder(models.Model):
    """A shared folder (an Obsidian vault or part of one), backed by a folder document."""

    name = models.CharField(max_length=255, unique=True)
    # The name folded as `vaultpath.folder_name_key` does: two folders whose names differ only by case,
    # Unicode normalisation or spelling would be one folder to links (resolved case-insensitively) and to
    # Obsidian. Kept by `save` and the rename service; NULL only for a folder that already collided with
    # an older one when the column was added (see migration 0012): the services still compare its name.
    name_key = models.TextField(unique=True, null=True, editable=False)
    doc_id = models.CharField(max_length=100, unique=True, default=new_doc_id)
    created = models.DateTimeField(default=timezone.now)
    # The version of the folder document the `Document` rows were last mirrored from: every worker
    # sees each folder change, and only the first to mirror a state does the work.
    mirrored_state = models.BinaryField(default=b"", editable=False)

    class Meta:
        ordering: ClassVar = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.name_key = folder_name_key(self.name)
        fields = kwargs.get("update_fields")
        if fields is not None and "name" in fields:
            kwargs["update_fields"] = {*fields, "name_key"}
        super().save(*args, **kwargs)


class Document(models.Model):
    """One entry of a folder's `filemeta_v0`, mirrored for querying and the admin."""

    folder = models.ForeignKey(Folder, on_delete=models.CASCADE, related_name="documents")
    uuid = models.CharField(max_length=36)
    doc_id = models.CharField(max_length=100, unique=True)
    path = models.CharField(max_length=1024, help_text="Folder-relative path with a leading slash")
    type = models.CharField(max_length=16, default="markdown")
    # The sha256 of the blob a file entry names (its `hash` in filemeta_v0); empty for Y.Text content.
    hash = models.CharField(max_length=64, blank=True, default="")
    created = models.DateTimeField(default=timezone.now)
    modified = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering: ClassVar = ["folder__name", "path"]
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["folder", "path"], name="document_unique_path"),
        ]
        # Separate from browsing the admin and from reviewing: editing live also decides suggestions inline.
        # Suggesting: typing becomes tracked changes under one's own name, and nothing else can be changed.
        permissions: ClassVar = [
            ("edit_live", "Can edit documents live"),
            ("suggest", "Can suggest changes to documents"),
        ]

    def __str__(self) -> str:
        return self.user_path

    @property
    def user_path(self) -> str:
        return f"{self.folder.name}{self.path}"


class ApiToken(models.Model):
    """A bearer token for MCP, the HTTP API and Yjs sync. Only its hash is stored."""

    class Role(models.TextChoices):
        VIEW = "view", "View (read only)"
        SUGGEST = "suggest", "Suggest (read, propose changes)"
        EDIT = "edit", "Edit (read, write live, propose changes)"
        ADMIN = "admin", "Admin"

    name = models.CharField(max_length=200)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEW)
    folders = models.ManyToManyField(
        Folder, blank=True, related_name="tokens", help_text="No folders selected means every folder."
    )
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=12, editable=False, help_text="The token's first characters")
    created = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # Set for an OAuth grant: a person consented to let this client act with these rights. Its bearer
    # values are the client's OAuth access tokens (lensrelay/access/oauth.py); `token_hash` is unusable.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="oauth_grants",
        help_text="For an OAuth grant: the person who consented.",
    )
    oauth_application = models.ForeignKey(
        "oauth2_provider.Application",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="grants",
        verbose_name="OAuth client",
    )

    TOKEN_PREFIX = "lr_"

    class Meta:
        verbose_name = "API token"
        ordering: ClassVar = ["-created"]

    def __str__(self) -> str:
        return f"{self.name} ({self.role})"

    @staticmethod
    def hash_token(raw: str) -> str:
        return hashlib.sha256(raw.encode()).hexdigest()

    @classmethod
    def generate_raw(cls) -> str:
        return cls.TOKEN_PREFIX + secrets.token_urlsafe(32)

    def set_raw(self, raw: str) -> None:
        self.token_hash = self.hash_token(raw)
        self.prefix = raw[:10]

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    @property
    def expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def active(self) -> bool:
        return not self.revoked and not self.expired


class SpentAuthorizationCode(models.Model):
    """An OAuth authorization code already exchanged, and what it issued, so that a replay of the code
    revokes them (RFC 6749 §4.1.2; lensrelay/access/oauth_codes.py). Only the code's SHA-256 is kept,
    and the access token's (as django-oauth-toolkit stores it); the refresh token is named by its
    family, which covers every token refreshed from it later."""

    code_hash = models.CharField(max_length=64, db_index=True, editable=False)
    application = models.ForeignKey(
        settings.OAUTH2_PROVIDER_APPLICATION_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    access_token_checksum = models.CharField(max_length=64, blank=True, default="", editable=False)
    token_family = models.UUIDField(null=True, blank=True, editable=False)
    # The consent the code was exchanged under: a replay revokes it, which ends its open sessions and
    # GET streams on every worker (revoking tokens alone ends neither).
    grant = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    spent_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        verbose_name = "spent OAuth authorization code"
