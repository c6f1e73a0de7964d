import asyncio
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from lensrelay.docstore.store import get_store
from lensrelay.vault.purge import Purgeable, trash_expired, trash_purge


class Command(BaseCommand):
    help = (
        "Remove for good what has been in the folders' trash (/_trash/) longer than the retention. "
        "A dry run unless --yes: it lists what would go."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=float,
            default=None,
            metavar="DAYS",
            help="Purge entries trashed more than DAYS ago (default: LENSRELAY_TRASH_RETENTION_DAYS)",
        )
        parser.add_argument("--yes", action="store_true", help="Purge; without it, only list")

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["older_than"]
        if days is None:
            days = float(settings.LENSRELAY_TRASH_RETENTION_DAYS)
        if days < 0:
            raise CommandError("--older-than must be 0 days or more.")

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
        if options["yes"]:
            self.stdout.write(f"Purged {len(found)} entries trashed more than {days:g} days ago.")
        else:
            self.stdout.write(
                f"Dry run: {len(found)} entries trashed more than {days:g} days ago would be purged; "
                "run again with --yes to purge them."
            )
