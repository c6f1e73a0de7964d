"""`manage.py audit_export`: suggestions, decisions and changes (per assistant) as CSV or JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.dateparse import parse_datetime
from django.utils.timezone import is_naive, make_aware

from suggestions.audit import FORMATS, audit_records, audit_render


def _moment(raw: str | None, flag: str) -> datetime | None:
    if raw is None:
        return None
    parsed = parse_datetime(raw) or (parse_datetime(f"{raw}T00:00:00") if len(raw) == 10 else None)
    if parsed is None:
        raise CommandError(f"{flag}: {raw!r} is not a date or time (e.g. 2026-11-27 or 2026-11-27T09:30).")
    return make_aware(parsed) if is_naive(parsed) else parsed


class Command(BaseCommand):
    help = "Export what assistants proposed and changed, and who decided it, as CSV or JSON (stdout)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", choices=FORMATS, default="csv")
        parser.add_argument("--token", type=int, default=None, help="Only this token's or grant's (its id)")
        parser.add_argument("--since", default=None, help="From this date or time (UTC unless given)")
        parser.add_argument("--until", default=None, help="Before this date or time")

    def handle(self, *args: Any, **options: Any) -> None:
        records = audit_records(
            token_id=options["token"],
            since=_moment(options["since"], "--since"),
            until=_moment(options["until"], "--until"),
        )
        self.stdout.write(audit_render(records, fmt=options["format"]), ending="")
