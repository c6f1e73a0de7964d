"""`manage.py rollback_assistant`: the admin's "Roll an assistant back" page for an operator's shell.

Prints the plan (what would be rejected, reverted, and not reverted with why); with `--yes` and `--as` (a
staff user with the review permission, recorded as who rolled back) carries it out.
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from lensrelay.docstore.store import get_store
from lensrelay.models import ApiToken
from suggestions.lifecycle.rollback import (
    RollbackError,
    RollbackPlan,
    RollbackResult,
    assistant_rollback_in_store,
    assistant_rollback_plan_in_store,
)
from suggestions.management.commands.audit_export import _moment
from suggestions.permissions import can_review


class Command(BaseCommand):
    help = (
        "Roll an assistant back: reject its pending suggestions, revert its accepted edits "
        "(see docs/review.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        who = parser.add_mutually_exclusive_group(required=True)
        who.add_argument("--token", type=int, help="The token's or OAuth grant's id")
        who.add_argument("--session", help="An MCP session id (its suggestions only)")
        parser.add_argument("--since", default=None, help="Suggestions created from this date or time (UTC)")
        parser.add_argument("--until", default=None, help="... and before this one (default: now)")
        parser.add_argument("--as", dest="username", default=None, help="The staff user rolling back")
        parser.add_argument("--yes", action="store_true", help="Do it (without: only print the plan)")

    def handle(self, *args: Any, **options: Any) -> None:
        token = None
        if options["token"] is not None:
            token = ApiToken.objects.select_related("user").filter(pk=options["token"]).first()
            if token is None:
                raise CommandError(f"No token or grant with id {options['token']}.")
        user = None
        if options["yes"]:
            if not options["username"]:
                raise CommandError("--yes needs --as USERNAME: a staff user, recorded as who rolled back.")
            user = get_user_model().objects.filter(username=options["username"], is_staff=True).first()
            if user is None or not can_review(user):
                raise CommandError(f"{options['username']!r} is not staff with the review permission.")
        since = _moment(options["since"], "--since")
        until = _moment(options["until"], "--until") or timezone.now()

        async def run() -> tuple[RollbackPlan, RollbackResult | None]:
            store = get_store()
            try:
                plan = await assistant_rollback_plan_in_store(
                    store=store, token=token, session_id=options["session"] or "", since=since, until=until
                )
                if user is None or not plan.actionable:
                    return plan, None
                return plan, await assistant_rollback_in_store(store=store, plan=plan, user=user)
            finally:
                await store.close()

        try:
            plan, result = asyncio.run(run())
        except RollbackError as exc:
            raise CommandError(str(exc)) from exc
        if plan.empty:
            self.stdout.write(
                f"Nothing to roll back: {plan.assistant.label} made no suggestions {plan.window}."
            )
            return
        for row in plan.pending:
            self.stdout.write(f"reject  {row.uid} {row.kind} {row.path}")
        for row in plan.revertible:
            self.stdout.write(f"revert  {row.uid} {row.kind} {row.path}")
        for item in plan.not_revertible:
            self.stdout.write(f"keep    {item.suggestion.uid} {item.suggestion.path}: {item.reason}")
        if result is None:
            if plan.actionable:
                self.stdout.write("Nothing changed: add --yes --as USERNAME to roll back.")
            return
        self.stdout.write(result.summary)
        for item in [*result.not_rejected, *result.not_reverted[len(plan.not_revertible) :]]:
            self.stdout.write(f"not rolled back: {item.suggestion.uid} {item.suggestion.path}: {item.reason}")
