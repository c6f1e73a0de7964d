"""Spellings of one name: every spelling of `_trash` is the reserved trash, and folder names differing only
by spelling collide. The spellings are generated: letter case, Unicode compatibility forms (fullwidth,
mathematical, circled letters, ...), decomposed forms, invisible format characters, percent-encoding
(once or twice), trailing dots and spaces."""

from __future__ import annotations

import unicodedata
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lensrelay.models import Folder
from lensrelay.text.vaultpath import (
    FolderPaths,
    InvalidPath,
    folder_name_key,
    names_trash,
    validate_relative_path,
)
from lensrelay.vault.folders import FolderNameTaken, folder_create, folder_name_clash

INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\u00ad"]


@cache
def _folded_to() -> dict[str, tuple[str, ...]]:
    found: dict[str, list[str]] = {}
    for cp in range(0x20000):
        if not 0xD800 <= cp <= 0xDFFF:
            found.setdefault(unicodedata.normalize("NFKC", chr(cp)).casefold(), []).append(chr(cp))
    return {folded: tuple(chars) for folded, chars in found.items()}


def look_alikes(char: str) -> tuple[str, ...]:
    """Every character that is `char` once NFKC-normalised and case-folded (its case twin included)."""
    return _folded_to().get(char, ())


def percent_encode(text: str, which: list[bool]) -> str:
    """`text` with the characters `which` names percent-encoded. A combining mark after an encoded
    character is encoded with it: left bare, it would compose with the escape's last hex digit when the
    name is normalised (`%AE` + U+0301 is `%AÉ`), making another name, not a spelling of this one."""
    out = []
    encoded = False
    for char, encode in zip(text, which + [False] * len(text), strict=False):
        encoded = encode or (encoded and unicodedata.combining(char) != 0)
        out.append("".join(f"%{b:02X}" for b in char.encode()) if encoded else char)
    return "".join(out)


@st.composite
def spellings(draw: st.DrawFn, name: str) -> str:
    """A spelling of `name` (NFC, no '%' or '/') that should count as the same name."""
    chars = []
    for char in unicodedata.normalize("NFD", name) if draw(st.booleans()) else name:
        twins = look_alikes(char.casefold()) if len(char.casefold()) == 1 else ()
        chars.append(draw(st.sampled_from(twins)) if twins else char)
        if draw(st.integers(0, 5)) == 0:
            chars.append(draw(st.sampled_from(INVISIBLE)))
    spelled = "".join(chars) + draw(st.text(alphabet=". ", max_size=3))
    if draw(st.booleans()):
        spelled = percent_encode(spelled, draw(st.lists(st.booleans(), max_size=len(spelled))))
        if draw(st.booleans()):
            spelled = spelled.replace("%", "%25")  # encoded twice
    return spelled


# -- the trash -------------------------------------------------------------------------------------------


@given(spelled=spellings("_trash"), rest=st.sampled_from(["", "/x.md", "/Notes/Deep/x.md", "/_trash"]))
@settings(max_examples=400, deadline=None)
def test_every_spelling_of_the_trash_is_reserved(spelled: str, rest: str) -> None:
    path = f"/{spelled}{rest}"
    assert names_trash(path), path
    assert names_trash(spelled)
    try:
        validate_relative_path(path)
    except InvalidPath:
        return  # refused by the path rules already
    with pytest.raises(InvalidPath, match="reserved"):
        FolderPaths().check(path)
    if path != "/_trash" and not path.startswith("/_trash/"):
        # Not even the mirror, where the trash lives, admits another spelling of it.
        with pytest.raises(InvalidPath, match="reserved"):
            FolderPaths().check(path, trash=True)


@pytest.mark.parametrize(
    "path",
    ["/_TRASH/x.md", "/_Trash", "/_\uff34\uff32\uff21\uff33\uff28/x.md", "/%5Ftrash/x.md", "/_trash./x.md"],
)
def test_the_spellings_of_the_findings_are_reserved(path: str) -> None:
    assert names_trash(path)
    with pytest.raises(InvalidPath, match="'_trash' is reserved for it in every spelling"):
        FolderPaths().check(path, trash=True)


@pytest.mark.parametrize(
    "path",
    [
        "/trash/x.md",
        "/_trashy/x.md",
        "/_trash.md",
        "/_tras/x.md",
        "/Notes/_trash/x.md",
        "/__trash",
        "/ _trash",
    ],
)
def test_other_names_are_not_the_trash(path: str) -> None:
    assert not names_trash(path)
    FolderPaths().check(path)


def test_the_trash_itself_is_admitted_only_where_it_lives() -> None:
    assert FolderPaths().check("/_trash/Notes/x.md", trash=True) == "/_trash/Notes/x.md"
    with pytest.raises(InvalidPath, match="reserved"):
        FolderPaths().check("/_trash/Notes/x.md")


# -- folder names ----------------------------------------------------------------------------------------

BASES = ["Secret", "Café", "Straße", "Ångström Notes", "Lens Edu", "ﬁles", "Ελληνικά", "naïve 2"]


@given(data=st.data(), base=st.sampled_from(BASES))
@settings(max_examples=300, deadline=None)
def test_spellings_of_a_folder_name_fold_to_one_key(data: st.DataObject, base: str) -> None:
    spelled = data.draw(spellings(base))
    assert folder_name_key(spelled) == folder_name_key(base), (spelled, base)


@pytest.mark.django_db
@given(data=st.data(), base=st.sampled_from(BASES))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_folder_named_as_another_but_for_spelling_is_refused(data: st.DataObject, base: str) -> None:
    spelled = data.draw(spellings(base))
    Folder.objects.all().delete()
    folder_create(name=base)
    if spelled.strip() == base:
        assert folder_name_clash(name=spelled) == f"A folder named {base} already exists."
    else:
        assert f"A folder named {base} already exists, and " in (folder_name_clash(name=spelled) or "")
    try:
        with pytest.raises(FolderNameTaken):
            folder_create(name=spelled)
    except InvalidPath:
        pass  # a spelling the path rules refuse anyway (a leading dot once decoded is not one of them)
    assert list(Folder.objects.values_list("name", flat=True)) == [base]


@pytest.mark.parametrize(("one", "other"), [("Secret", "Public"), ("Café", "Cafe"), ("Notes", "Notes 2")])
def test_different_folder_names_do_not_collide(one: str, other: str) -> None:
    assert folder_name_key(one) != folder_name_key(other)


def test_an_encoded_letter_takes_its_combining_accent_into_the_escape() -> None:
    # Found by the folder test above: "%AE" + U+0301 normalised is "%AÉ", another name altogether.
    spelled = percent_encode("CAF\U0001d4ee\u0301", [False, False, False, True])
    assert spelled == "CAF%F0%9D%93%AE%CC%81"
    assert folder_name_key(spelled) == folder_name_key("Café")
