"""Signals of the suggestions app, for what is built on it (MCP notifications)."""

from __future__ import annotations

from django.dispatch import Signal

# Sent with `pks` (suggestion ids) inside the transaction that records their final decision (accepted,
# rejected, stale or superseded), whoever made it: a reviewer in the admin, an editor removing the markup, a
# clean-up, a version restore that removed the markup, a later edit that superseded it. Every path that
# takes a suggestion out of pending sends it, so its session always hears. An undone decision sends it too
# (the status is pending again, suggestions/lifecycle/undoing.py), with `by` (the staff user or None) and
# `undone` (the status it took back), as does rolling an accepted change back (the status is `reverted`).
suggestion_decided = Signal()

# Sent with `pks` (thread comment ids) inside the transaction that makes each comment's row, whoever wrote
# it (suggestions/lifecycle/commenting.py): the sessions taking part in the thread are told.
comment_posted = Signal()
