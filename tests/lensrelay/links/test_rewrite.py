import pytest

from lensrelay.links.resolve import LinkIndex, LinkTarget
from lensrelay.links.rewrite import TextEdit, apply_edits, link_edits, rewrite_links


def t(user_path: str) -> LinkTarget:
    folder, _, rest = user_path.partition("/")
    return LinkTarget(folder=folder, path="/" + rest)


SOURCE = t("Lens/Notes/Source.md")


@pytest.fixture
def index():
    return LinkIndex(
        t(p)
        for p in [
            "Lens/Notes/Source.md",
            "Lens/Notes/Ideas.md",
            "Lens/Notes/Taken.md",
            "Lens/Archive/Taken.md",
            "Lens/Projects/Plan.md",
            "Lens Edu/Syllabus.md",
            "Lens Edu/Ideas.md",
            "Lens/日本語/ノート.md",
        ]
    )


def rewrite(index, markdown, old, new, source=SOURCE):
    return rewrite_links(markdown, source=source, index=index, old=t(old), new=t(new))


def test_bare_basename_stays_bare_when_the_new_name_is_unique(index):
    text, count = rewrite(
        index, "See [[Ideas]] and [[ideas]].", "Lens/Notes/Ideas.md", "Lens/Notes/Thoughts.md"
    )
    assert (text, count) == ("See [[Thoughts]] and [[Thoughts]].", 2)


def test_heading_alias_and_embed_are_preserved(index):
    markdown = "![[Ideas]] [[Ideas#Goals|my goals]] ![[Ideas#^blk]] [[Ideas|x]] [[Ideas#H#Sub]]"
    text, count = rewrite(index, markdown, "Lens/Notes/Ideas.md", "Lens/Notes/Thoughts.md")
    assert (
        text
        == "![[Thoughts]] [[Thoughts#Goals|my goals]] ![[Thoughts#^blk]] [[Thoughts|x]] [[Thoughts#H#Sub]]"
    )
    assert count == 5


def test_md_suffix_kept_only_where_it_was_written(index):
    text, _ = rewrite(
        index, "[[Ideas.md]] [[Ideas]] [[Notes/Ideas.md]]", "Lens/Notes/Ideas.md", "Lens/Notes/New.md"
    )
    assert text == "[[New.md]] [[New]] [[Notes/New.md]]"


def test_path_links_stay_paths(index):
    text, _ = rewrite(index, "[[Notes/Ideas|i]]", "Lens/Notes/Ideas.md", "Lens/Projects/Ideas.md")
    assert text == "[[Projects/Ideas|i]]"


def test_bare_link_becomes_a_path_when_the_new_basename_is_taken(index):
    text, _ = rewrite(index, "[[Ideas]]", "Lens/Notes/Ideas.md", "Lens/Projects/Taken.md")
    assert text == "[[Projects/Taken]]"


def test_bare_link_stays_bare_when_own_folder_preference_makes_it_unambiguous(index):
    # "Ideas" also exists in Lens Edu, but from Lens the own-folder copy wins unambiguously.
    text, _ = rewrite(index, "[[Ideas]]", "Lens/Notes/Ideas.md", "Lens/Projects/Ideas.md")
    assert text == "[[Ideas]]"
    assert (
        link_edits(
            "[[Ideas]]",
            source=SOURCE,
            index=index,
            old=t("Lens/Notes/Ideas.md"),
            new=t("Lens/Projects/Ideas.md"),
        )
        == []
    )


def test_move_to_another_folder_writes_folder_path_form(index):
    text, count = rewrite(
        index, "[[Notes/Ideas]] [[Ideas]]", "Lens/Notes/Ideas.md", "Lens Edu/Week 2/Ideas.md"
    )
    # The bare basename would now resolve to "Lens Edu/Ideas.md", so it becomes a full path too.
    assert text == "[[Lens Edu/Week 2/Ideas]] [[Lens Edu/Week 2/Ideas]]"
    assert count == 2


def test_link_from_another_folder_into_this_one(index):
    source = t("Lens Edu/Syllabus.md")
    text, _ = rewrite(
        index, "[[Lens/Projects/Plan]]", "Lens/Projects/Plan.md", "Lens/Plans/Plan 2.md", source
    )
    assert text == "[[Lens/Plans/Plan 2]]"


def test_relative_links_stay_relative(index):
    text, _ = rewrite(
        index, "[[../Projects/Plan]] [[./Ideas]]", "Lens/Projects/Plan.md", "Lens/Archive/Old Plan.md"
    )
    assert text == "[[../Archive/Old Plan]] [[./Ideas]]"
    text, _ = rewrite(index, "[[./Ideas]]", "Lens/Notes/Ideas.md", "Lens/Notes/Sub/Ideas 2.md")
    assert text == "[[./Sub/Ideas 2]]"


def test_only_links_to_the_renamed_document_change(index):
    markdown = "[[Ideas]] [[Plan]] [[Syllabus]] [[Missing]] [[#Local]]"
    text, count = rewrite(index, markdown, "Lens/Notes/Ideas.md", "Lens/Notes/Thoughts.md")
    assert (text, count) == ("[[Thoughts]] [[Plan]] [[Syllabus]] [[Missing]] [[#Local]]", 1)


def test_links_in_code_are_not_rewritten(index):
    markdown = "[[Ideas]] `[[Ideas]]`\n```\n[[Ideas]]\n```\n"
    text, count = rewrite(index, markdown, "Lens/Notes/Ideas.md", "Lens/Notes/Thoughts.md")
    assert (text, count) == ("[[Thoughts]] `[[Ideas]]`\n```\n[[Ideas]]\n```\n", 1)


def test_unicode_rename_and_edit_offsets(index):
    markdown = "😀 é [[ノート|メモ]] 🚀 ![[日本語/ノート#見出し]]"
    edits = link_edits(
        markdown, source=SOURCE, index=index, old=t("Lens/日本語/ノート.md"), new=t("Lens/日本語/Café ☕.md")
    )
    assert edits == [
        TextEdit(start=6, end=9, replacement="Café ☕"),
        TextEdit(start=20, end=27, replacement="日本語/Café ☕"),
    ]
    assert apply_edits(markdown, edits) == "😀 é [[Café ☕|メモ]] 🚀 ![[日本語/Café ☕#見出し]]"


def test_whitespace_and_table_escaped_pipe_are_preserved(index):
    markdown = "| [[ Ideas \\|alias]] | [[  Ideas#H  ]] |"
    text, _ = rewrite(index, markdown, "Lens/Notes/Ideas.md", "Lens/Notes/New.md")
    assert text == "| [[ New \\|alias]] | [[  New#H  ]] |"


def test_case_insensitive_matches_are_rewritten(index):
    text, count = rewrite(index, "[[NOTES/IDEAS.MD]] [[iDeAs]]", "Lens/Notes/Ideas.md", "Lens/Notes/New.md")
    assert (text, count) == ("[[Notes/New.md]] [[New]]", 2)


def test_ambiguous_link_that_resolved_to_old_is_rewritten_unambiguously(index):
    # From Lens/Projects, "Taken" is ambiguous between /Archive/Taken.md and /Notes/Taken.md (same
    # depth, alphabetical order picks Archive). Renaming that one pins the link to its new name.
    source = t("Lens/Projects/Plan.md")
    assert index.resolve(source=source, target="Taken").ambiguous
    text, _ = rewrite(index, "[[Taken]]", "Lens/Archive/Taken.md", "Lens/Archive/Taken 2.md", source)
    assert text == "[[Taken 2]]"


def test_self_link_when_the_source_itself_moves_to_another_folder(index):
    source = t("Lens/Notes/Ideas.md")
    text, count = rewrite(
        index, "[[Notes/Ideas#Top]] [[Plan]]", "Lens/Notes/Ideas.md", "Lens Edu/Sub/X.md", source
    )
    # Spelled for where the text will live: inside Lens Edu, so no folder name in front.
    assert (text, count) == ("[[Sub/X#Top]] [[Plan]]", 1)


def test_unwritable_new_name_leaves_the_link_alone(index):
    text, count = rewrite(index, "[[Ideas]]", "Lens/Notes/Ideas.md", "Lens/Notes/C# tips.md")
    assert (text, count) == ("[[Ideas]]", 0)


def test_no_op_rename(index):
    assert (
        link_edits(
            "[[Ideas]]",
            source=SOURCE,
            index=index,
            old=t("Lens/Notes/Ideas.md"),
            new=t("Lens/Notes/Ideas.md"),
        )
        == []
    )


def test_edits_are_sorted_and_apply_to_the_same_result(index):
    markdown = "[[Ideas]] x [[Notes/Ideas]] y ![[Ideas|z]]"
    edits = link_edits(
        markdown, source=SOURCE, index=index, old=t("Lens/Notes/Ideas.md"), new=t("Lens/Notes/B.md")
    )
    assert [e.start for e in edits] == sorted(e.start for e in edits)
    assert (
        apply_edits(markdown, edits) == rewrite(index, markdown, "Lens/Notes/Ideas.md", "Lens/Notes/B.md")[0]
    )
    assert apply_edits(markdown, edits) == "[[B]] x [[Notes/B]] y ![[B|z]]"
