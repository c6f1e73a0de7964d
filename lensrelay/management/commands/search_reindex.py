from typing import Any

from django.core.management.base import BaseCommand

from lensrelay.search.maintain import search_reindex_all


class Command(BaseCommand):
    help = "Rebuild the full-text search index from every stored markdown document."

    def handle(self, *args: Any, **options: Any) -> None:
        count = search_reindex_all()
        self.stdout.write(f"Search index rebuilt: {count} documents.")
