"""The editor resolves wikilinks by the server's rules (editor/src/linkrules.js), within the open note's
folder and into the other folders: one table of cases (editor_cases.json) holds both to the same answers,
here for the server's resolver and in editor/test/links.test.js for the editor's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lensrelay.links.resolve import LinkIndex, LinkTarget
from tests.suggestions.markup.test_criticmarkup_cases import node_test_counts

TABLE: dict[str, Any] = json.loads((Path(__file__).parent / "editor_cases.json").read_text(encoding="utf-8"))
FOLDER: str = TABLE["folder"]
VAULT: dict[str, Any] = TABLE["vault"]


@pytest.mark.parametrize(("source", "link", "expected", "why"), TABLE["cases"])
def test_the_server_resolves_each_case_as_the_table_says(
    source: str, link: str, expected: str | None, why: str
) -> None:
    index = LinkIndex(LinkTarget(FOLDER, path) for path, kind in TABLE["entries"] if kind != "folder")
    found = index.resolve(source=LinkTarget(FOLDER, source), target=link).target
    assert (found.path if found else None) == expected, why


@pytest.mark.parametrize(("source", "link", "expected", "why"), VAULT["cases"])
def test_the_server_resolves_each_case_across_folders_as_the_table_says(
    source: str, link: str, expected: str | None, why: str
) -> None:
    index = LinkIndex(
        LinkTarget(folder, path)
        for folder, entries in VAULT["folders"].items()
        for path, kind in entries
        if kind != "folder"
    )
    folder, _, path = source.partition("/")
    found = index.resolve(source=LinkTarget(folder, "/" + path), target=link).target
    assert (found.user_path if found else None) == expected, why


def test_the_editor_resolves_them_alike_and_passes_its_link_tests() -> None:
    passed, failed = node_test_counts("editor/test/links.test.js")
    assert failed == 0 and passed >= 6
