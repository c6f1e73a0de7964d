"""`list_suggestions` tells the assistant what a reviewer changed in its proposal before accepting it."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.access.auth import authenticate_token
from lensrelay.access.tokens import token_create
from lensrelay.models import Folder
from suggestions.models import Suggestion

pytestmark = pytest.mark.django_db(transaction=True)


def setup() -> tuple[str, Suggestion, Suggestion]:
    folder = Folder.objects.create(name="Team")
    token, raw = token_create(name="claude", role="suggest", folders=[folder])

    def row(revision: list[str]) -> Suggestion:
        return Suggestion.objects.create(
            kind="edit",
            folder=folder,
            doc_id="doc",
            path="Team/Note.md",
            token=token,
            author="claude",
            tool="edit",
            old_text="quick brown",
            new_text="slow red",
            hunks=[{"old": "quick brown", "new": "slow red"}],
            status="accepted",
            revision=revision,
        )

    return raw, row(["slow ruby"]), row([])


async def test_an_acceptance_with_changes_shows_the_difference(store: Any, call: Any) -> None:
    raw, changed, plain = await sync_to_async(setup)()
    who = await sync_to_async(authenticate_token)(raw)
    text, error = await call("list_suggestions", {}, who=who)
    assert not error
    entries = {entry.split(" ", 1)[0]: entry for entry in text.split("\n- ")[1:]}
    assert (
        "Accepted with changes: the reviewer changed your text before accepting it: slow {--red--}{++ruby++}"
    ) in entries[changed.uid]
    assert "Accepted with changes" not in entries[plain.uid]
