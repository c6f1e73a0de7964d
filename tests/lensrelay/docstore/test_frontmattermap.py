"""The `frontmatter` map follows the YAML header when the server writes, by the Relay.md client's rules."""

from __future__ import annotations

import json

import pytest
from pycrdt import Doc, Map, Text

from lensrelay.docstore.frontmattermap import FrontmatterFollower, header_properties


def note(text: str, **mirrored: object) -> Doc:
    doc: Doc = Doc()
    doc.get("contents", type=Text).insert(0, text)
    if mirrored:
        ymap = doc.get("frontmatter", type=Map)
        for key, value in mirrored.items():
            ymap[key] = json.dumps(value, separators=(",", ":"))
    return doc


def server_write(doc: Doc, text: str) -> dict[str, object]:
    with doc.transaction():
        follower = FrontmatterFollower(doc)
        ytext = doc.get("contents", type=Text)
        del ytext[:]
        ytext.insert(0, text)
        follower.finish()
    return dict(doc.get("frontmatter", type=Map)) if "frontmatter" in doc else {}


def test_changed_and_removed_properties_follow_the_text() -> None:
    doc = note("---\ntitle: Old\ntags: [a, b]\nn: 1\n---\nbody", title="Old", tags=["a", "b"], n=1)
    assert server_write(doc, "---\ntitle: New\nn: 1\nextra: {k: 2.0}\n---\nbody") == {
        "title": '"New"',
        "n": "1",
        "extra": '{"k":2}',
    }


def test_removing_the_header_clears_the_map() -> None:
    doc = note("---\ntitle: Old\n---\nbody", title="Old")
    assert server_write(doc, "body only") == {}


def test_a_body_edit_leaves_the_map_alone() -> None:
    doc = note("---\ntitle: Old\n---\nbody", title="stale on purpose")
    assert server_write(doc, "---\ntitle: Old\n---\nnew body") == {"title": '"stale on purpose"'}


def test_no_map_no_mirror() -> None:
    doc = note("---\ntitle: Old\n---\nbody")
    assert server_write(doc, "---\ntitle: New\n---\nbody") == {}
    assert "frontmatter" not in doc


@pytest.mark.parametrize(
    "hostile",
    [
        "---\ntitle: [unclosed\n---\nbody",  # does not parse
        "---\n- a list\n- not a mapping\n---\nbody",
        "---\n"
        + "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}]\n"
            for name, prev in zip("bcdefghij", "abcdefghi", strict=True)
        )
        + "---\nbody",  # an alias bomb
        "---\nk: " + "[" * 5000 + "]" * 5000 + "\n---\nbody",  # nested past any sane depth
        "---\n!!python/object/apply:os.system ['true']\n---\nbody",
    ],
)
def test_a_hostile_header_keeps_the_last_good_values(hostile: str) -> None:
    doc = note("---\ntitle: Old\n---\nbody", title="Old")
    assert server_write(doc, hostile) == {"title": '"Old"'}


def test_values_are_json_as_javascript_writes_them() -> None:
    assert header_properties("---\nd: 2024-01-02\nyes_: yes\nf: 1.5\nu: é\n---\n") == {
        "d": '"2024-01-02"',
        "yes_": '"yes"',
        "f": "1.5",
        "u": '"é"',
    }
    assert header_properties("no header") == {}
    assert header_properties("---\n: [\n---\n") is None
