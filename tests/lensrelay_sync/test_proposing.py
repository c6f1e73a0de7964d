"""What a `suggest` token's save asks for: the note, every suggestion accepted, as the save leaves it."""

from __future__ import annotations

from lensrelay_sync.proposing import proposed_text

MARKED = 'The {--quick--}{++{"author":"ada","id":"a1"}@@slow++} fox.\n'


def test_a_save_asks_for_the_accepted_text_with_its_change() -> None:
    saved = MARKED.replace("fox.", "fox jumps.")
    assert proposed_text(base=MARKED, saved=saved, current=MARKED) == "The slow fox jumps.\n"


def test_a_save_carried_onto_what_others_typed_meanwhile_keeps_their_text() -> None:
    current = "Before. " + MARKED
    saved = MARKED.replace("fox.", "fox jumps.")
    assert proposed_text(base=MARKED, saved=saved, current=current) == "Before. The slow fox jumps.\n"


def test_changing_only_the_marks_asks_for_nothing() -> None:
    forged = MARKED.replace('"author":"ada"', '"author":"me"')
    assert proposed_text(base=MARKED, saved=forged, current=MARKED) is None


def test_what_is_asked_for_holds_no_markup_of_others() -> None:
    # A deletion taken back by hand reads as the text before it: asked for as such, plainly.
    saved = MARKED.replace('{--quick--}{++{"author":"ada","id":"a1"}@@slow++}', "quick")
    wanted = proposed_text(base=MARKED, saved=saved, current=MARKED)
    assert wanted == "The quick fox.\n" and "{" not in wanted
