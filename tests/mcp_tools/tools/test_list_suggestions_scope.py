"""`list_suggestions` shows a token's suggestions only in the folders it sees now: narrowing a token
away from a folder hides the text it once proposed there."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.access.auth import authenticate_token
from lensrelay.access.tokens import token_create, token_set_folders
from lensrelay.models import ApiToken, Folder
from suggestions.models import Suggestion

pytestmark = pytest.mark.django_db(transaction=True)


def setup() -> tuple[ApiToken, str, Folder, Folder]:
    public, secret = Folder.objects.create(name="Public"), Folder.objects.create(name="Secret")
    token, raw = token_create(name="claude", role="suggest", folders=[public, secret])
    for folder, words in ((public, "open words"), (secret, "secret words")):
        Suggestion.objects.create(
            kind="edit",
            folder=folder,
            doc_id=f"doc-{folder.name}",
            path=f"{folder.name}/Note.md",
            token=token,
            author="claude",
            tool="edit",
            old_text="old",
            new_text=words,
            hunks=[{"old": "old", "new": words}],
        )
    return token, raw, public, secret


async def test_narrowing_hides_suggestions_in_lost_folders(store: Any, call: Any) -> None:
    token, raw, public, _ = await sync_to_async(setup)()
    before = await sync_to_async(authenticate_token)(raw)
    text, error = await call("list_suggestions", {}, who=before)
    assert not error and "secret words" in text and "open words" in text

    await sync_to_async(token_set_folders)(token=token, folders=[public])
    after = await sync_to_async(authenticate_token)(raw)
    text, error = await call("list_suggestions", {}, who=after)
    assert not error and "open words" in text
    assert "Secret" not in text and "secret words" not in text
    text, _ = await call("list_suggestions", {"path": "Secret/Note.md"}, who=after)
    assert text == "No suggestions found."


async def test_a_path_holding_nul_is_refused_with_a_clear_error(store: Any, call: Any) -> None:
    _, raw, _, _ = await sync_to_async(setup)()
    who = await sync_to_async(authenticate_token)(raw)
    text, error = await call("list_suggestions", {"path": "Open/\x00Note.md"}, who=who)
    assert error and "NUL" in text and "Internal error" not in text
