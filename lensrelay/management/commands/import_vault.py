import asyncio
from pathlib import Path
from typing import Any, TextIO, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lensrelay.docstore.acting import Actor, acting_as
from lensrelay.docstore.store import get_store
from lensrelay.management.progress import ProgressBar
from lensrelay.vault.backlinks import backlink_indexer
from lensrelay.vault.importexport import ImportReport, import_vault
from lensrelay.vault.prune import vault_prune
from lensrelay.vault.trash import TrashReport


class Command(BaseCommand):
    help = (
        "Import a directory (recursively: markdown, attachments, every file type) into a folder; "
        "re-importing updates changed files in place and leaves unchanged ones alone."
    )
    # The system checks validate the admin, the URL configuration and every model, importing all the
    # views for it (0.4 s of CPU, a tenth of a 10,000-note import); `manage.py check` and every server
    # start run them. The import itself uses none of the views.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--folder", required=True, help="Folder name (created if missing)")
        parser.add_argument(
            "--prune",
            action="store_true",
            help="Move what the folder holds but the directory no longer does to the folder's trash",
        )
        parser.add_argument("--no-progress", action="store_true", help="No progress bar on stderr")
        # Django offers it only to commands that run the checks; scripts pass it to every command.
        parser.add_argument("--skip-checks", action="store_true", help="Accepted; this command runs none")

    def handle(self, *args: Any, **options: Any) -> None:
        root: Path = options["path"]
        if not root.is_dir():
            raise CommandError(f"{root} is not a directory.")

        bar = ProgressBar(cast(TextIO, self.stderr._out), min_total=10**12 if options["no_progress"] else 200)

        async def run() -> tuple[ImportReport, TrashReport | None]:
            store = get_store()
            try:
                report = await import_vault(
                    store=store, root=root, folder_name=options["folder"], progress=bar
                )
                pruned = None
                if options["prune"]:
                    pruned = await vault_prune(store=store, root=root, folder_name=options["folder"])
                # Link indexing is done once, by the process that made the change: this one.
                await backlink_indexer(store).settled()
                return report, pruned
            finally:
                await store.close()

        try:
            # Its changes are logged as the command's: the server's operator ran it.
            with acting_as(Actor("command", "manage.py import_vault")):
                report, pruned = asyncio.run(run())
        except ValueError as exc:  # a folder name that cannot be stored: said before anything is
            raise CommandError(str(exc)) from exc
        finally:
            bar.close()
        for skipped in report.skipped:
            self.stderr.write(f"skipped {skipped}")
        self.stdout.write(f"Imported {root} into {options['folder']!r}: {report.summary()}.")
        if pruned is not None:
            for old, new in pruned.trashed.items():
                self.stdout.write(f"pruned {old} -> {new}")
            self.stdout.write(f"Pruned {len(pruned.trashed)} entries no longer in {root} (in the trash).")
