"""The editor keeps its tracked changes per keystroke by scanning again only around the change (issue 32):
editor/test/tracked.test.js holds that to a scan and a build from scratch, for random notes full of
delimiters and random edits (and the pending rows and views changing between them); and suggesting mode's
rule, read around a keystroke, to the same rule read in the whole note."""

from tests.suggestions.markup.test_criticmarkup_cases import node_test_counts


def test_the_editor_keeps_its_tracked_changes_as_a_rebuild_would() -> None:
    assert node_test_counts("editor/test/tracked.test.js") == (4, 0)
