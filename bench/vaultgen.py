"""Generate an Obsidian-style vault for benchmarks: nested folders, frontmatter, wikilinks, some Unicode.

Deterministic for a given seed, so two runs import the same bytes.

    .venv/bin/python -m bench.vaultgen OUT_DIR [--notes 10000] [--bytes 2000]
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass
from pathlib import Path

_WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "vault",
    "note",
    "link",
    "graph",
    "idea",
    "draft",
    "review",
    "summary",
    "project",
    "meeting",
    "plan",
    "research",
    "reading",
    "garden",
    "index",
    "daily",
    "weekly",
    "archive",
    "reference",
    "question",
    "answer",
    "insight",
    "model",
    "system",
    "design",
    "server",
    "client",
    "document",
    "folder",
    "sync",
    "update",
    "merge",
    "text",
    "change",
    "history",
]
_UNICODE_WORDS = [
    "café",
    "naïve",
    "Zürich",
    "東京",
    "知識",
    "データ",
    "emoji🙂",
    "rocket🚀",
    "Ελληνικά",
    "façade",
]
_TOP = [
    "Projects",
    "Areas",
    "Resources",
    "Archive",
    "Daily",
    "Reading",
    "Research",
    "Meetings",
    "Ideas",
    "Ünïcode",
]


@dataclass(frozen=True)
class VaultStats:
    notes: int
    folders: int
    bytes: int


def note_paths(count: int, rng: random.Random) -> list[Path]:
    """Relative paths, spread over folders up to three levels deep (about 25 notes per folder)."""
    paths: list[Path] = []
    for i in range(count):
        top = _TOP[i % len(_TOP)]
        depth = rng.choice((0, 1, 1, 2, 2, 3))
        parts = [top] + [f"{_WORDS[(i // 25 + level * 7) % len(_WORDS)]}-{level}" for level in range(depth)]
        name = f"{rng.choice(_WORDS).title()} {i:05d}"
        if i % 97 == 0:
            name += f" {rng.choice(_UNICODE_WORDS)}"
        paths.append(Path(*parts) / f"{name}.md")
    return paths


def note_text(index: int, paths: list[Path], rng: random.Random, *, size: int) -> str:
    """A note of about ``size`` UTF-8 bytes: frontmatter, a heading, paragraphs with wikilinks."""
    lines = [
        "---",
        f"id: {index}",
        f"tags: [{rng.choice(_WORDS)}, {rng.choice(_WORDS)}]",
        f"created: 2024-{1 + index % 12:02d}-{1 + index % 28:02d}",
        "---",
        "",
        f"# {paths[index].stem}",
        "",
    ]
    body = "\n".join(lines)
    while len(body.encode()) < size:
        words = [rng.choice(_WORDS) for _ in range(rng.randint(8, 20))]
        if rng.random() < 0.5:
            target = paths[rng.randrange(len(paths))].stem
            words.insert(rng.randrange(len(words)), f"[[{target}]]")
        if rng.random() < 0.1:
            words.append(rng.choice(_UNICODE_WORDS))
        body += " ".join(words).capitalize() + ".\n\n"
    return body


def generate(root: Path, *, notes: int, size: int = 2000, seed: int = 1) -> VaultStats:
    rng = random.Random(seed)
    paths = note_paths(notes, rng)
    total = 0
    folders: set[Path] = set()
    for index, relative in enumerate(paths):
        target = root / relative
        if relative.parent not in folders:
            target.parent.mkdir(parents=True, exist_ok=True)
            folders.add(relative.parent)
        data = note_text(index, paths, rng, size=size).encode()
        target.write_bytes(data)
        total += len(data)
    every_folder = {p for folder in folders for p in [folder, *folder.parents] if str(p) != "."}
    return VaultStats(notes=notes, folders=len(every_folder), bytes=total)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--bytes", type=int, default=2000, help="approximate size of each note")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    stats = generate(args.out, notes=args.notes, size=args.bytes, seed=args.seed)
    print(f"{stats.notes} notes in {stats.folders} folders, {stats.bytes / 1e6:.1f} MB, under {args.out}")


if __name__ == "__main__":
    main()
