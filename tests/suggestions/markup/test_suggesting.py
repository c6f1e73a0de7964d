"""The suggesting rule: a person in suggesting mode changes their own marks and nothing else."""

from __future__ import annotations

import json
import random

import pytest

from suggestions.markup.criticmarkup import parse_changes
from suggestions.markup.suggesting import (
    Readings,
    _typed_in_own_insertion,
    reading,
    suggesting_refusal,
    typed_on_by_author,
)
from tests.suggestions.markup.test_criticmarkup_cases import node_test_counts

SAM, SAM_ID = "sam", 7
UID = "0123456789abcdef"
OTHER_UID = "fedcba9876543210"


def meta(*, author: str = SAM, user: object = SAM_ID, uid: str | None = UID) -> str:
    fields: dict[str, object] = {"author": author, "timestamp": 1700000000000, "user": user}
    if uid is not None:
        fields["id"] = uid
    return json.dumps(fields, separators=(",", ":")) + "@@"


CLAUDE = '{"author":"claude","timestamp":1,"id":"aaaaaaaaaaaaaaaa"}@@'
ASSISTANT = f"{{--{CLAUDE}slow--}}{{++{CLAUDE}quick++}}"
BASE = f"The {ASSISTANT} fox jumps."


def refusal(before: str, after: str) -> str | None:
    return suggesting_refusal(before, after, user_id=SAM_ID, username=SAM)


@pytest.mark.parametrize(
    "after",
    [
        f"The {ASSISTANT} fox{{++{meta()} brown++}} jumps.",  # typing: an insertion
        f"The {ASSISTANT} {{--{meta()}fox--}} jumps.",  # deleting: a deletion
        f"The {ASSISTANT} {{--{meta()}fox--}}{{++{meta()}cat++}} jumps.",  # typing over a word
        f"The {ASSISTANT} fox jumps.{{>>{meta()}why slow?<<}}",  # a comment
        BASE,  # nothing
    ],
    ids=["insert", "delete", "replace", "comment", "unchanged"],
)
def test_own_marks_around_unchanged_text_are_allowed(after: str) -> None:
    assert refusal(BASE, after) is None


def test_typing_and_deleting_inside_ones_own_insertion_is_allowed() -> None:
    before = f"The fox{{++{meta()} brown++}} jumps."
    assert refusal(before, f"The fox{{++{meta()} brownish++}} jumps.") is None
    assert refusal(before, f"The fox{{++{meta()} bro++}} jumps.") is None
    assert refusal(before, "The fox jumps.") is None  # taken back whole


@pytest.mark.parametrize(
    ("after", "words"),
    [
        (f"The {ASSISTANT} fox jumps high.", "text itself"),  # typed into plain text
        (f"The {ASSISTANT} fo jumps.", "text itself"),  # deleted plain text
        ("The fox jumps.", "someone else's"),  # another's suggestion taken away
        (BASE.replace("quick", "quicker"), "someone else's"),  # typed inside another's insertion
        (f"The {ASSISTANT} {{--{meta(author='ana')}fox--}} jumps.", "name you"),  # another name
        (f"The {ASSISTANT} {{--{meta(user=8)}fox--}} jumps.", "someone else's"),  # another person's id
        (f"The {ASSISTANT} {{--{meta(user=True)}fox--}} jumps.", "someone else's"),  # not an id at all
        (f"The {ASSISTANT} {{--{meta(uid=None)}fox--}} jumps.", "id"),
        (f"The {ASSISTANT} {{--{meta(uid='../x')}fox--}} jumps.", "id"),
        (f"The {ASSISTANT} {{--{meta(uid='aaaaaaaaaaaaaaaa')}fox--}} jumps.", "its own"),
        (f"The {ASSISTANT} {{~~{meta()}fox~>cat~~}} jumps.", "insertion or a deletion"),
        (f"The {ASSISTANT} {{++fox++}} jumps.", "someone else's"),  # a mark without metadata
    ],
    ids=[
        "plain-insert",
        "plain-delete",
        "remove-other",
        "inside-other",
        "forged-name",
        "other-user",
        "bool-user",
        "no-id",
        "bad-id",
        "stolen-id",
        "substitution",
        "anonymous-mark",
    ],
)
def test_anything_else_is_refused_saying_why(after: str, words: str) -> None:
    reason = refusal(BASE, after)
    assert reason is not None and words in reason


def test_a_closing_delimiter_typed_inside_ones_insertion_is_refused() -> None:
    before = f"A{{++{meta()}b++}}c"
    # "++}" closes the mark early: the rest would leak into the plain text.
    assert refusal(before, f"A{{++{meta()}b++}}x++}}c") is not None


def test_typed_on_by_author_tells_the_author_typing_on_from_anyone_else() -> None:
    class Row:
        person_id: int | None = SAM_ID

    own = parse_changes(f"x{{++{meta()}more++}}")
    assistant = parse_changes(ASSISTANT)
    assert typed_on_by_author(Row(), own)
    assert not typed_on_by_author(Row(), assistant)
    Row.person_id = None
    assert not typed_on_by_author(Row(), own)


def test_the_editor_plans_keystrokes_the_rule_allows() -> None:
    """The editor's own tests (editor/test/suggesting.test.js) check every planned keystroke with the
    editor's copy of this rule; the browser test then has the server judge them."""
    assert node_test_counts("editor/test/suggesting.test.js") == (8, 0)


def test_the_fast_reading_of_a_keystroke_is_the_full_one() -> None:
    """A keystroke inside one's own insertion is read without parsing the note again: for edits of every
    shape near and inside it, with delimiter characters typed, the verdict and the reading it keeps are
    those of reading the whole note."""
    chooser = random.Random(31)
    own = f"{{++{meta()}abc++}}"
    base = f"x {ASSISTANT} y {own} z{{--{meta(uid='1111111111111111')}q--}} w"
    alphabet = "ab+-}{~>@=<"
    checked = fast = 0
    for _ in range(3000):
        remembered = Readings()
        inside = base.index("abc++}")
        near = chooser.randrange(inside - 3, inside + 7)
        start = chooser.choice([chooser.randrange(len(base) + 1), near, near])
        end = min(len(base), start + chooser.choice([0, 0, 1, 2]))
        typed = "".join(chooser.choice(alphabet) for _ in range(chooser.choice([0, 1, 1, 2, 3])))
        after = base[:start] + typed + base[end:]
        if after == base:
            continue
        full = refusal(base, after)
        quick = suggesting_refusal(base, after, user_id=SAM_ID, username=SAM, read=remembered)
        assert quick == full, (start, end, typed)
        typed_on = _typed_in_own_insertion(base, after, reading(base), SAM_ID)
        if typed_on is not None:
            assert quick is None and typed_on == reading(after), (start, end, typed)
            fast += 1
        if quick is None:
            assert remembered(after) == reading(after), (start, end, typed)
        checked += 1
    assert checked > 2500 and fast > 50
