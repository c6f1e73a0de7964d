"""Relocation: every link keeps pointing where it pointed when documents or whole sub-folders move."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lensrelay.links.resolve import LinkIndex, LinkTarget
from lensrelay.links.rewrite import Relocation, apply_edits
from lensrelay.text.wikilinks import extract_wikilinks
from tests.lensrelay.links.test_resolve import t

VAULT = [
    "Lens/Welcome.md",
    "Lens/Notes/Ideas.md",
    "Lens/Notes/Plans.md",
    "Lens/Notes/Deep/Dive.md",
    "Lens/Projects/Alpha.md",
    "Lens Edu/Syllabus.md",
    "Lens Edu/Week 1/Cell Theory.md",
]


@pytest.fixture
def index() -> LinkIndex:
    return LinkIndex(t(p) for p in VAULT)


def relocate(index: LinkIndex, moves: dict[str, str], texts: dict[str, str]) -> dict[str, str]:
    relocation = Relocation(index, {t(old): t(new) for old, new in moves.items()})
    return {path: apply_edits(text, relocation.edits(text, source=t(path))) for path, text in texts.items()}


def test_a_moved_notes_own_relative_links_are_re_relativised(index: LinkIndex) -> None:
    text = "[[../Welcome]] [[./Plans#Goal|plans]] [[Deep/Dive]] [[../Projects/Alpha]]\n"
    moved = relocate(index, {"Lens/Notes/Ideas.md": "Lens/Ideas.md"}, {"Lens/Notes/Ideas.md": text})
    assert moved["Lens/Notes/Ideas.md"] == (
        "[[./Welcome]] [[./Notes/Plans#Goal|plans]] [[Notes/Deep/Dive]] [[./Projects/Alpha]]\n"
    )


def test_a_folder_rename_rewrites_links_in_and_out_keeping_anchors_and_aliases(index: LinkIndex) -> None:
    texts = {
        "Lens/Welcome.md": "[[Notes/Ideas#Top|ideas]] ![[Notes/Deep/Dive]] [[./Notes/Plans]] [[Ideas]]",
        "Lens/Notes/Ideas.md": "[[../Welcome#Hi]] [[./Plans]] [[Deep/Dive|dive]] [[../Projects/Alpha]]",
        "Lens/Notes/Deep/Dive.md": "[[../../Welcome]] [[../Ideas]]",
        "Lens Edu/Syllabus.md": "[[Lens/Notes/Ideas]] [[../Lens/Notes/Plans|p]]",
    }
    moves = {
        "Lens/Notes/Ideas.md": "Lens/Archive/Old Notes/Ideas.md",
        "Lens/Notes/Plans.md": "Lens/Archive/Old Notes/Plans.md",
        "Lens/Notes/Deep/Dive.md": "Lens/Archive/Old Notes/Deep/Dive.md",
    }
    after = relocate(index, moves, texts)
    assert after == {
        "Lens/Welcome.md": (
            "[[Archive/Old Notes/Ideas#Top|ideas]] ![[Archive/Old Notes/Deep/Dive]] "
            "[[./Archive/Old Notes/Plans]] [[Ideas]]"
        ),
        # Links among the moved notes already fit; links out climb one level more.
        "Lens/Notes/Ideas.md": "[[../../Welcome#Hi]] [[./Plans]] [[Deep/Dive|dive]] [[../../Projects/Alpha]]",
        "Lens/Notes/Deep/Dive.md": "[[../../../Welcome]] [[../Ideas]]",
        "Lens Edu/Syllabus.md": "[[Lens/Archive/Old Notes/Ideas]] [[../Lens/Archive/Old Notes/Plans|p]]",
    }


def test_cross_folder_move_spells_relative_links_through_the_vault_root(index: LinkIndex) -> None:
    texts = {
        "Lens/Notes/Ideas.md": "[[../Welcome]] [[./Plans]] [[Syllabus]]",
        "Lens/Welcome.md": "[[./Notes/Ideas]] [[Notes/Ideas]]",
    }
    after = relocate(index, {"Lens/Notes/Ideas.md": "Lens Edu/Week 1/Ideas.md"}, texts)
    assert after == {
        "Lens/Notes/Ideas.md": "[[../../Lens/Welcome]] [[../../Lens/Notes/Plans]] [[Syllabus]]",
        "Lens/Welcome.md": "[[../Lens Edu/Week 1/Ideas]] [[Lens Edu/Week 1/Ideas]]",
    }


def test_a_link_a_moved_note_would_capture_is_pinned(index: LinkIndex) -> None:
    # From Lens/Projects/Alpha.md, [[Syllabus]] reaches Lens Edu by basename; a Syllabus arriving in
    # Lens's own folder would win, so the link is pinned to the one it meant.
    texts = {"Lens/Projects/Alpha.md": "[[Syllabus]] [[Welcome]]"}
    after = relocate(index, {"Lens/Notes/Plans.md": "Lens/Projects/Syllabus.md"}, texts)
    assert after == {"Lens/Projects/Alpha.md": "[[Lens Edu/Syllabus]] [[Welcome]]"}


def test_links_between_documents_that_stay_are_left_as_written(index: LinkIndex) -> None:
    text = "[[../Welcome]] [[ welcome ]] [[/Notes/Plans.MD]] [[Missing]] [[#Local]] `[[Ideas]]`"
    after = relocate(index, {"Lens/Projects/Alpha.md": "Lens/Beta.md"}, {"Lens/Notes/Ideas.md": text})
    assert after == {"Lens/Notes/Ideas.md": text}


# -- generated vaults ----------------------------------------------------------------------------------

FOLDERS = ("Lens", "Lens Edu")
DIRECTORIES = ("", "/Notes", "/Notes/Deep", "/Projects", "/Café ☕")
NAMES = ("Ideas", "Plans", "Welcome", "Cell Theory", "光合作用", "Überblick", "Alpha", "Beta")


ALL_STYLES = ("relative", "path", "name", "absolute", "virtual")
# A path from the folder root ("Notes/Ideas") moved to the root becomes a bare name ("Ideas"), which
# moved back cannot be told from a link written as a bare name: it comes back as "Ideas". And
# "Lens/Ideas" written inside Lens, moved into another folder and back, cannot be told from a link
# that had to name the folder: it comes back as "Ideas" too.
INVERTIBLE_STYLES = ("relative", "name", "absolute")


@st.composite
def vaults(
    draw: st.DrawFn, styles: tuple[str, ...] = ALL_STYLES
) -> tuple[list[LinkTarget], dict[LinkTarget, str]]:
    """Documents with unique names, each linking to others in the given styles (links into another
    folder name it: "Lens Edu/Syllabus")."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=2, max_size=len(NAMES), unique=True))
    documents = [
        LinkTarget(draw(st.sampled_from(FOLDERS)), f"{draw(st.sampled_from(DIRECTORIES))}/{name}.md")
        for name in names
    ]
    index = LinkIndex(documents)
    texts: dict[LinkTarget, str] = {}
    for source in documents:
        links = []
        for target in draw(st.lists(st.sampled_from(documents), max_size=6)):
            style = draw(st.sampled_from(styles))
            spelling = _spelling(source, target, style)
            if index.resolve(source=source, target=spelling).target != target:
                continue  # an author would not have written a link that misses
            heading = draw(st.sampled_from(["", "#Top", "#^block"]))
            alias = draw(st.sampled_from(["", "|alias", "|☕ text"]))
            links.append(f"{draw(st.sampled_from(['', '!']))}[[{spelling}{heading}{alias}]]")
        texts[source] = " and ".join(links) + "\n"
    return documents, texts


def _spelling(source: LinkTarget, target: LinkTarget, style: str) -> str:
    bare = target.path[:-3]
    if style == "relative":
        up = [source.folder, *source.path.split("/")[1:-1]]
        down = [target.folder, *bare.split("/")[1:]]
        common = 0
        while common < len(up) and common < len(down) - 1 and up[common] == down[common]:
            common += 1
        ups = len(up) - common
        rest = "/".join(down[common:])
        return "../" * ups + rest if ups else "./" + rest
    if style == "name":
        return bare.rpartition("/")[2]
    from_root = bare[1:] if target.folder == source.folder and style != "virtual" else target.folder + bare
    return "/" + from_root if style == "absolute" else from_root


@st.composite
def vault_and_move(
    draw: st.DrawFn, styles: tuple[str, ...] = ALL_STYLES
) -> tuple[list[LinkTarget], dict[LinkTarget, str], dict[LinkTarget, LinkTarget]]:
    documents, texts = draw(vaults(styles))
    taken = {(d.folder, d.path.lower()) for d in documents}
    if draw(st.booleans()):  # one document, anywhere
        moving = draw(st.sampled_from(documents))
        name = moving.path.rpartition("/")[2]
        new = LinkTarget(draw(st.sampled_from(FOLDERS)), f"{draw(st.sampled_from(DIRECTORIES))}/{name}")
        moves = {moving: new} if (new.folder, new.path.lower()) not in taken else {}
    else:  # a sub-folder and everything under it, renamed or moved into another folder
        old_dir = draw(st.sampled_from(DIRECTORIES[1:]))
        folder = draw(st.sampled_from(FOLDERS))
        new_dir = draw(st.sampled_from(["/Archive", "/Archive/Old", "/Notes/Deep/Deeper"]))
        into = draw(st.sampled_from(FOLDERS))
        moves = {
            d: LinkTarget(into, new_dir + d.path[len(old_dir) :])
            for d in documents
            if d.folder == folder and d.path.startswith(old_dir + "/")
        }
        if into == folder and (new_dir + "/").startswith(old_dir + "/"):
            moves = {}  # into itself: refused before links are looked at
        staying = {(d.folder, d.path.lower()) for d in documents if d not in moves}
        if any((n.folder, n.path.lower()) in staying for n in moves.values()):
            moves = {}
    return documents, texts, moves


def _resolutions(index: LinkIndex, source: LinkTarget, text: str) -> list[LinkTarget | None]:
    return [index.resolve(source=source, target=link.target).target for link in extract_wikilinks(text)]


def _move(
    documents: list[LinkTarget], texts: dict[LinkTarget, str], moves: dict[LinkTarget, LinkTarget]
) -> tuple[list[LinkTarget], dict[LinkTarget, str]]:
    relocation = Relocation(LinkIndex(documents), moves)
    moved_texts = {
        relocation.where(source): apply_edits(text, relocation.edits(text, source=source))
        for source, text in texts.items()
    }
    return [relocation.where(d) for d in documents], moved_texts


@given(vault_and_move())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_link_still_reaches_the_same_document_after_a_move(case) -> None:
    documents, texts, moves = case
    before = LinkIndex(documents)
    moved_documents, moved_texts = _move(documents, texts, moves)
    after = LinkIndex(moved_documents)
    for source, text in texts.items():
        new_source = moves.get(source, source)
        expected = [
            moves.get(target, target) if target else None for target in _resolutions(before, source, text)
        ]
        assert _resolutions(after, new_source, moved_texts[new_source]) == expected, (source, text, moves)
        # only targets change: headings, aliases and embeds are kept
        old_links = extract_wikilinks(text)
        new_links = extract_wikilinks(moved_texts[new_source])
        assert [(link.heading, link.alias, link.embed) for link in old_links] == [
            (link.heading, link.alias, link.embed) for link in new_links
        ]


@given(vault_and_move(INVERTIBLE_STYLES))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_moving_and_moving_back_restores_every_text(case) -> None:
    documents, texts, moves = case
    moved_documents, moved_texts = _move(documents, texts, moves)
    back = {new: old for old, new in moves.items()}
    restored_documents, restored_texts = _move(moved_documents, moved_texts, back)
    assert sorted(restored_documents, key=str) == sorted(documents, key=str)
    assert restored_texts == texts


def test_a_partial_path_keeps_its_shape(index: LinkIndex) -> None:
    # "Deep/Dive" from the root reaches /Notes/Deep/Dive.md by its path's end, as Obsidian writes it.
    texts = {"Lens/Welcome.md": "[[Deep/Dive]]"}
    assert relocate(index, {"Lens/Notes/Deep/Dive.md": "Lens/Projects/Deep/Dive.md"}, texts) == texts
    moved = relocate(index, {"Lens/Notes/Deep/Dive.md": "Lens/Archive/Deeper/Dive.md"}, texts)
    assert moved == {"Lens/Welcome.md": "[[Deeper/Dive]]"}
    assert relocate(index, {"Lens/Notes/Deep/Dive.md": "Lens Edu/Dive.md"}, texts) == {
        "Lens/Welcome.md": "[[Dive]]"
    }
