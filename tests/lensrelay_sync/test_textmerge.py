"""The smallest edit between two texts, and a local edit carried onto a document that changed meanwhile:
exact on examples, and held by properties (hypothesis) to what a Yjs merge of the same edits gives."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pycrdt import Doc, Text

from lensrelay_sync.link import apply_ops as apply_to_ytext
from lensrelay_sync.textmerge import (
    Hunk,
    Op,
    apply_hunks,
    apply_ops,
    base_of_save,
    edit_size,
    rebase,
    text_edits,
)

# Multi-byte text everywhere: pycrdt counts UTF-8 bytes, Python code points, JavaScript UTF-16 units.
ALPHABET = st.sampled_from(list("ab \n😀中é"))
texts = st.text(ALPHABET, max_size=60)


def test_one_typed_word_is_one_insertion() -> None:
    assert text_edits("The fox.\n", "The red fox.\n") == [Hunk(4, 4, "red ")]
    assert text_edits("same", "same") == []
    assert text_edits("a😀b", "a😀中b") == [Hunk(2, 2, "中")]


def test_edits_far_apart_stay_apart_so_the_text_between_keeps_its_identity() -> None:
    old = "".join(f"Line {n} is here.\n" for n in range(40))
    new = old.replace("Line 3 is", "Line three is").replace("Line 30 is", "Line thirty is")
    hunks = text_edits(old, new)
    assert [h.text for h in hunks] == ["three", "thirty"]
    assert apply_hunks(old, hunks) == new


def test_a_local_edit_lands_where_its_text_went_after_an_edit_elsewhere() -> None:
    base = "# Plan\n\nAlpha beta.\nGamma delta.\n"
    local = "# Plan\n\nAlpha beta gamma.\nGamma delta.\n"
    current = "# Plan 😀\n\nAlpha beta.\nGamma delta epsilon.\n"
    merged = apply_ops(current, rebase(base, local, current))
    assert merged == "# Plan 😀\n\nAlpha beta gamma.\nGamma delta epsilon.\n"


def test_what_the_other_side_typed_inside_a_replaced_stretch_stays() -> None:
    base = "one two three"
    local = "one 2 three"  # "two" replaced
    current = "one twXo three"  # someone typed inside "two"
    merged = apply_ops(current, rebase(base, local, current))
    assert "X" in merged and "2" in merged and merged.startswith("one ") and merged.endswith(" three")
    assert "tw" not in merged and "o t" not in merged.replace("one t", "")


def test_with_no_change_elsewhere_the_rebase_is_the_smallest_edit() -> None:
    assert rebase("abc", "aXbc", "abc") == [Op(1, 0, "X")]
    assert rebase("abc", "abc", "zzz") == []


@given(texts, texts)
def test_the_hunks_turn_old_into_new(old: str, new: str) -> None:
    hunks = text_edits(old, new)
    assert apply_hunks(old, hunks) == new
    ends = [0]
    for hunk in hunks:
        assert ends[-1] <= hunk.start <= hunk.end <= len(old)
        ends.append(hunk.end)


@given(texts, texts, texts)
def test_one_insertion_is_found_as_one_insertion(before: str, typed: str, after: str) -> None:
    hunks = text_edits(before + after, before + typed + after)
    assert sum(h.end - h.start for h in hunks) == 0
    assert sum(len(h.text) for h in hunks) == len(typed)


@given(texts, texts)
def test_rebase_onto_an_unchanged_document_gives_the_local_text(base: str, local: str) -> None:
    assert apply_ops(base, rebase(base, local, base)) == local
    assert rebase(base, base, local) == []


@given(texts, texts, texts)
def test_nothing_either_side_inserted_is_lost(base: str, local: str, current: str) -> None:
    merged = apply_ops(current, rebase(base, local, current))
    for hunk in text_edits(base, current):
        assert hunk.text in merged
    for hunk in text_edits(base, local):
        assert hunk.text in merged


def _lines(n: int) -> list[str]:
    return [f"line {i} 😀\n" for i in range(n)]


@given(
    st.integers(4, 30).flatmap(
        lambda n: st.tuples(
            st.just(n), st.integers(0, n - 1), st.integers(0, n - 1), texts.filter(lambda t: "line" not in t)
        )
    ),
    texts.filter(lambda t: "line" not in t),
)
def test_edits_on_different_lines_merge_as_yjs_merges_them(
    case: tuple[int, int, int, str], other: str
) -> None:
    n, mine, theirs, typed = case
    if abs(mine - theirs) < 2:
        return
    lines = _lines(n)
    base = "".join(lines)
    local = "".join(typed + line if i == mine else line for i, line in enumerate(lines))
    current = "".join(line.replace("😀", other) if i == theirs else line for i, line in enumerate(lines))
    ours = apply_ops(current, rebase(base, local, current))

    # The same two edits made concurrently by two Yjs clients from the same base.
    origin: Doc[Any] = Doc()
    origin.get("contents", type=Text).insert(0, base)
    seed = origin.get_update()
    a: Doc[Any] = Doc()
    b: Doc[Any] = Doc()
    a.apply_update(seed)
    b.apply_update(seed)
    apply_to_ytext(a.get("contents", type=Text), base, rebase(base, local, base))
    apply_to_ytext(b.get("contents", type=Text), base, rebase(base, current, base))
    a.apply_update(b.get_update(a.get_state()))
    assert str(a.get("contents", type=Text)) == ours


@settings(max_examples=200)
@given(texts, texts, texts)
def test_the_ops_apply_to_a_pycrdt_text_at_the_right_places(base: str, local: str, current: str) -> None:
    ops = rebase(base, local, current)
    doc: Doc[Any] = Doc()
    text = doc.get("contents", type=Text)
    text.insert(0, current)
    apply_to_ytext(text, current, ops)
    assert str(text) == apply_ops(current, ops)


def test_a_save_from_the_text_before_our_write_is_taken_as_an_edit_of_that_text() -> None:
    replaced = "# Plan\n\nStep one.\n"
    written = "# Plan\n\nStep one. typed elsewhere\n"
    stale = replaced + "saved on disk\n"  # an editor that had not reloaded saves its buffer
    assert base_of_save(written=written, replaced=replaced, saved=stale) is replaced
    # Carried onto the document as an edit of that text, nothing the write brought is deleted.
    merged = apply_ops(written, rebase(replaced, stale, written))
    assert merged == written + "saved on disk\n"
    # A stale buffer saved unchanged deletes nothing either.
    unchanged = base_of_save(written=written, replaced=replaced, saved=replaced)
    assert apply_ops(written, rebase(unchanged, replaced, written)) == written


def test_a_save_made_after_reloading_is_an_edit_of_what_we_wrote() -> None:
    replaced = "# Plan\n\nStep one.\n"
    written = "# Plan\n\nStep one. typed elsewhere\n"
    edited = written.replace("one.", "one!") + "more\n"
    assert base_of_save(written=written, replaced=replaced, saved=edited) is written
    # Equally far from both (a tie), the save is an edit of what we wrote.
    assert base_of_save(written="ab", replaced="cd", saved="") == "ab"


@given(texts, texts)
def test_edit_size_is_zero_only_for_equal_texts_and_counts_both_sides(old: str, new: str) -> None:
    size = edit_size(old, new)
    assert (size == 0) == (old == new)
    assert size >= abs(len(old) - len(new))


def test_a_change_both_sides_made_alike_is_made_once() -> None:
    # Renamed on disk: the server rewrote the link, and so did Obsidian in its own copy of the note.
    base = "See [[Old]] and [[Other]].\n"
    rewritten = "See [[New]] and [[Other]].\n"
    assert apply_ops(rewritten, rebase(base, rewritten, rewritten)) == rewritten
    # ... with more typed on either side meanwhile.
    local = rewritten + "Mine.\n"
    current = "Theirs. " + rewritten
    assert apply_ops(current, rebase(base, local, current)) == "Theirs. See [[New]] and [[Other]].\nMine.\n"
