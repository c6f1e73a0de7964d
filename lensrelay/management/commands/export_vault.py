from pathlib import Path
from typing import Any, TextIO, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lensrelay.management.progress import ProgressBar
from lensrelay.models import Folder
from lensrelay.vault.importexport import export_vault


class Command(BaseCommand):
    help = "Write a folder's files (markdown, attachments, every type) and sub-folders to a directory."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--folder", required=True)
        parser.add_argument("path", type=Path)
        parser.add_argument("--no-progress", action="store_true", help="No progress bar on stderr")

    def handle(self, *args: Any, **options: Any) -> None:
        folder = Folder.objects.filter(name=options["folder"]).first()
        if folder is None:
            raise CommandError(f"No folder named {options['folder']!r}.")
        bar = ProgressBar(cast(TextIO, self.stderr._out), min_total=10**12 if options["no_progress"] else 200)
        try:
            report = export_vault(folder=folder, target=options["path"], progress=bar)
        finally:
            bar.close()
        for path in report.missing:
            self.stderr.write(f"not written {path} (its content was never uploaded)")
        self.stdout.write(f"Exported {folder.name!r} to {options['path']}: {report.summary()}.")
