"""The knowledge base's prompts and completions, for the caller only: its folders, its suggestions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.access.auth import Access
from lensrelay.access.tokens import token_create
from lensrelay.models import Folder
from lensrelay.vault.documents import document_create
from lensrelay.vault.importexport import import_vault
from mcp_tools import prompts
from mcp_tools.registry import ToolContext
from suggestions.lifecycle.commenting import Commenter, suggestion_thread, thread_reply
from suggestions.models import Suggestion

pytestmark = pytest.mark.django_db(transaction=True)

DEMO = Path(__file__).resolve().parents[2] / "lensrelay" / "demo_vault"


@pytest.fixture
async def vaults(store: Any, make_folder: Any) -> Any:
    await import_vault(store=store, root=DEMO, folder_name="Lens")
    secret = await sync_to_async(make_folder)("Secret")
    await document_create(store=store, folder=secret, path="/Plans.md", text="See [[Hidden Target]].\n")
    return store


def ctx_for(folder_names: tuple[str, ...] | None, token_id: int | None = None) -> ToolContext:
    ids = (
        None
        if folder_names is None
        else frozenset(Folder.objects.filter(name__in=folder_names).values_list("pk", flat=True))
    )
    return ToolContext(
        access=Access(name="claude", role="suggest", folder_ids=ids, token_id=token_id), session_key="s"
    )


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(m["content"]["text"] for m in result["messages"])


async def test_completions_stay_in_the_callers_folders(vaults: Any) -> None:
    lens_only = await sync_to_async(ctx_for)(("Lens",))
    folders = await prompts.complete(
        lens_only, {"type": "ref/prompt", "name": "fix_broken_links"}, {"name": "folder", "value": ""}
    )
    assert folders["completion"]["values"] == ["Lens"]
    paths = await prompts.complete(
        lens_only, {"type": "ref/prompt", "name": "review_feedback"}, {"name": "path", "value": "lens/ph"}
    )
    assert paths["completion"]["values"] == ["Lens/Photosynthesis.md"]
    hidden = await prompts.complete(
        lens_only, {"type": "ref/resource", "uri": "lens://{path}"}, {"name": "path", "value": "Secret"}
    )
    assert hidden["completion"]["values"] == []
    everyone = await sync_to_async(ctx_for)(None)
    shown = await prompts.complete(
        everyone, {"type": "ref/resource", "uri": "lens://{path}"}, {"name": "path", "value": "Secret"}
    )
    assert shown["completion"]["values"] == ["Secret/Plans.md"]


async def test_fix_broken_links_lists_only_the_folders_broken_links(vaults: Any) -> None:
    everyone = await sync_to_async(ctx_for)(None)
    result = await prompts.get_prompt(everyone, "fix_broken_links", {"folder": "Secret"})
    assert "- Secret/Plans.md: [[Hidden Target]]" in text_of(result)
    lens_only = await sync_to_async(ctx_for)(("Lens",))
    with pytest.raises(prompts.PromptError, match="Unknown folder"):
        await prompts.get_prompt(lens_only, "fix_broken_links", {"folder": "Secret"})
    with pytest.raises(prompts.PromptError, match="missing required argument 'folder'"):
        await prompts.get_prompt(lens_only, "fix_broken_links", {})


async def test_summarize_changes_lists_the_notes_changed_since(vaults: Any) -> None:
    lens_only = await sync_to_async(ctx_for)(("Lens",))
    result = text_of(
        await prompts.get_prompt(lens_only, "summarize_changes", {"folder": "Lens", "since": "2000-01-01"})
    )
    assert "Lens/Welcome.md" in result and "Secret" not in result
    later = text_of(
        await prompts.get_prompt(lens_only, "summarize_changes", {"folder": "Lens", "since": "2999-01-01"})
    )
    assert "nothing to summarise" in later
    with pytest.raises(prompts.PromptError, match="must be a date"):
        await prompts.get_prompt(lens_only, "summarize_changes", {"folder": "Lens", "since": "<script>"})


async def test_review_feedback_names_what_people_said_about_this_tokens_suggestions(vaults: Any) -> None:
    lens = await sync_to_async(Folder.objects.get)(name="Lens")
    mine, _ = await sync_to_async(token_create)(name="claude", role="suggest", folders=[lens])
    other, _ = await sync_to_async(token_create)(name="other", role="suggest", folders=[lens])

    def rows() -> tuple[Suggestion, Suggestion]:
        made = [
            Suggestion.objects.create(
                folder=lens,
                doc_id="d",
                path="Lens/Welcome.md",
                token=token,
                author=token.name,
                tool="edit",
                status="rejected",
                note=f"Too long ({token.name})",
            )
            for token in (mine, other)
        ]
        return made[0], made[1]

    own, theirs = await sync_to_async(rows)()
    thread = await sync_to_async(suggestion_thread)(suggestion=own)
    await thread_reply(
        store=vaults, thread=thread, commenter=Commenter(author="ana"), body="Shorter, please."
    )
    result = text_of(
        await prompts.get_prompt(await sync_to_async(ctx_for)(("Lens",), mine.pk), "review_feedback", {})
    )
    assert own.uid in result and "Too long (claude)" in result and "ana said: Shorter, please." in result
    assert theirs.uid not in result and "Too long (other)" not in result
    nothing = text_of(
        await prompts.get_prompt(await sync_to_async(ctx_for)(("Lens",)), "review_feedback", {})
    )
    assert "nothing to act on" in nothing
