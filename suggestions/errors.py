"""Refusals of the suggestion services: what an assistant or a reviewer reads; nothing was changed."""

from __future__ import annotations


class SuggestionError(Exception):
    """A refusal the assistant reads; nothing was changed."""


class StaleSuggestion(SuggestionError):
    """The suggestion's markup is gone or broken: it can no longer be decided."""
