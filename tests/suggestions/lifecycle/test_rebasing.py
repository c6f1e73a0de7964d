"""An edit planned on a text, moved onto the text a person changed meanwhile (suggestions.lifecycle.rebasing):
the same marks in the same words, the person's change kept whole, and never a move near what changed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from suggestions.lifecycle.planning import EditSpec, plan_edit
from suggestions.lifecycle.rebasing import MARGIN, changed_stretch, rebased
from suggestions.markup.criticmarkup import render_metadata
from suggestions.markup.rewriting import accepted_of, apply_raw_edits, base_of

WORD = st.sampled_from(["alpha", "beta", "gamma", "delta", "café", "日本", "🦊", "x"])
UID = "b5fda179ea1e4de6"
META = render_metadata("claude", 1, suggestion_id=UID)


@st.composite
def notes(draw: st.DrawFn) -> tuple[str, int]:
    """A note with the word `target` once, and where it is."""
    before = " ".join(draw(st.lists(WORD, max_size=30)))
    after = " ".join(draw(st.lists(WORD, max_size=30)))
    raw = f"{before}\n\nthe target word\n\n{after}\n"
    return raw, raw.index("target")


@st.composite
def changes(draw: st.DrawFn, raw: str) -> str:
    """`raw` with one stretch replaced, as a person typing or deleting does (never a `target`)."""
    start = draw(st.integers(0, len(raw)))
    end = draw(st.integers(start, min(len(raw), start + 8)))
    typed = draw(st.text(alphabet="ab 12\n語", max_size=6))
    return raw[:start] + typed + raw[end:]


def plan(raw: str, *, comment: str | None = None):  # type: ignore[no-untyped-def]
    return plan_edit(
        raw,
        specs=[EditSpec("target", "changed")],
        replacement=None,
        path="N.md",
        meta=META,
        uid=UID,
        comment=comment,
    )


def written(planned) -> str:  # type: ignore[no-untyped-def]
    text = apply_raw_edits(planned.raw, planned.plan.edits)
    assert text == planned.plan.raw
    return apply_raw_edits(text, [planned.reply]) if planned.reply is not None else text


@given(note=notes(), data=st.data(), comment=st.sampled_from([None, "why"]))
def test_a_plan_moved_onto_a_changed_note_marks_the_same_words_and_keeps_the_change(
    note: tuple[str, int], data: st.DataObject, comment: str | None
) -> None:
    raw, at = note
    now = data.draw(changes(raw))
    planned = plan(raw, comment=comment)
    moved = rebased(planned, now)
    start, old_end, _ = changed_stretch(raw, now)
    far = old_end + 40 < at or start > at + len("target") + 40 + len(comment or "") + 200
    if moved is None:
        assert not far, "refused a change far from the edit"
        return
    text = written(moved)
    # The person's change is kept whole, unmarked; the assistant's is the one suggestion.
    assert base_of(text) == now
    assert accepted_of(text) == now.replace("target", "changed", 1)
    # The marks' byte offsets and the cursor's place point at the marks in the new text.
    data_bytes = text.encode()
    assert [data_bytes[s:e].decode() for s, e, _, _ in moved.changes] == moved.markup
    assert text[moved.markup_start :].startswith(moved.markup[0])
    # And planning on the new text gives the same text (the same marks, the same place).
    assert text == written(plan(now, comment=comment))


def test_a_change_next_to_the_edited_word_is_not_moved_over() -> None:
    raw = "one\n\nthe target word\n"
    at = raw.index("target")
    planned = plan(raw)
    assert rebased(planned, raw[:at] + "x" + raw[at:]) is None  # typed against the word
    assert rebased(planned, raw[: at - MARGIN + 1] + "x" + raw[at - MARGIN + 1 :]) is None
    assert rebased(planned, raw[: at - MARGIN] + "x" + raw[at - MARGIN :]) is not None  # MARGIN left alone
    assert rebased(planned, "zz" + raw) is not None  # far before it


def test_an_unchanged_note_keeps_the_plan() -> None:
    raw = "the target word\n"
    planned = plan(raw)
    assert rebased(planned, raw) is planned


def test_the_changed_stretch_is_the_one_place_the_texts_differ() -> None:
    assert changed_stretch("abcdef", "abXYef") == (2, 4, 4)
    assert changed_stretch("abc", "abc") == (3, 3, 3)
    assert changed_stretch("aaa", "aaaa") == (3, 3, 4)
    assert changed_stretch("", "new") == (0, 0, 3)
