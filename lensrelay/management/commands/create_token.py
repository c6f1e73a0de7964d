"""`manage.py create_token`: an API token from the command line (the admin makes them too)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lensrelay.access.tokens import parse_lifetime, token_create
from lensrelay.models import ApiToken, Folder


class Command(BaseCommand):
    help = "Create an API token. The raw token is printed alone on the last line; only its hash is stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument("--role", required=True, choices=ApiToken.Role.values)
        parser.add_argument("--folder", action="append", default=[], help="Limit to this folder (repeatable)")
        parser.add_argument("--expires-days", type=int, default=None)
        parser.add_argument(
            "--expires-in",
            default=None,
            help="Lifetime such as 30d, 12h, 45m or 90s (instead of --expires-days)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        folders = []
        for name in options["folder"]:
            folder = Folder.objects.filter(name=name).first()
            if folder is None:
                raise CommandError(f"No folder named {name!r}.")
            folders.append(folder)
        try:
            lifetime = parse_lifetime(options["expires_in"]) if options["expires_in"] else None
            token, raw = token_create(
                name=options["name"],
                role=options["role"],
                folders=folders,
                expires_days=options["expires_days"],
                expires_in=lifetime,
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        scope = ", ".join(f.name for f in folders) or "all folders"
        expiry = token.expires_at.isoformat() if token.expires_at else "never"
        self.stdout.write(f"Created token {token.name!r}: role {token.role}, {scope}, expires {expiry}.")
        self.stdout.write("Store it now; it cannot be shown again:")
        self.stdout.write(raw)
