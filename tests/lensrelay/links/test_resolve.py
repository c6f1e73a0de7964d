import pytest

from lensrelay.links.resolve import LinkIndex, LinkTarget, Resolution


def t(user_path: str) -> LinkTarget:
    folder, _, rest = user_path.partition("/")
    return LinkTarget(folder=folder, path="/" + rest)


VAULT = [
    "Lens/Welcome.md",
    "Lens/Notes/Ideas.md",
    "Lens/Notes/Plans.md",
    "Lens/Notes/Deep/Ideas.md",
    "Lens/Projects/Plans.md",
    "Lens/Projects/Alpha/Spec.md",
    "Lens/Archive/Shared.md",
    "Lens/Café/Crème brûlée.md",
    "Lens/日本語/ノート.md",
    "Lens/🚀 Launch.md",
    "Lens Edu/Syllabus.md",
    "Lens Edu/Shared.md",
    "Lens Edu/Week 1/Cell Theory.md",
    "Other/Shared.md",
    "Other/Cell Theory.md",
]


@pytest.fixture
def index():
    return LinkIndex(t(p) for p in VAULT)


def resolve(index, source, target) -> Resolution:
    return index.resolve(source=t(source), target=target)


def test_user_path():
    assert t("Lens Edu/Week 1/Cell Theory.md").user_path == "Lens Edu/Week 1/Cell Theory.md"


def test_relative_to_the_linking_documents_directory_comes_first(index):
    # Both /Notes/Plans.md and /Projects/Plans.md exist: the sibling wins.
    found = resolve(index, "Lens/Projects/Alpha/Spec.md", "../Plans")
    assert found.target == t("Lens/Projects/Plans.md")
    assert resolve(index, "Lens/Notes/Ideas.md", "Plans").target == t("Lens/Notes/Plans.md")
    assert resolve(index, "Lens/Notes/Ideas.md", "Deep/Ideas").target == t("Lens/Notes/Deep/Ideas.md")
    assert resolve(index, "Lens/Notes/Ideas.md", "Plans").via == "relative"


def test_dot_relative_links(index):
    assert resolve(index, "Lens/Notes/Ideas.md", "./Plans").target == t("Lens/Notes/Plans.md")
    assert resolve(index, "Lens/Notes/Deep/Ideas.md", "../../Welcome").target == t("Lens/Welcome.md")


def test_relative_links_climb_to_the_vault_root_and_into_sibling_folders(index):
    # Every shared folder is a sibling directory in the user's vault.
    found = resolve(index, "Lens/Welcome.md", "../Lens Edu/Syllabus")
    assert (found.target, found.via, found.ambiguous) == (t("Lens Edu/Syllabus.md"), "relative", False)
    assert resolve(index, "Lens/Notes/Ideas.md", "../../Lens Edu/Syllabus").target == t(
        "Lens Edu/Syllabus.md"
    )
    assert resolve(index, "Lens/Notes/Ideas.md", "../../Lens Edu/Week 1/Cell Theory.md").target == t(
        "Lens Edu/Week 1/Cell Theory.md"
    )
    # case-insensitive folder names, '.md' optional, and back into the linking note's own folder
    assert resolve(index, "Other/Shared.md", "../lens edu/SHARED").target == t("Lens Edu/Shared.md")
    assert resolve(index, "Lens/Notes/Ideas.md", "../../Lens/Welcome").target == t("Lens/Welcome.md")
    assert resolve(index, "Lens Edu/Week 1/Cell Theory.md", "../../Other/Cell Theory").target == t(
        "Other/Cell Theory.md"
    )


def test_relative_links_never_climb_above_the_vault_root(index):
    assert resolve(index, "Lens/Welcome.md", "../../Lens/Welcome").target is None
    assert resolve(index, "Lens/Notes/Ideas.md", "../../../Lens Edu/Syllabus").target is None
    # the vault root holds folders, not notes; a folder itself is no document
    assert resolve(index, "Lens/Welcome.md", "../Welcome").target is None
    assert resolve(index, "Lens/Welcome.md", "../Lens Edu").target is None
    assert resolve(index, "Lens/Welcome.md", "../Nowhere/Syllabus").target is None
    # An explicitly relative link that misses does not fall back to a basename match.
    assert resolve(index, "Lens/Notes/Ideas.md", "./Welcome").target is None
    assert resolve(index, "Lens/Welcome.md", "../Other/Syllabus").target is None


def test_path_from_the_folder_root(index):
    found = resolve(index, "Lens/Projects/Alpha/Spec.md", "Notes/Ideas")
    assert (found.target, found.via) == (t("Lens/Notes/Ideas.md"), "folder")
    assert resolve(index, "Lens/Projects/Alpha/Spec.md", "/Notes/Plans").target == t("Lens/Notes/Plans.md")


def test_virtual_tree_reaches_other_folders(index):
    found = resolve(index, "Lens/Welcome.md", "Lens Edu/Week 1/Cell Theory")
    assert (found.target, found.via, found.ambiguous) == (
        t("Lens Edu/Week 1/Cell Theory.md"),
        "virtual",
        False,
    )
    assert resolve(index, "Other/Shared.md", "lens edu/syllabus.MD").target == t("Lens Edu/Syllabus.md")
    assert resolve(index, "Lens/Welcome.md", "Lens/Notes/Ideas").target == t("Lens/Notes/Ideas.md")


def test_case_insensitive_and_md_optional(index):
    for text in ["notes/ideas", "NOTES/IDEAS.MD", "Notes/Ideas.md", "nOtEs/iDeAs"]:
        assert resolve(index, "Lens/Welcome.md", text).target == t("Lens/Notes/Ideas.md"), text


def test_unicode_names(index):
    assert resolve(index, "Lens/Welcome.md", "crème BRÛLÉE").target == t("Lens/Café/Crème brûlée.md")
    assert resolve(index, "Lens/Welcome.md", "日本語/ノート").target == t("Lens/日本語/ノート.md")
    assert resolve(index, "Lens/Welcome.md", "🚀 launch").target == t("Lens/🚀 Launch.md")
    assert resolve(index, "Lens Edu/Syllabus.md", "ノート.md").target == t("Lens/日本語/ノート.md")


def test_greek_final_sigma_matches_with_or_without_md():
    index = LinkIndex([t("Lens/ΟΔΟΣ.md")])
    for text in ["ΟΔΟΣ", "οδος", "ΟΔΟΣ.md", "Lens/ΟΔΟΣ"]:
        assert index.resolve(source=t("Lens/x.md"), target=text).target == t("Lens/ΟΔΟΣ.md"), text


def test_decomposed_unicode_in_link_matches_composed_name(index):
    decomposed = "Cre\u0300me bru\u0302le\u0301e"
    assert resolve(index, "Lens/Welcome.md", decomposed).target == t("Lens/Café/Crème brûlée.md")


def test_basename_prefers_the_linking_documents_own_folder(index):
    found = resolve(index, "Lens Edu/Syllabus.md", "Cell Theory")
    assert (found.target, found.via, found.ambiguous) == (
        t("Lens Edu/Week 1/Cell Theory.md"),
        "basename",
        False,
    )
    assert resolve(index, "Other/Shared.md", "Cell Theory").target == t("Other/Cell Theory.md")


def test_basename_in_own_folder_prefers_the_shortest_path_and_reports_the_duplicate(index):
    found = resolve(index, "Lens/Welcome.md", "Ideas")
    assert found.target == t("Lens/Notes/Ideas.md")
    assert found.candidates == (t("Lens/Notes/Ideas.md"), t("Lens/Notes/Deep/Ideas.md"))
    assert found.ambiguous


def test_basename_ties_at_equal_depth_break_alphabetically(index):
    found = resolve(index, "Lens/Welcome.md", "Plans")
    assert found.candidates == (t("Lens/Notes/Plans.md"), t("Lens/Projects/Plans.md"))


def test_ambiguous_basename_across_other_folders(index):
    index.remove(t("Lens/Archive/Shared.md"))
    found = resolve(index, "Lens/Welcome.md", "Shared")
    assert found.target == t("Lens Edu/Shared.md")
    assert found.candidates == (t("Lens Edu/Shared.md"), t("Other/Shared.md"))
    assert found.ambiguous


def test_unique_basename_anywhere_is_not_ambiguous(index):
    found = resolve(index, "Other/Shared.md", "Syllabus")
    assert found == Resolution(
        target=t("Lens Edu/Syllabus.md"), candidates=(t("Lens Edu/Syllabus.md"),), via="basename"
    )


def test_partial_path_matches_as_a_path_suffix(index):
    # "Deep/Ideas" is not a path from any root seen from Lens Edu, but it ends a path in Lens.
    assert resolve(index, "Lens Edu/Syllabus.md", "Deep/Ideas").target == t("Lens/Notes/Deep/Ideas.md")
    assert resolve(index, "Lens Edu/Syllabus.md", "Alpha/Spec").target == t("Lens/Projects/Alpha/Spec.md")
    assert resolve(index, "Lens Edu/Syllabus.md", "Nope/Spec").target is None


def test_absolute_link_does_not_fall_back_to_basename(index):
    assert resolve(index, "Lens/Notes/Ideas.md", "/Spec").target is None


def test_empty_target_is_the_source_itself(index):
    found = resolve(index, "Lens/Notes/Ideas.md", "")
    assert (found.target, found.via) == (t("Lens/Notes/Ideas.md"), "self")


def test_unresolved(index):
    found = resolve(index, "Lens/Welcome.md", "Nowhere")
    assert (found.target, found.candidates, found.ambiguous) == (None, (), False)


def test_incremental_add_remove_and_move():
    index = LinkIndex()
    source = t("Lens/Welcome.md")
    index.add(source)
    assert index.resolve(source=source, target="New").target is None
    index.add(t("Lens/Sub/New.md"))
    index.add(t("Lens/Sub/New.md"))  # idempotent
    assert len(index) == 2
    assert index.resolve(source=source, target="New").target == t("Lens/Sub/New.md")
    index.move(t("Lens/Sub/New.md"), t("Lens Edu/Renamed.md"))
    assert index.resolve(source=source, target="New").target is None
    assert index.resolve(source=source, target="Renamed").target == t("Lens Edu/Renamed.md")
    assert index.resolve(source=source, target="Lens Edu/Renamed").target == t("Lens Edu/Renamed.md")
    index.remove(t("Lens Edu/Renamed.md"))
    assert index.resolve(source=source, target="Lens Edu/Renamed").target is None
    assert list(index) == [source]
    with pytest.raises(KeyError):
        index.remove(t("Lens Edu/Renamed.md"))
    index.discard(t("Lens Edu/Renamed.md"))
    # Internal buckets are dropped when empty, so a long-lived index does not grow without bound.
    assert set(index._basename_buckets) == {"welcome.md"}
    assert set(index._folder_names) == {"lens"}


def test_with_move_view_leaves_the_index_untouched(index):
    old, new = t("Lens/Notes/Ideas.md"), t("Other/Brainstorm.md")
    view = index.with_move(old, new)
    assert view.resolve(source=t("Lens/Welcome.md"), target="Brainstorm").target == new
    assert view.resolve(source=t("Lens/Welcome.md"), target="Notes/Ideas").target is None
    assert view.resolve(source=t("Lens/Welcome.md"), target="Ideas").target == t("Lens/Notes/Deep/Ideas.md")
    assert old in index and new not in index


def test_names_differing_only_by_case_are_both_reported():
    index = LinkIndex([t("Lens/readme.md"), t("Lens/README.md")])
    found = index.resolve(source=t("Lens/readme.md"), target="Readme")
    assert found.ambiguous
    assert set(found.candidates) == {t("Lens/readme.md"), t("Lens/README.md")}


def test_lookups_are_dict_based_not_scans():
    # 50,000 documents, 2,000 resolutions: a scan per lookup would take far longer than this.
    import time

    index = LinkIndex(t(f"F{i % 5}/dir{i % 100}/note {i}.md") for i in range(50_000))
    source = t("F0/dir0/note 0.md")
    started = time.process_time()
    for i in range(2_000):
        assert index.resolve(source=source, target=f"note {i * 7}").target is not None
    assert time.process_time() - started < 0.5
