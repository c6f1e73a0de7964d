"""Document versions: insertions and deletions both count, and `covers` is the order replicas reach."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pycrdt import Doc, Map

from lensrelay.docstore.versions import covers, version


def replica(source: Doc[Any]) -> Doc[Any]:
    copy: Doc[Any] = Doc()
    copy.apply_update(source.get_update())
    return copy


def test_a_deletion_makes_a_newer_version() -> None:
    doc: Doc[Any] = Doc()
    files = doc.get("filemeta_v0", type=Map)
    files["/a.md"] = {"id": "a"}
    files["/b.md"] = {"id": "b"}
    before = version(doc)
    del files["/a.md"]
    after = version(doc)
    assert covers(after, before)
    assert not covers(before, after)  # a state vector alone would call them equal


def test_concurrent_versions_cover_neither_until_merged() -> None:
    left: Doc[Any] = Doc()
    left.get("m", type=Map)["x"] = 1
    right = replica(left)
    left.get("m", type=Map)["l"] = 1
    del right.get("m", type=Map)["x"]
    assert not covers(version(left), version(right))
    assert not covers(version(right), version(left))
    left.apply_update(right.get_update())
    assert covers(version(left), version(right))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from("abcdef")), min_size=1, max_size=25))
def test_every_later_version_of_a_replica_covers_every_earlier_one(ops: list[tuple[bool, str]]) -> None:
    doc: Doc[Any] = Doc()
    files = doc.get("m", type=Map)
    seen = [version(doc)]
    for add, key in ops:
        if add:
            files[key] = {"id": key}
        elif key in files:
            del files[key]
        seen.append(version(doc))
    for earlier in range(len(seen)):
        assert covers(seen[-1], seen[earlier])
        if seen[earlier] != seen[-1]:
            assert not covers(seen[earlier], seen[-1])
