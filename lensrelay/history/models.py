"""A retained version of a document: its whole Yjs state at a moment, kept by the retention policy."""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.utils import timezone


class DocVersion(models.Model):
    """The document's full state when it was recorded (compaction, or an edit burst gone quiet).

    Full states rather than pointers into the update log: compaction deletes log rows, and a version
    must stay readable whatever happens to the log afterwards.
    """

    doc_id = models.CharField(max_length=100)
    created = models.DateTimeField(default=timezone.now)
    # The last update-log id the state includes: versions of one document never share one.
    upto_update_id = models.BigIntegerField()
    state = models.BinaryField()
    size = models.IntegerField(help_text="Length of the text in UTF-8 bytes")
    text_hash = models.CharField(
        max_length=64, help_text="SHA-256 of the text: an unchanged text is no new version"
    )
    author = models.CharField(
        max_length=500, blank=True, default="", help_text="Who wrote the changes since the version before"
    )

    class Meta:
        verbose_name = "document version"
        ordering: ClassVar = ["-created", "-id"]
        indexes: ClassVar = [models.Index(fields=["doc_id", "-created"])]
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["doc_id", "upto_update_id"], name="docversion_unique_state"),
        ]

    def __str__(self) -> str:
        return f"{self.doc_id} @ {self.created:%Y-%m-%d %H:%M:%S}"
