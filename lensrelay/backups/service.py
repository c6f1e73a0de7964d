"""Backing the knowledge base up while the server runs, and restoring it into an empty database.

A backup reads every row it keeps in one transaction, so the archive holds the database as it was at one
point of the update log (`log_point`: every logged change up to it, none after), whatever the servers
write meanwhile: SQLite's WAL gives a read transaction that snapshot, PostgreSQL's REPEATABLE READ the
same. Rows go through Django's serializers (JSON Lines, foreign keys to permissions and content types by
their natural keys), so an archive taken on SQLite restores on PostgreSQL and back. The file blobs of the
notes that are files come from the configured storage (disk or S3), each checked against its hash.

Left out, because a running server makes them again: sessions, holds, MCP sessions and their streams,
permissions and content types (made by `migrate`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from django.apps import apps
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.db import connection, transaction
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from lensrelay.backups.archive import ArchiveRefused, ArchiveWriter, Manifest, blob_member, read_archive
from lensrelay.docstore.persistence import last_update_id
from lensrelay.files.blobs import BlobMissing, blob_list, blob_put, blob_read
from lensrelay.models import Document, Folder, YUpdate

KEPT_APPS = ("auth", "admin", "oauth2_provider", "lensrelay", "suggestions", "mcp_tools")
LEFT_OUT = frozenset(
    {
        "auth.permission",
        "suggestions.suggestionhold",
        "mcp_tools.mcpsession",
        "mcp_tools.mcpstream",
        "mcp_tools.mcpsubscription",
        "mcp_tools.mcpevent",
        "mcp_tools.readmark",
    }
)


def kept_models() -> list[str]:
    """The models whose rows a backup keeps, by label (``app.model``)."""
    return [
        model._meta.label_lower
        for app in KEPT_APPS
        for model in apps.get_app_config(app).get_models()
        if model._meta.label_lower not in LEFT_OUT
    ]


def _schema() -> dict[str, str]:
    """The newest applied migration of each kept app: an archive restores only into the same schema."""
    newest: dict[str, str] = {}
    for app, name in MigrationRecorder.Migration.objects.filter(app__in=KEPT_APPS).values_list("app", "name"):
        newest[app] = max(newest.get(app, ""), name)
    return newest


def backup_write(*, path: Path, say: Callable[[str], None] = lambda line: None) -> Manifest:
    """Write the archive to ``path`` (replaced only once whole: a backup that fails leaves nothing behind);
    returns its manifest."""
    partial = path.with_name(path.name + ".partial")
    writer = ArchiveWriter(partial)
    try:
        manifest = _written(writer)
        writer.finish(manifest)
    except BaseException:
        writer.abandon()
        raise
    partial.replace(path)
    say(
        f"Backed up {sum(manifest.rows.values())} rows and {len(manifest.blobs)} files at update "
        f"{manifest.log_point} to {path}."
    )
    return manifest


def _written(writer: ArchiveWriter) -> Manifest:
    """The rows, read in one transaction, then the file blobs of the notes that are files."""
    with tempfile.TemporaryDirectory(prefix="lensrelay-backup-") as scratch, transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        manifest = Manifest(
            created=timezone.now().isoformat(),
            engine=connection.vendor,
            log_point=last_update_id(),
            schema=_schema(),
        )
        for label in kept_models():
            rows = Path(scratch) / f"{label}.jsonl"
            call_command(
                "dumpdata",
                label,
                format="jsonl",
                output=str(rows),
                natural_foreign=True,
                all=True,
                verbosity=0,
            )
            manifest.rows[label] = apps.get_model(label)._base_manager.count()
            writer.add_file(f"rows/{label}.jsonl", rows)
        files = list(Document.objects.exclude(hash="").values_list("doc_id", flat=True))
    for doc_id in files:
        for blob in blob_list(doc_id=doc_id):
            try:
                data = blob_read(doc_id=doc_id, hash=blob.hash)
            except BlobMissing:
                continue  # deleted since the rows were read (a purge): not part of that point
            writer.add_bytes(blob_member(doc_id, blob.hash), data)
            manifest.blobs.append([doc_id, blob.hash])
    return manifest


def _refusal_of_target(manifest: Manifest) -> str | None:
    if User.objects.exists() or Folder.objects.exists() or YUpdate.objects.exists():
        return "the database is not empty: restore into a new database (it may hold only what migrate made)"
    schema = _schema()
    if schema != manifest.schema:
        return (
            "the backup was taken at other migrations than this code has: restore it with the version "
            f"that took it, then upgrade (backup: {manifest.schema}, here: {schema})"
        )
    return None


def backup_restore(*, path: Path, say: Callable[[str], None] = lambda line: None) -> Manifest:
    """Restore the archive at ``path`` into this empty database (migrated here) and file storage. The
    archive is checked whole before the database is touched; a refused archive or target changes nothing
    (raises ArchiveRefused)."""
    with tempfile.TemporaryDirectory(prefix="lensrelay-restore-") as scratch:
        unpacked = Path(scratch)
        manifest = read_archive(path, unpacked)
        call_command("migrate", interactive=False, verbosity=0)  # a new database gets its tables here
        refusal = _refusal_of_target(manifest)
        if refusal is not None:
            raise ArchiveRefused(f"Not restored: {refusal}.")
        # (loaddata warns of a file without rows)
        fixtures = [
            str(unpacked / "rows" / f"{label}.jsonl") for label, count in manifest.rows.items() if count
        ]
        with transaction.atomic():
            # The archive holds the groups as they were, the role groups included.
            Group.objects.all().delete()
            call_command("loaddata", *fixtures, verbosity=0)
            counted = {label: apps.get_model(label)._base_manager.count() for label in manifest.rows}
            if counted != manifest.rows:
                wrong = {
                    label: (n, manifest.rows[label])
                    for label, n in counted.items()
                    if n != manifest.rows[label]
                }
                raise ArchiveRefused(
                    f"Not restored: the rows loaded differ from the manifest's counts {wrong}."
                )
        for doc_id, hash in manifest.blobs:
            data = (unpacked / blob_member(doc_id, hash)).read_bytes()
            if blob_put(doc_id=doc_id, data=data) != hash:
                raise ArchiveRefused(f"the file {hash} of {doc_id} does not hold its hash")
    say(
        f"Restored {sum(manifest.rows.values())} rows and {len(manifest.blobs)} files, up to update "
        f"{manifest.log_point}, from {path}."
    )
    return manifest
