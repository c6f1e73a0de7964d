"""The restore edit is the smallest diff, exact on any text (emoji, CJK, accents), never a whole rewrite."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pycrdt import Doc, Text

from lensrelay.history.textedits import text_apply_edits, text_edits

ALPHABET = st.sampled_from(list("ab \n😀中é"))


def applied(current: str, target: str) -> str:
    doc: Doc[Any] = Doc()
    ytext = doc.get("contents", type=Text)
    ytext.insert(0, current)
    with doc.transaction():
        result = text_apply_edits(ytext, current=current, edits=text_edits(current, target))
    assert result == target
    return str(ytext)


@given(current=st.text(ALPHABET, max_size=40), target=st.text(ALPHABET, max_size=40))
def test_any_text_becomes_the_target(current: str, target: str) -> None:
    assert applied(current, target) == target


def test_a_one_word_change_in_a_long_text_touches_only_that_word() -> None:
    current = "intro 😀\n" + "same line 中文\n" * 200 + "the old word\n" + "tail é\n" * 50
    target = current.replace("old", "new")
    edits = text_edits(current, target)
    assert sum(e.end - e.start for e in edits) <= 3
    assert "".join(e.value for e in edits) in ("new", "ne", "n", "w", "ew")
    assert applied(current, target) == target


def test_identical_texts_need_no_edit() -> None:
    assert text_edits("a😀b", "a😀b") == []


def test_kept_characters_keep_their_identity_for_a_concurrent_client() -> None:
    """A client's edit made concurrently in an unchanged part survives the restore's merge."""
    server: Doc[Any] = Doc()
    text = server.get("contents", type=Text)
    text.insert(0, "keep this line\nold ending\n")
    client: Doc[Any] = Doc()
    client.apply_update(server.get_update())
    client_text = client.get("contents", type=Text)
    client_text.insert(len(b"keep"), " 😀")  # typed while the restore happens
    current = str(text)
    with server.transaction():
        text_apply_edits(text, current=current, edits=text_edits(current, "keep this line\nnew ending\n"))
    server.apply_update(client.get_update(server.get_state()))
    assert str(text) == "keep 😀 this line\nnew ending\n"
