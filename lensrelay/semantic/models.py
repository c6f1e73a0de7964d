"""What the semantic index holds: per document, what was embedded; per passage, its lines and vector.

Vectors live in the database so a restart recomputes nothing. Rows are keyed by document id, never by
path: a rename or move keeps them, and queries take paths and folders from the current path index.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models


class EmbeddedDocument(models.Model):
    """A document as the semantic index last embedded it."""

    doc_id = models.CharField(max_length=100, unique=True)
    folder_id = models.BigIntegerField(db_index=True)
    path = models.CharField(max_length=1024, help_text="Folder-relative path when it was embedded")
    # The document's modified time when its text was read: a later change is never masked.
    modified = models.FloatField(default=0.0)
    model = models.CharField(max_length=255, help_text="The embedding model that made the vectors")

    class Meta:
        app_label = "lensrelay"

    def __str__(self) -> str:
        return self.doc_id


class Passage(models.Model):
    """One passage of a document (a section, or part of a long one) and its embedding."""

    document = models.ForeignKey(EmbeddedDocument, on_delete=models.CASCADE, related_name="passages")
    ordinal = models.PositiveIntegerField()
    start_line = models.PositiveIntegerField(help_text="First line, numbered as `read` numbers them")
    end_line = models.PositiveIntegerField()
    heading = models.TextField(blank=True, default="")
    digest = models.CharField(max_length=64, help_text="Hash of the embedded text, to reuse vectors")
    vector = models.BinaryField(help_text="float32, unit length")

    class Meta:
        app_label = "lensrelay"
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["document", "ordinal"], name="passage_unique_ordinal"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.ordinal}"
