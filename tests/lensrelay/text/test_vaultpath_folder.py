"""The one path validator: generated names, and new paths checked against a folder's entries."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lensrelay.text.vaultpath import (
    FolderPaths,
    InvalidPath,
    fold_key,
    normalize_path,
    validate_relative_path,
)

FORBIDDEN = {chr(c) for c in [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, 0xFEFF]}
FORBIDDEN |= {chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]}

# Names drawn from everything, with the awkward characters made likely.
awkward = st.sampled_from(
    sorted(FORBIDDEN | {".", "/", "\\", "e\u0301", "\u00e9", "\udc80", "ß", "İ", "\u0131", " "})
)
names = st.lists(st.one_of(st.characters(), awkward), min_size=0, max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(names)
def test_a_generated_name_is_accepted_unchanged_or_refused_with_invalid_path(name: str) -> None:
    path = "/" + name
    try:
        assert validate_relative_path(path) == path
    except InvalidPath as exc:
        assert str(exc)  # a reason, never an empty message
        return
    segments = path[1:].split("/")
    assert all(s and not s.startswith(".") for s in segments)
    assert not (set(path) & FORBIDDEN) and "\\" not in path
    assert unicodedata.is_normalized("NFC", path)
    assert not any("\ud800" <= ch <= "\udfff" for ch in path)


@settings(max_examples=300, deadline=None)
@given(st.lists(names, min_size=1, max_size=25))
def test_accepted_entries_never_collide_or_nest_under_a_document(raw: list[str]) -> None:
    folder = FolderPaths()
    accepted: list[tuple[str, str]] = []
    for number, name in enumerate(raw):
        path = "/" + name
        kind = "folder" if number % 3 == 0 else "markdown"
        try:
            folder.check(path, type=kind)
        except InvalidPath:
            continue
        folder.add(path, kind)
        accepted.append((path, kind))
    keys = [fold_key(path) for path, _ in accepted]
    assert len(keys) == len(set(keys)), accepted
    documents = {fold_key(path) for path, kind in accepted if kind != "folder"}
    for key in keys:
        parts = key.split("/")
        assert not any("/".join(parts[:end]) in documents for end in range(2, len(parts))), accepted


@settings(max_examples=200, deadline=None)
@given(names)
@example("\u0131")  # the dotless i: its upper case is I, whose folded form is i (found by CI on 2026-11-30)
@example("İ")
def test_case_and_normalisation_variants_of_an_entry_are_refused(name: str) -> None:
    path = "/" + name
    try:
        validate_relative_path(path)
    except InvalidPath:
        return
    folder = FolderPaths([(path, "markdown")])
    for variant in {path.upper(), path.lower(), path.swapcase(), normalize_path(path).casefold()}:
        try:
            validate_relative_path(variant)
        except InvalidPath:
            continue  # refused for its own sake (upper() may leave NFC, for instance)
        with pytest.raises(InvalidPath, match=r"already exists|only by letter case"):
            folder.check(variant)


def test_no_path_under_a_document_nor_a_document_over_a_folder() -> None:
    folder = FolderPaths([("/Index.md", "markdown"), ("/Notes", "folder"), ("/Notes/A.md", "markdown")])
    with pytest.raises(InvalidPath, match=r"inside the document '/Index\.md'"):
        folder.check("/Index.md/x.md")
    with pytest.raises(InvalidPath, match=r"inside the document '/Index\.md'"):
        folder.check("/index.MD/deeper/x.md")
    with pytest.raises(InvalidPath, match="already exists"):
        folder.check("/Notes/A.md")
    with pytest.raises(InvalidPath, match="only by letter case"):
        folder.check("/notes/a.md")
    with pytest.raises(InvalidPath, match="only by letter case"):
        folder.check("/NOTES", type="folder")
    undeclared = FolderPaths([("/Deep/Down/x.md", "markdown")])  # Relay need not list sub-folders
    with pytest.raises(InvalidPath, match="a folder that holds other entries"):
        undeclared.check("/Deep/Down")
    assert undeclared.check("/Deep/Down", type="folder") == "/Deep/Down"
    assert folder.check("/Notes/B.md") == "/Notes/B.md"
    assert folder.check("/Index.md.d/x.md") == "/Index.md.d/x.md"


def test_a_rename_may_change_only_the_case_of_its_own_name() -> None:
    folder = FolderPaths([("/Ideas.md", "markdown"), ("/Other.md", "markdown")])
    assert folder.check("/IDEAS.md", replacing="/Ideas.md") == "/IDEAS.md"
    with pytest.raises(InvalidPath, match="only by letter case"):
        folder.check("/other.md", replacing="/Ideas.md")
    assert folder.check("/Ideas.md/x.md", replacing="/Ideas.md") == "/Ideas.md/x.md"


def test_unicode_normalisation_forms_collide() -> None:
    folder = FolderPaths([("/Caf\u00e9.md", "markdown")])
    with pytest.raises(InvalidPath, match="only by letter case or Unicode normalisation"):
        folder.check("/CAF\u00c9.md")
    with pytest.raises(InvalidPath, match="not NFC-normalised"):
        folder.check("/Cafe\u0301.md")
