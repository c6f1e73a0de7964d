"""Names as every record shows them: no invisible character, no separator or bracket in any disguise, and
no two actors alike (the third finding of the third trust round, and hypothesis over any name)."""

from __future__ import annotations

import unicodedata

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from lensrelay.text.names import (
    CLIENT_NAME_LIMIT,
    NAME_LIMIT,
    SEPARATOR,
    NameTaken,
    clean_name,
    name_key,
    unique_name,
)

# What a cleaned name never holds: default-ignorable, format, control, private-use, unassigned and
# line-breaking characters, brackets of every script, and anything drawn as the label's middle dot.
FORBIDDEN = regex.compile(
    r"[\p{Default_Ignorable_Code_Point}\p{Cf}\p{Cc}\p{Co}\p{Cs}\p{Cn}\p{Zl}\p{Zp}\p{Ps}\p{Pe},"
    r"\u00b7\u0387\u2022\u2027\u2219\u22c5\u2e31\u30fb\uff65]"
)
# Characters whose Unicode name says they are a dot between words, for the list in names.py.
DOT_ENDINGS = ("MIDDLE DOT", "ANO TELEIA", "WORD SEPARATOR DOT")
DOT_NAMES = {"DOT OPERATOR", "BULLET", "BULLET OPERATOR", "HYPHENATION POINT", "RAISED DOT"}

# Names made of the characters that matter here as well as any other.
NAMES = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(
            "\u00ad\u034f\u115f\u1160\u17b4\u180e\u200b\u200d\u202e\u2066\u3164\uffa0\ufeff\U000e0001\U000e0041"
            "\u0387\u00b7\u013f\u30fb\uff08\uff09\uff3b\u2045\u2768\u207d\u2474,\uff0c\u3001 ()[]{}#"
        ),
    ),
    max_size=120,
)


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("so\u00adft", "so ft"),  # soft hyphen
        ("tag\U000e0041\U000e0042s", "tag s"),  # the U+E0000 tag characters
        ("han\u3164gul\u115f", "han gul"),  # Hangul fillers
        ("ada \u0387 Claude", "ada Claude"),  # U+0387, whose normal form is the separator
        ("x \uff08token #7\uff09", "x token #7"),  # fullwidth parentheses
        ("\u013fa", "L a"),  # a letter that carries a middle dot
        ("a\u2474b", "a 1 b"),  # a parenthesized digit
        ("root [admin]", "root admin"),
        ("Claude (token #7) · root [admin]", "Claude token #7 root admin"),
        ("a,b\nc\x00d", "a b c d"),
        ("\u202eevil", "evil"),
        ("  \u200b  ", ""),
    ],
)
def test_the_findings_characters_are_gone(name: str, shown: str) -> None:
    assert clean_name(name) == shown


def test_names_are_capped() -> None:
    assert clean_name("x" * 1000) == "x" * NAME_LIMIT
    assert clean_name("y" * 1000, limit=CLIENT_NAME_LIMIT) == "y" * CLIENT_NAME_LIMIT
    assert clean_name("a " * 100)[-1] != " "


def test_every_dot_named_as_a_word_separator_is_cleaned() -> None:
    for code in range(0x110000):
        character = chr(code)
        name = unicodedata.name(character, "")
        dot = (name.endswith(DOT_ENDINGS) and "WITH MIDDLE DOT" not in name) or name in DOT_NAMES
        if dot and not unicodedata.category(character).startswith("L"):
            assert clean_name(f"a{character}b") in ("a b", "ab"), (hex(code), name)


@settings(max_examples=400, deadline=None)
@given(NAMES)
def test_a_cleaned_name_holds_nothing_invisible_nor_a_separator_nor_a_bracket(name: str) -> None:
    cleaned = clean_name(name)
    assert not FORBIDDEN.search(cleaned), ascii(cleaned)
    assert not FORBIDDEN.search(unicodedata.normalize("NFKC", cleaned)), ascii(cleaned)
    assert len(cleaned) <= NAME_LIMIT and cleaned == cleaned.strip() and "  " not in cleaned
    assert clean_name(cleaned) == cleaned  # stable: showing it again changes nothing


@settings(max_examples=300, deadline=None)
@given(NAMES, st.lists(NAMES, max_size=12))
def test_a_unique_name_never_reads_like_an_existing_label(name: str, others: list[str]) -> None:
    existing = {name_key(other) for other in others if clean_name(other)}
    existing.add(name_key(name))  # the name itself is always taken here
    chosen = unique_name(name, taken=lambda candidate: name_key(candidate) in existing)
    assert name_key(chosen) not in existing
    assert not FORBIDDEN.search(chosen) and len(chosen) <= NAME_LIMIT
    # A label built from it holds exactly one separator and one pair of parentheses: its own.
    label = f"{chosen}{SEPARATOR}Claude (token #7)"
    assert label.count("·") == 1 and label.count("(") == 1


def test_numbering_gives_up_with_a_clear_refusal() -> None:
    with pytest.raises(NameTaken, match="choose another name"):
        unique_name("bot", taken=lambda candidate: True)
