"""Tools run against a live store holding the bundled demo vault."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lensrelay.access.auth import Access
from lensrelay.vault.importexport import import_vault
from mcp_tools.registry import REGISTRY, ToolContext, ToolError, ToolResult

DEMO = Path(__file__).resolve().parents[3] / "lensrelay" / "demo_vault"


@pytest.fixture
async def demo(store: Any, transactional_db: None) -> Any:
    await import_vault(store=store, root=DEMO, folder_name="Lens")
    return store


def access(role: str = "edit", folder_ids: frozenset[int] | None = None) -> Access:
    return Access(name="tester", role=role, folder_ids=folder_ids, token_id=None)


class ReadLog:
    def __init__(self) -> None:
        self.read: set[str] = set()


@pytest.fixture
def call(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Call a tool by name the way the transport does; returns (text, is_error)."""
    import mcp_tools.tools  # noqa: F401  (registers the tools)

    log = ReadLog()

    async def record(self: ToolContext, doc_id: str) -> None:
        log.read.add(doc_id)

    async def has(self: ToolContext, doc_id: str) -> bool:
        return doc_id in log.read

    monkeypatch.setattr(ToolContext, "record_read", record)
    monkeypatch.setattr(ToolContext, "has_read", has)

    async def run(name: str, arguments: dict[str, Any], *, who: Access | None = None) -> tuple[str, bool]:
        tool = REGISTRY[name]
        ctx = ToolContext(access=who or access(), session_key="test-session")
        try:
            answer = await tool.handler(ctx, tool.parse(arguments))
            run.answers.append(answer)  # type: ignore[attr-defined]
            return (answer.text if isinstance(answer, ToolResult) else answer), False
        except ToolError as exc:
            return str(exc), True

    run.log = log  # type: ignore[attr-defined]
    run.answers = []  # type: ignore[attr-defined]
    return run
