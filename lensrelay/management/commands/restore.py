"""`manage.py restore ARCHIVE`: a backup into a new, empty database and file storage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lensrelay.backups.archive import ArchiveRefused
from lensrelay.backups.service import backup_restore


class Command(BaseCommand):
    help = (
        "Restore an archive written by `manage.py backup` into an empty database (made here by migrate) "
        "and its file storage, on SQLite or PostgreSQL whichever the backup was taken on. The archive is "
        "checked whole first: a damaged or altered one is refused and nothing is changed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("archive", help="The archive to restore")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            backup_restore(path=Path(options["archive"]), say=self.stdout.write)
        except ArchiveRefused as exc:
            raise CommandError(str(exc)) from exc
