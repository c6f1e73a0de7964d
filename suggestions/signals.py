"""Signals of the suggestions app, for what is built on it (MCP notifications)."""

from __future__ import annotations

from django.dispatch import Signal

# Sent with `pks` (suggestion ids) inside the transaction that records their final decision (accepted,
# rejected or stale), whoever made it: a reviewer in the admin, an editor removing the markup, a clean-up.
suggestion_decided = Signal()
