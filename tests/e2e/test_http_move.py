"""`POST /api/documents/move`: a note or sub-folder moved within its folder by an edit token, every link to
it following (the folder sync client sends a rename made on disk this way). Attacked by role, scope and
hostile paths: each refusal says why and changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .relay import Relay, RelayTokens, TokenSpec

pytestmark = pytest.mark.e2e

NOTES = {
    "Old.md": "# Old\n",
    "Linker.md": "See [[Old]] and [[Old#Top|the top]].\n",
    "Taken.md": "# Taken\n",
}


@pytest.fixture(scope="module")
def api(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> RelayTokens:
    vault: Path = tmp_path_factory.mktemp("moves")
    for name, text in NOTES.items():
        (vault / name).write_text(text, encoding="utf-8")
    other: Path = tmp_path_factory.mktemp("other")
    (other / "Mine.md").write_text("# Mine\n", encoding="utf-8")
    scoped = relay.setup(
        imports=[(vault, "Moves"), (other, "Elsewhere")],
        tokens={"elsewhere-edit": TokenSpec("edit", ("Elsewhere",))},
    )
    return RelayTokens(relay=relay, tokens={**relay.tokens, **scoped})


async def move(api: RelayTokens, token: str, **body: Any) -> tuple[int, dict[str, Any]]:
    response = await api.relay.request("POST", "/api/documents/move", token=api[token], json_body=body)
    assert response.headers.get("content-type", "").startswith("application/json"), response.text
    return response.status_code, response.json()


async def paths(api: RelayTokens) -> dict[str, str]:
    return await api.relay.document_paths(api["edit"], folder="Moves")


async def test_refusals_say_why_and_move_nothing(api: RelayTokens) -> None:
    before = await paths(api)
    hostile = [
        # role: a reader and a suggester may not move
        ("view", {"folder": "Moves", "path": "/Old.md", "new_path": "/New.md"}, 403, "role view"),
        ("suggest", {"folder": "Moves", "path": "/Old.md", "new_path": "/New.md"}, 403, "role suggest"),
        # scope: a folder out of reach reads as one that does not exist
        ("elsewhere-edit", {"folder": "Moves", "path": "/Old.md", "new_path": "/N.md"}, 404, "No folder"),
        ("edit", {"folder": "Nowhere", "path": "/Old.md", "new_path": "/N.md"}, 404, "No folder"),
        # hostile paths
        ("edit", {"folder": "Moves", "path": "/Old.md", "new_path": "/../Escape.md"}, 400, ""),
        ("edit", {"folder": "Moves", "path": "/Old.md", "new_path": "/_trash/Old.md"}, 400, "trash"),
        ("edit", {"folder": "Moves", "path": "/Old.md", "new_path": "/Taken.md"}, 400, ""),
        ("edit", {"folder": "Moves", "path": "/_trash/Old.md", "new_path": "/Back.md"}, 404, ""),
        ("edit", {"folder": "Moves", "path": "/Missing.md", "new_path": "/Found.md"}, 404, "does not exist"),
        ("edit", {"folder": "Moves", "path": "/Old.md", "new_path": "/" + "x" * 300 + ".md"}, 400, ""),
    ]
    for token, body, status, said in hostile:
        code, answer = await move(api, token, **body)
        assert code == status and said in answer["error"], (token, body, code, answer)
    # A body that is not what the route takes: a JSON error, nothing moved.
    code, answer = await move(api, "edit", folder="Moves", path="/Old.md")
    assert code == 422 and "detail" in answer
    assert await paths(api) == before
    # Another folder's note is never reached through this one, nor its name told.
    code, answer = await move(api, "edit", folder="Moves", path="/Mine.md", new_path="/Stolen.md")
    assert code == 404 and "Elsewhere" not in answer["error"]


async def test_an_edit_token_moves_a_note_and_its_links_follow(api: RelayTokens) -> None:
    before = await paths(api)
    code, answer = await move(api, "edit", folder="Moves", path="Old.md", new_path="/Sub/Renamed.md")
    assert code == 200, answer
    assert answer["path"] == "/Old.md" and answer["new_path"] == "/Sub/Renamed.md"
    assert answer["links_rewritten"] == 2 and answer["documents_rewritten"] == 1
    after = await paths(api)
    assert after["Moves/Sub/Renamed.md"] == before["Moves/Old.md"]  # the same document, a new path
    assert "Moves/Old.md" not in after
    linker = await api.relay.doc_text(after["Moves/Linker.md"], token=api["edit"])
    assert linker == "See [[Renamed]] and [[Renamed#Top|the top]].\n"
