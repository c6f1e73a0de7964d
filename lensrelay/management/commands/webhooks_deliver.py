"""`manage.py webhooks_deliver`: deliver webhooks from the outbox without the rest of the derive process.

The derive process (started beside the server) already delivers them; this is for operators: `--once`
works off what is due now (the attempts that fail are scheduled again as usual) and prints the counts;
without it, it delivers until stopped, for a setup that runs no derive process (`manage.py runserver`).
Run it beside a derive process only with `--once`: each delivery is claimed, so nothing is sent twice
for that, but two loops would each record `document.changed` from the log.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from lensrelay.webhooks.delivery import WebhookDeliverer
from lensrelay.webhooks.selectors import webhook_delivery_counts


class Command(BaseCommand):
    help = "Deliver webhooks from the outbox (--once: what is due now, then exit)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="Deliver what is due now, then exit.")

    def handle(self, *args: Any, **options: Any) -> None:
        asyncio.run(self._run(once=options["once"]))

    async def _run(self, *, once: bool) -> None:
        # --once leaves document.changed to the derive process, whose cursor it would otherwise share.
        deliverer = WebhookDeliverer(changes=not once)
        try:
            if once:
                made = await deliverer.drain()
                counts = await deliverer.db(webhook_delivery_counts)
                self.stdout.write(
                    f"Webhook attempts made: {made}. Pending deliveries: {counts.deliveries_pending}, "
                    f"delivered: {counts.deliveries_delivered}, paused endpoints: {counts.endpoints_paused}."
                )
                return
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, stop.set)
            self.stdout.write("Delivering webhooks.")
            self.stdout.flush()
            await deliverer.run(stop=stop)
        finally:
            await deliverer.close()
