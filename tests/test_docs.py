"""The README and the manual in docs/: every relative link and #anchor resolves, the README stays a door.

Anchors follow GitHub's heading slugs (github-slugger): the heading's text without markup, lower-cased,
every character that is not a letter, a digit, `_`, `-` or a space dropped, spaces turned into `-`, and
`-1`, `-2`, ... added to repeats. Links inside code (fenced blocks, inline code) are text, not links.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
README_MAX_LINES = 300
# The README opens with these two commands, right after its title and description: the door's first step.
OPENING_COMMANDS = [
    "./scripts/serve   # set up and run the server: SQLite, in-memory channel layer, demo vault, "
    "prints a demo token",
    "./scripts/test    # set up (Python, npm, Debian chromium) and run the whole test suite",
]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_INLINE_CODE = re.compile(r"(`+).+?\1")
# [text](target "title") and ![alt](target); the text may hold one level of brackets.
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//")
# Code the manual names: files (`lensrelay/files/kinds.py`) and Python names (`lensrelay.vault.trash.x`).
_TOP = "lensrelay|mcp_tools|suggestions|tests|bench|scripts|editor|templates"
_CODE_PATH = re.compile(rf"`((?:{_TOP})(?:/[\w.-]+)+/?)`")
_CODE_NAME = re.compile(r"`((?:lensrelay|mcp_tools|suggestions)(?:\.[A-Za-z_]\w*)+)`")


def outside_fences(text: str) -> list[str]:
    """The lines outside fenced code blocks (a fence closes with at least as many of its own marks)."""
    lines, fence = [], ""
    for line in text.splitlines():
        mark = _FENCE.match(line)
        if fence:
            if mark and mark.group(1)[0] == fence[0] and len(mark.group(1)) >= len(fence):
                fence = ""
        elif mark:
            fence = mark.group(1)
        else:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays, its target goes
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    repeats: dict[str, int] = {}
    for line in outside_fences(path.read_text(encoding="utf-8")):
        if heading := _HEADING.match(line):
            base = slug(heading.group(2))
            count = repeats.get(base, 0)
            repeats[base] = count + 1
            found.add(f"{base}-{count}" if count else base)
    return found


def link_targets(path: Path) -> list[str]:
    targets = []
    for line in outside_fences(path.read_text(encoding="utf-8")):
        targets += _LINK.findall(_INLINE_CODE.sub("", line))
        if definition := _DEFINITION.match(line):
            targets.append(definition.group(1))
    return targets


def broken_links(paths: list[Path], *, root: Path = REPO) -> list[str]:
    """Every relative link of these files that names no file, or an #anchor its page has no heading for."""
    broken = []
    for path in paths:
        for target in link_targets(path):
            if not target or _SCHEME.match(target):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / unquote(file_part)).resolve() if file_part else path
            where = path.relative_to(root).as_posix()
            if not linked.exists():
                broken.append(f"{where}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and unquote(anchor) not in anchors(linked):
                broken.append(f"{where}: {target} (no such heading in {linked.name})")
    return broken


def names_code(dotted: str) -> bool:
    """A module, or a function, class or constant defined at the top of one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        base = REPO.joinpath(*parts[:cut])
        module = next((f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file()), None)
        if module is None:
            continue
        rest = parts[cut:]
        if not rest:
            return True
        defined = rf"^(?:async def |def |class ){rest[0]}\b|^{rest[0]}\s*[:=]"
        return len(rest) == 1 and re.search(defined, module.read_text(encoding="utf-8"), re.M) is not None
    return False


def missing_code(path: Path) -> list[str]:
    """The files and Python names of this repository that the page names and that do not exist."""
    text = path.read_text(encoding="utf-8")
    paths = [ref for ref in _CODE_PATH.findall(text) if "node_modules" not in ref]  # installed, not committed
    return [ref for ref in paths if not (REPO / ref).exists()] + [
        ref for ref in _CODE_NAME.findall(text) if not names_code(ref)
    ]


def manual() -> list[Path]:
    return [README, *sorted(DOCS.glob("**/*.md"))]


def test_every_relative_link_and_anchor_resolves() -> None:
    pages = manual()
    assert len(pages) > 10  # the manual is there, not an empty glob
    broken = broken_links(pages)
    assert not broken, "\n".join(broken)


def test_the_code_the_manual_names_exists() -> None:
    named = {path.name: missing_code(path) for path in manual()}
    assert {page: refs for page, refs in named.items() if refs} == {}
    assert names_code("lensrelay.vault.trash.document_restore")
    assert not names_code("lensrelay.vault.trash.nothing")


def test_the_checker_reports_a_missing_file_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "# Page\n\n## Connect with OAuth (claude.ai, `ChatGPT`)\n\n## Tools\n\n## Tools\n\n"
        "[ok](#connect-with-oauth-claudeai-chatgpt) [ok](#tools-1) [ok](../README.md#title) [web](https://x.org/#y)\n"
        "[gone](missing.md) [bad anchor](#nowhere) [bad anchor](../README.md#nowhere)\n"
        "`[code](ignored.md)`\n```\n[fenced](ignored.md)\n# not a heading\n```\n",
        encoding="utf-8",
    )
    (tmp_path / "README.md").write_text("# Title\n\n[docs](docs/page.md#tools)\n", encoding="utf-8")
    assert broken_links([tmp_path / "README.md", page], root=tmp_path) == [
        "docs/page.md: missing.md (no such file)",
        "docs/page.md: #nowhere (no such heading in page.md)",
        "docs/page.md: ../README.md#nowhere (no such heading in README.md)",
    ]


def test_slugs_follow_github() -> None:
    sdk = "y-sweet clients (`@y-sweet/sdk`, `@y-sweet/client`)"
    assert slug(sdk) == "y-sweet-clients-y-sweetsdk-y-sweetclient"
    assert slug("Derived work (backlinks, search, vectors, versions)") == (
        "derived-work-backlinks-search-vectors-versions"
    )
    assert slug("Trash, restore and purge") == "trash-restore-and-purge"
    assert slug("Files in the [browser](x.md) — Café") == "files-in-the-browser--café"


def test_readme_is_a_door_that_opens_with_the_two_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move the detail into docs/"
    assert lines[0] == "# Lens Relay"
    opening = lines.index("```bash")
    assert not any(line.startswith("## ") for line in lines[:opening])  # title and description only
    assert lines[opening + 1 : opening + 4] == [*OPENING_COMMANDS, "```"]


def _env_reads(source: str) -> set[str]:
    return set(re.findall(r"(?:os\.environ\.get|_env_bool|_env_float)\(\s*\"([A-Z][A-Z0-9_]+)\"", source))


def _setting_rows(path: Path) -> dict[str, str]:
    """variable → its table row, for the rows whose first cell names variables (`A`, `B` share a row)."""
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", first):
                rows[name] = line
    return rows


def test_every_setting_the_server_reads_is_on_the_settings_page() -> None:
    read = _env_reads((REPO / "lensrelay" / "settings.py").read_text(encoding="utf-8"))
    assert len(read) > 70
    assert read - set(_setting_rows(DOCS / "settings.md")) == set()


def test_a_setting_described_on_two_pages_is_described_alike() -> None:
    everywhere = _setting_rows(DOCS / "settings.md")
    repeated = 0
    for page in sorted(DOCS.glob("*.md")):
        if page.name == "settings.md":
            continue
        for name, row in _setting_rows(page).items():
            if name in everywhere and row.count("|") == everywhere[name].count("|") == 4:
                repeated += 1
                assert row == everywhere[name], f"{name} differs between {page.name} and settings.md"
    assert repeated >= 13  # the version history and file storage tables


def _python_block(path: Path) -> str:
    return path.read_text(encoding="utf-8").split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_sdk_snippet_is_the_one_the_mcp_page_shows() -> None:
    snippet = _python_block(README)
    assert "streamable_http_client" in snippet
    assert snippet == _python_block(DOCS / "mcp.md")


_TEST_NODE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def test_every_test_the_security_model_names_exists() -> None:
    named = _TEST_NODE.findall((DOCS / "security.md").read_text(encoding="utf-8"))
    assert len(named) >= 10
    missing = [
        f"{path}::{name}"
        for path, name in named
        if not (REPO / path).is_file()
        or not re.search(rf"^(async )?def {name}\(", (REPO / path).read_text(encoding="utf-8"), re.M)
    ]
    assert missing == []
