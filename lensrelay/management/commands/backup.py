"""`manage.py backup ARCHIVE`: the knowledge base at one point of the update log, while the server runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lensrelay.backups.service import backup_write


class Command(BaseCommand):
    help = (
        "Write one archive (.tar.gz) of the database's rows (notes, update log, snapshots, versions, "
        "suggestions, tokens, people) and the file blobs, consistent at one point of the update log. "
        "Safe while the server runs. The archive holds password hashes and token hashes: keep it secret."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "archive", help="Where to write the archive, e.g. backups/lensrelay-2026-11-28.tar.gz"
        )
        parser.add_argument("--force", action="store_true", help="Replace the archive if it exists")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["archive"])
        if path.exists() and not options["force"]:
            raise CommandError(f"{path} exists: choose another name, or --force to replace it")
        if not path.parent.is_dir():
            raise CommandError(f"{path.parent} is not a directory")
        backup_write(path=path, say=self.stdout.write)
