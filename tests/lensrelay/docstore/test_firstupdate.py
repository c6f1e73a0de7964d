"""The directly encoded first update of a text document is exactly what pycrdt encodes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pycrdt import Doc, Text

from lensrelay.docstore.firstupdate import text_update

# Every code point a UTF-8 file can hold (no lone surrogates), short and long texts, small and large ids.
texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=300) | st.sampled_from(
    ["", "a", "é" * 5000, "😀\n" * 3000, "x" * 70_000]
)
client_ids = st.integers(min_value=0, max_value=2**53 - 1)


def pycrdt_update(text: str, client_id: int, name: str = "contents") -> bytes:
    doc: Doc[Any] = Doc(client_id=client_id)
    doc.get(name, type=Text).insert(0, text)
    return doc.get_update()


@settings(max_examples=300, deadline=None)
@given(text=texts, client_id=client_ids)
def test_the_update_is_byte_for_byte_pycrdts(text: str, client_id: int) -> None:
    assert text_update(text, client_id=client_id) == pycrdt_update(text, client_id)


@settings(max_examples=50, deadline=None)
@given(text=texts, name=st.sampled_from(["contents", "t", "é" * 200]))
def test_the_update_makes_the_text_and_accepts_later_edits(text: str, name: str) -> None:
    doc: Doc[Any] = Doc()
    doc.apply_update(text_update(text, name=name))
    ytext = doc.get(name, type=Text)
    assert str(ytext) == text
    ytext.insert(len(text.encode()), "!")
    other: Doc[Any] = Doc()
    other.apply_update(doc.get_update())
    assert str(other.get(name, type=Text)) == text + "!"


def test_each_update_has_its_own_client() -> None:
    ids = {text_update("x")[2:10] for _ in range(50)}
    assert len(ids) > 45
