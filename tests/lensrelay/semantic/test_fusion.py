"""Hybrid ranking: word matches lead, reordered by reciprocal rank fusion; meaning fills in after them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lensrelay.semantic.passages import PassageMatch
from lensrelay.semantic.ranking import fuse


def match(doc_id: str, score: float) -> PassageMatch:
    return PassageMatch(doc_id=doc_id, score=score, start_line=1, end_line=1, heading="")


def test_meaning_reorders_word_matches_and_adds_close_notes_after_them() -> None:
    fused = fuse(
        full_text=["a", "b", "c"],
        semantic=[match("c", 0.9), match("x", 0.8), match("b", 0.7), match("far", 0.1)],
        min_score=0.3,
        limit=10,
    )
    assert [item.doc_id for item in fused] == ["c", "b", "a", "x"]
    assert [item.full_text for item in fused] == [True, True, True, False]
    assert fused[3].match == match("x", 0.8)
    assert [i.doc_id for i in fuse(full_text=[], semantic=[match("x", 0.8)], min_score=0.3, limit=1)] == ["x"]


ids = st.lists(st.sampled_from("abcdefghij"), unique=True, max_size=10)


@given(ids, ids, st.floats(min_value=-1, max_value=1), st.integers(min_value=1, max_value=12))
def test_word_matches_always_come_first_and_nothing_repeats(
    words: list[str], meaning: list[str], min_score: float, limit: int
) -> None:
    semantic = [match(doc_id, 1 - rank / 10) for rank, doc_id in enumerate(meaning)]
    fused = fuse(full_text=words, semantic=semantic, min_score=min_score, limit=limit)
    order = [item.doc_id for item in fused]
    assert len(order) == len(set(order)) <= limit
    flags = [item.full_text for item in fused]
    assert flags == sorted(flags, reverse=True)
    if len(words) <= limit:
        assert {doc_id for doc_id, worded in zip(order, flags, strict=True) if worded} == set(words)
    assert all(item.match.score >= min_score for item in fused if not item.full_text and item.match)
    if words and (not semantic or words[0] == meaning[0]):
        assert order[0] == words[0]  # the best word match leads when meaning agrees or is silent
