"""Webhooks: signed HTTP callbacks telling other systems that suggestions were made or decided and that
documents changed, moved, went to the trash or came back.

Writers record an event in the durable outbox (`events.py`) in the same transaction as their change; the
delivery loop (`delivery.py`, run by the derive process) fans each event out to the endpoints that want
it and delivers it at least once, signed as Standard Webhooks do, with retries and backoff. `document.changed`
is derived from the update log (`changes.py`), so no live-path write waits for it.
"""
