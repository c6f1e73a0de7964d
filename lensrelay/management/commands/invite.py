from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lensrelay.access.invitations import InvitationRefused, person_invite
from lensrelay.access.roles import ROLE_GROUPS


class Command(BaseCommand):
    help = (
        "Invite a person: a staff user in the given groups (Readers, Reviewers, Editors, or your own) and a "
        "link to choose their password, printed (and emailed with --send)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument(
            "--group", action="append", default=[], help=f"a group to join (repeat): {', '.join(ROLE_GROUPS)}"
        )
        parser.add_argument("--username", default="", help="default: the part of the email before @")
        parser.add_argument(
            "--base-url", default="", help="default: LENSRELAY_PUBLIC_URL, else http://127.0.0.1:8000"
        )
        parser.add_argument("--send", action="store_true", help="email the link (Django's email settings)")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["group"]:
            raise CommandError(f"Name at least one --group: {', '.join(ROLE_GROUPS)}")
        try:
            invitation = person_invite(
                email=options["email"],
                groups=options["group"],
                username=options["username"],
                base_url=options["base_url"],
                send=options["send"],
            )
        except InvitationRefused as exc:
            raise CommandError(f"Nobody was invited: {exc}.") from exc
        user = invitation.user
        groups = ", ".join(user.groups.order_by("name").values_list("name", flat=True))
        self.stdout.write(f"Invited {user.get_username()} <{user.email}> (groups: {groups}).")
        self.stdout.write(f"Link to choose a password (works once): {invitation.link}")
        if invitation.sent:
            self.stdout.write(f"Sent to {user.email}.")
