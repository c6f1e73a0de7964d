"""`manage.py purge_trash`: what has been in the trash too long, and new files no entry ever named."""

import asyncio
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from lensrelay.docstore.store import get_store
from lensrelay.files.pending import unlinked_expired, unlinked_purge
from lensrelay.vault.purge import Purgeable, trash_expired, trash_purge


class Command(BaseCommand):
    help = (
        "Remove for good what has been in the folders' trash (/_trash/) longer than the retention. "
        "Also removes new files' ids and blobs that no folder entry named within "
        "LENSRELAY_UNLINKED_FILE_HOURS. A dry run unless --yes: it lists what would go."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=float,
            default=None,
            metavar="DAYS",
            help="Purge entries trashed more than DAYS ago (default: LENSRELAY_TRASH_RETENTION_DAYS)",
        )
        parser.add_argument(
            "--unlinked-hours",
            type=float,
            default=None,
            metavar="HOURS",
            help="Remove file ids and blobs with no folder entry registered more than HOURS ago "
            "(default: LENSRELAY_UNLINKED_FILE_HOURS)",
        )
        parser.add_argument("--yes", action="store_true", help="Purge; without it, only list")

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["older_than"]
        if days is None:
            days = float(settings.LENSRELAY_TRASH_RETENTION_DAYS)
        if days < 0:
            raise CommandError("--older-than must be 0 days or more.")
        hours = options["unlinked_hours"]
        if hours is None:
            hours = float(settings.LENSRELAY_UNLINKED_FILE_HOURS)
        if hours < 0:
            raise CommandError("--unlinked-hours must be 0 hours or more.")

        async def run() -> list[Purgeable]:
            store = get_store()
            try:
                if options["yes"]:
                    return await trash_purge(store, older_than_days=days)
                return await trash_expired(store, older_than_days=days)
            finally:
                await store.close()

        found = asyncio.run(run())
        for item in found:
            self.stdout.write(f"{item.user_path} (from {item.original}, {item.type})")
        sweep = unlinked_purge if options["yes"] else unlinked_expired
        unlinked = sweep(older_than_hours=hours)
        for file in unlinked:
            self.stdout.write(f"unlinked file {file.doc_id}")
        if options["yes"]:
            self.stdout.write(f"Purged {len(found)} entries trashed more than {days:g} days ago.")
            self.stdout.write(f"Removed {len(unlinked)} files no folder entry named within {hours:g} hours.")
        else:
            self.stdout.write(
                f"Dry run: {len(found)} entries trashed more than {days:g} days ago would be purged; "
                "run again with --yes to purge them."
            )
            self.stdout.write(
                f"Dry run: {len(unlinked)} files no folder entry named within {hours:g} hours "
                "would be removed."
            )
