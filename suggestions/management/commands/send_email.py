from typing import Any

from django.core.management.base import BaseCommand

from suggestions.lifecycle.emailing import emails_make, emails_send


class Command(BaseCommand):
    help = (
        "Make the email that is due (suggestions to review, mentions, digests) and send what the outbox "
        "holds, once. The derive process does this on its own every 30 s."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        made = emails_make()
        sent = emails_send()
        self.stdout.write(f"Email: {made} made, {sent} sent.")
