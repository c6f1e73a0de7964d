"""The server picks an assistant's colour as the editor's pages pick theirs: the same palette, the same
preference by name (checked against editor/src/colours.js run by Node), free colours first."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from lensrelay.sync.colours import PALETTE, colour_for, preferred_index

COLOURS_JS = Path(__file__).resolve().parents[3] / "editor" / "src" / "colours.js"
NAMES = [
    "claude",
    "gpt",
    "Claude Code · claude-review",
    "ann",
    "",
    "中文助手",
    "🦊 fox",
    "e\u0301",
    "x" * 300,
]


def test_the_palette_is_the_editors() -> None:
    block = re.search(r"export const PALETTE = \[(.*?)\];", COLOURS_JS.read_text(), re.S)
    assert block is not None
    assert tuple(re.findall(r'"(#[0-9a-f]{6})"', block.group(1))) == PALETTE


def test_a_name_prefers_the_colour_the_editor_gives_it() -> None:
    script = (
        f"import {{ preferredIndex }} from {json.dumps(COLOURS_JS.as_uri())};"
        f"console.log(JSON.stringify({json.dumps(NAMES)}.map((n) => preferredIndex(n))));"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == [preferred_index(name) for name in NAMES]


def person(name: str, colour: str) -> dict[str, object]:
    return {"user": {"name": name, "color": colour}}


def test_the_preferred_colour_when_free_else_the_next_free_else_the_least_shown() -> None:
    start = preferred_index("claude")
    preferred, after = PALETTE[start], PALETTE[(start + 1) % len(PALETTE)]
    assert colour_for("claude", []) == preferred
    assert colour_for("claude", [person("ann", preferred)]) == after
    # Its own name elsewhere (another tab of a person of that name) takes nothing from it.
    assert colour_for("claude", [person("claude", preferred)]) == preferred
    # Every colour shown once, the preferred twice: the next one, shown once.
    everyone = [person(f"p{i}", colour) for i, colour in enumerate(PALETTE)] + [person("z", preferred)]
    assert colour_for("claude", everyone) == after
    # Hostile states (no user, a user that is no object, foreign colours) count for nothing.
    hostile: list[object] = [None, {}, {"user": "x"}, {"user": {"color": 7}}, person("bob", "#000000")]
    assert colour_for("claude", hostile) == preferred
