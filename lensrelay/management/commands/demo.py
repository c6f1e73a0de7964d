import asyncio
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from lensrelay.access.tokens import token_create
from lensrelay.docstore.store import get_store
from lensrelay.models import ApiToken, Folder
from lensrelay.vault.importexport import import_vault

DEMO_VAULT = Path(__file__).resolve().parents[2] / "demo_vault"
DEMO_FOLDER = "Lens"


class Command(BaseCommand):
    help = "First run: import the bundled demo vault and create a demo token (printed every time)."

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.LENSRELAY_DEMO:
            self.stdout.write("LENSRELAY_DEMO is off: no demo vault, no demo token.")
            return
        if not Folder.objects.exists():

            async def run() -> str:
                store = get_store()
                try:
                    report = await import_vault(store=store, root=DEMO_VAULT, folder_name=DEMO_FOLDER)
                    return report.summary()
                finally:
                    await store.close()

            self.stdout.write(f"Imported the demo vault into {DEMO_FOLDER!r}: {asyncio.run(run())}.")
        # The demo token is kept in the data directory so it can be printed again; real tokens are not.
        token_file = Path(settings.DATA_DIR) / "demo-token"
        raw = token_file.read_text().strip() if token_file.exists() else ""
        if (
            not raw
            or not ApiToken.objects.filter(token_hash=ApiToken.hash_token(raw), revoked_at=None).exists()
        ):
            _, raw = token_create(name="demo", role=ApiToken.Role.EDIT)
            token_file.write_text(raw + "\n")
            token_file.chmod(0o600)
        self.stdout.write(f"Demo token (role edit, all folders): {raw}")
