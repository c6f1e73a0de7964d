"""Counts read as people write them."""

from lensrelay.text.counts import counted


def test_one_is_singular_and_every_other_number_plural() -> None:
    assert [counted(n, "link") for n in (0, 1, 2)] == ["0 links", "1 link", "2 links"]
    assert counted(1, "sub-folder") == "1 sub-folder" and counted(3, "copy", "copies") == "3 copies"
