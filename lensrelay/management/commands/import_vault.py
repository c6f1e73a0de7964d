import asyncio
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lensrelay.docstore.store import get_store
from lensrelay.links.backlinks import backlink_indexer
from lensrelay.vault import ImportReport, import_vault


class Command(BaseCommand):
    help = "Import a directory of markdown files (recursively) into a folder; re-importing updates in place."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--folder", required=True, help="Folder name (created if missing)")

    def handle(self, *args: Any, **options: Any) -> None:
        root: Path = options["path"]
        if not root.is_dir():
            raise CommandError(f"{root} is not a directory.")

        async def run() -> ImportReport:
            store = get_store()
            try:
                report = await import_vault(store=store, root=root, folder_name=options["folder"])
                # Link indexing is done once, by the process that made the change: this one.
                await backlink_indexer(store).settled()
                return report
            finally:
                await store.close()

        try:
            report = asyncio.run(run())
        except ValueError as exc:  # a folder name that cannot be stored: said before anything is
            raise CommandError(str(exc)) from exc
        for skipped in report.skipped:
            self.stderr.write(f"skipped {skipped}")
        self.stdout.write(f"Imported {root} into {options['folder']!r}: {report.summary()}.")
