"""The matrix's ordering: a partial sort first, the rest on demand, every row exactly once, best first."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lensrelay.semantic import matrix


@given(
    arrays(np.float32, st.integers(0, 1500), elements=st.floats(-1, 1, width=32)),
    st.integers(1, 64),
)
def test_best_first_yields_every_index_once_by_descending_score(scores: np.ndarray, first: int) -> None:
    original = matrix.FIRST_CANDIDATES
    matrix.FIRST_CANDIDATES = first
    try:
        order = list(matrix._best_first(scores))
    finally:
        matrix.FIRST_CANDIDATES = original
    assert sorted(order) == list(range(len(scores)))
    ordered = scores[order] if order else scores
    assert all(ordered[i] >= ordered[i + 1] for i in range(len(ordered) - 1))
