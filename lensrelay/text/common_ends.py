"""How much two texts share at their start and at their end: where an edit between them lies.

Slices are compared in C: the whole first, then halves of what is left, so the work is linear in the
length and no loop runs over characters in Python."""

from __future__ import annotations


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def common_suffix(a: str, b: str, limit: int) -> int:
    """The length of the common suffix, at most `limit` (pass what the common prefix leaves, so that the
    two never overlap)."""
    n = min(len(a), len(b), limit)
    if a[len(a) - n :] == b[len(b) - n :]:
        return n
    lo, hi = 0, n  # suffixes of length lo agree, of length hi do not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[len(a) - mid : len(a) - lo] == b[len(b) - mid : len(b) - lo]:
            lo = mid
        else:
            hi = mid
    return lo
