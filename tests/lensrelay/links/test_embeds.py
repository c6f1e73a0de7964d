"""Embeds and links to non-markdown files: `![[diagram.png]]`, `![[paper.pdf]]`, `[[board.canvas]]`.

They resolve by Obsidian's rules like notes do, except that only '.md' is ever added to a link: a file
of another type is reached only by a link that names its extension. Moving such a file rewrites every
embed of it, exactly as moving a note rewrites links to the note.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from lensrelay.links.resolve import LinkIndex, LinkTarget
from lensrelay.links.rewrite import Relocation, apply_edits
from lensrelay.text.wikilinks import extract_wikilinks
from tests.lensrelay.links.test_resolve import t

VAULT = [
    "Lens/Welcome.md",
    "Lens/Notes/Ideas.md",
    "Lens/Notes/diagram.png",
    "Lens/Assets/diagram.png",
    "Lens/Assets/paper.pdf",
    "Lens/Boards/plan.canvas",
    "Lens/Data/config.json",
    "Lens/Notes/Ideas.canvas",
    "Lens Edu/Syllabus.md",
    "Lens Edu/Media/cell.jpg",
]


@pytest.fixture
def index() -> LinkIndex:
    return LinkIndex(t(p) for p in VAULT)


def reach(index: LinkIndex, source: str, target: str) -> str | None:
    found = index.resolve(source=t(source), target=target).target
    return found.user_path if found is not None else None


def test_an_embed_with_its_extension_reaches_the_file(index: LinkIndex) -> None:
    assert reach(index, "Lens/Welcome.md", "paper.pdf") == "Lens/Assets/paper.pdf"
    assert reach(index, "Lens/Welcome.md", "plan.canvas") == "Lens/Boards/plan.canvas"
    assert reach(index, "Lens/Welcome.md", "Data/config.json") == "Lens/Data/config.json"
    assert reach(index, "Lens/Welcome.md", "PAPER.PDF") == "Lens/Assets/paper.pdf"  # case-insensitive
    assert reach(index, "Lens/Welcome.md", "Lens Edu/Media/cell.jpg") == "Lens Edu/Media/cell.jpg"


def test_without_the_extension_a_file_is_not_reached(index: LinkIndex) -> None:
    assert reach(index, "Lens/Welcome.md", "paper") is None
    assert reach(index, "Lens/Welcome.md", "plan") is None


def test_a_note_and_a_canvas_of_the_same_name_each_keep_their_link(index: LinkIndex) -> None:
    assert reach(index, "Lens/Welcome.md", "Ideas") == "Lens/Notes/Ideas.md"
    assert reach(index, "Lens/Welcome.md", "Ideas.canvas") == "Lens/Notes/Ideas.canvas"


def test_obsidian_rules_apply_to_files_relative_first_then_nearest(index: LinkIndex) -> None:
    # Two diagram.png: the one beside the note wins, relative; from the root the shorter path wins.
    assert reach(index, "Lens/Notes/Ideas.md", "diagram.png") == "Lens/Notes/diagram.png"
    found = index.resolve(source=t("Lens/Welcome.md"), target="diagram.png")
    assert found.target is not None and found.ambiguous
    assert reach(index, "Lens/Notes/Ideas.md", "../Assets/diagram.png") == "Lens/Assets/diagram.png"
    assert reach(index, "Lens Edu/Syllabus.md", "cell.jpg") == "Lens Edu/Media/cell.jpg"


def test_moving_an_image_rewrites_its_embeds_and_keeps_size_and_alias(index: LinkIndex) -> None:
    text = "![[paper.pdf]] ![[Assets/paper.pdf#page=3|300]] [[plan.canvas]] ![[Ideas]]\n"
    relocation = Relocation(index, {t("Lens/Assets/paper.pdf"): t("Lens/Library/Papers/paper 2.pdf")})
    moved = apply_edits(text, relocation.edits(text, source=t("Lens/Welcome.md")))
    assert moved == (
        "![[paper 2.pdf]] ![[Library/Papers/paper 2.pdf#page=3|300]] [[plan.canvas]] ![[Ideas]]\n"
    )
    assert [link.embed for link in extract_wikilinks(moved)] == [True, True, False, True]


# -- property: every embed still reaches its file after any move ---------------------------------------

FOLDERS = ["Lens", "Lens Edu"]
DIRECTORIES = ["", "/Notes", "/Assets", "/Assets/Deep"]
FILE_NAMES = [
    "diagram.png",
    "Diagram.PNG",
    "paper.pdf",
    "plan.canvas",
    "data.json",
    "page.html",
    "Ideas.canvas",
]
NOTE_NAMES = ["Ideas.md", "Welcome.md", "diagram.md"]


Case = tuple[list[LinkTarget], dict[LinkTarget, str], dict[LinkTarget, LinkTarget]]


@st.composite
def vault_with_files(
    draw: st.DrawFn, styles: tuple[str, ...] = ("name", "path", "virtual"), names: list[str] = FILE_NAMES
) -> Case:
    chosen: dict[tuple[str, str], LinkTarget] = {}
    for _ in range(draw(st.integers(2, 9))):
        name = draw(st.sampled_from(names + NOTE_NAMES))
        target = LinkTarget(draw(st.sampled_from(FOLDERS)), f"{draw(st.sampled_from(DIRECTORIES))}/{name}")
        chosen.setdefault((target.folder, target.path.lower()), target)
    documents = list(chosen.values())
    notes = [d for d in documents if d.path.endswith(".md")]
    files = [d for d in documents if not d.path.endswith(".md")]
    if not notes or not files:
        notes.append(LinkTarget("Lens", "/Home.md"))
        documents.append(notes[-1])
        files = files or [LinkTarget("Lens", "/Assets/x.png")]
        documents.extend(f for f in files if f not in documents)
    texts: dict[LinkTarget, str] = {}
    for note in notes:
        links = []
        for _ in range(draw(st.integers(1, 4))):
            target = draw(st.sampled_from(files))
            style = draw(st.sampled_from(styles))
            spelled = {
                "name": target.path.rpartition("/")[2],
                "path": target.path[1:] if target.folder == note.folder else target.folder + target.path,
                "virtual": target.folder + target.path,
            }[style]
            links.append(
                f"{draw(st.sampled_from(['!', '']))}[[{spelled}{draw(st.sampled_from(['', '|300']))}]]"
            )
        texts[note] = " ".join(links) + "\n"
    moving = draw(st.sampled_from(files))
    ext = moving.path.rpartition(".")[2]
    new = LinkTarget(
        draw(st.sampled_from(FOLDERS)),
        f"{draw(st.sampled_from(DIRECTORIES))}/{draw(st.sampled_from(['moved', 'Figure 1']))}.{ext}",
    )
    taken = {(d.folder, d.path.lower()) for d in documents}
    return documents, texts, ({moving: new} if (new.folder, new.path.lower()) not in taken else {})


def _reached(index: LinkIndex, source: LinkTarget, text: str) -> list[LinkTarget | None]:
    return [index.resolve(source=source, target=link.target).target for link in extract_wikilinks(text)]


def _move(case: Case) -> tuple[LinkIndex, dict[LinkTarget, str]]:
    """Move, check every link still reaches what it did (embed flag and alias kept), return the result."""
    documents, texts, moves = case
    before = LinkIndex(documents)
    relocation = Relocation(before, moves)
    moved = {s: apply_edits(text, relocation.edits(text, source=s)) for s, text in texts.items()}
    after = LinkIndex(relocation.where(d) for d in documents)
    for source, text in texts.items():
        expected = [moves.get(r, r) if r else None for r in _reached(before, source, text)]
        assert _reached(after, source, moved[source]) == expected, (text, moves)
        assert [(link.embed, link.alias) for link in extract_wikilinks(text)] == [
            (link.embed, link.alias) for link in extract_wikilinks(moved[source])
        ]
    return after, moved


@given(vault_with_files())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_embed_reaches_the_same_file_after_a_move(case: Case) -> None:
    _move(case)


# A path link whose file moves to a folder root reads as a bare name afterwards (as for notes; see
# INVERTIBLE_STYLES in test_relocation.py), and a name differing only by case is spelled as the file is
# named: the round trip is checked on name links to files without case twins.
@given(vault_with_files(("name",), [n for n in FILE_NAMES if n != "Diagram.PNG"]))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_moving_a_file_and_back_restores_every_text(case: Case) -> None:
    _, texts, moves = case
    # Across folders a path link may come back as a bare name (it reaches the file all the same).
    assume(all(old.folder == new.folder for old, new in moves.items()))
    # An ambiguous link is re-spelled unambiguously (still reaching the same file), as for notes.
    before = LinkIndex(case[0])
    assume(
        not any(
            before.resolve(source=source, target=link.target).ambiguous
            for source, text in texts.items()
            for link in extract_wikilinks(text)
        )
    )
    after, moved = _move(case)
    back = Relocation(after, {new: old for old, new in moves.items()})
    restored = {s: apply_edits(text, back.edits(text, source=s)) for s, text in moved.items()}
    assert restored == texts
