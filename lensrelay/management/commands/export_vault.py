from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lensrelay.models import Folder
from lensrelay.vault import export_vault


class Command(BaseCommand):
    help = "Write a folder's markdown documents and sub-folders to a directory."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--folder", required=True)
        parser.add_argument("path", type=Path)

    def handle(self, *args: Any, **options: Any) -> None:
        folder = Folder.objects.filter(name=options["folder"]).first()
        if folder is None:
            raise CommandError(f"No folder named {options['folder']!r}.")
        report = export_vault(folder=folder, target=options["path"])
        self.stdout.write(
            f"Exported {folder.name!r} to {options['path']}: "
            f"{report.files} files, {report.folders} sub-folders."
        )
