"""The CriticMarkup cases shared with the browser editor (criticmarkup_cases.json): the server's parser
finds the same marks and leaves the same accepted and rejected texts; then the editor's parser is run on
the same file by its node test (editor/test/critic.test.js), so both are held to one table."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from suggestions.markup.accepted_view import build_accepted_view
from suggestions.markup.criticmarkup import Mark, accept_all, parse, reject_all

ROOT = Path(__file__).resolve().parents[3]
CASES: list[dict[str, Any]] = json.loads((Path(__file__).with_name("criticmarkup_cases.json")).read_text())[
    "cases"
]


def as_case(mark: Mark) -> dict[str, Any]:
    found: dict[str, Any] = {"kind": mark.kind, "start": mark.start, "end": mark.end, "content": mark.content}
    if mark.kind == "substitution":
        found["new_content"] = mark.new_content
    found["metadata"] = mark.metadata
    return found


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_python_parser_passes_the_case(case: dict[str, Any]) -> None:
    text = case["text"]
    marks = parse(text)
    assert [as_case(m) for m in marks] == case["marks"]
    for mark in marks:  # the content is where the offsets say
        assert text[mark.content_start : mark.content_end] == mark.content
        if mark.kind == "substitution":
            assert text[mark.new_content_start : mark.new_content_end] == mark.new_content
    assert accept_all(text) == case["accepted"]
    assert reject_all(text) == case["rejected"]
    # What the tools read: the accepted view of the note.
    assert build_accepted_view(text).text == case["accepted"]


def test_the_cases_cover_every_kind_and_the_hard_parts() -> None:
    kinds = {m["kind"] for c in CASES for m in c["marks"]}
    assert kinds == {"addition", "deletion", "substitution", "highlight", "comment"}
    texts = [c["text"] for c in CASES]
    assert any(m["metadata"] for c in CASES for m in c["marks"])
    assert any(any(ord(ch) > 0xFFFF for ch in t) for t in texts)  # astral: UTF-16 and code points differ
    assert any(not c["marks"] and "{++" in c["text"] for c in CASES)  # unbalanced


def node_test_counts(test_file: str) -> tuple[int, int]:
    """(passed, failed) of one of the editor's node test files (editor/test/), run with ``node --test``."""
    node = shutil.which("node")
    assert node is not None, "node is needed for the editor's tests"
    run = subprocess.run(
        [node, "--test", test_file], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
    passed = re.search(r"^# pass (\d+)$", run.stdout, re.MULTILINE)
    failed = re.search(r"^# fail (\d+)$", run.stdout, re.MULTILINE)
    assert passed is not None and failed is not None, run.stdout
    return int(passed.group(1)), int(failed.group(1))


def test_the_editor_parser_passes_every_case() -> None:
    assert node_test_counts("editor/test/critic.test.js") == (len(CASES), 0)
