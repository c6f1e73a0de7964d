"""The common start and end of two texts, against a loop over characters."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lensrelay.text.common_ends import common_prefix, common_suffix


@settings(max_examples=1000, deadline=None)
@given(
    a=st.text(alphabet="ab", max_size=300),
    b=st.text(alphabet="ab", max_size=300),
    shared=st.integers(0, 5000),
)
def test_common_prefix_and_suffix_as_a_loop_over_characters_finds_them(a: str, b: str, shared: int) -> None:
    body = "x" * shared
    a, b = body + a + body, body + b + body
    prefix = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    assert common_prefix(a, b) == prefix
    limit = min(len(a), len(b)) - prefix
    suffix = next((i for i in range(limit) if a[len(a) - 1 - i] != b[len(b) - 1 - i]), limit)
    assert common_suffix(a, b, limit) == suffix
