import pytest
from wcmatch import glob

from mcp_tools.engines.globbing import NO_FILES, TRUNCATED_NOTE, compile_glob, glob_paths, grep_glob_filter

PATHS = [
    ("Lens/Welcome.md", 100.0),
    ("Lens/Notes/Ideas.md", 300.0),
    ("Lens/Notes/Deep/Plan.md", 200.0),
    ("Lens Edu/Syllabus.md", 400.0),
    ("Lens Edu/Week 1.md", 50.0),
    ("Lens/.hidden.md", 10.0),
]


def listed(pattern, **kwargs):
    return glob_paths(PATHS, pattern=pattern, **kwargs).split("\n")


def test_globstar_matches_every_depth_newest_first():
    assert listed("**/*.md") == [
        "Lens Edu/Syllabus.md",
        "Lens/Notes/Ideas.md",
        "Lens/Notes/Deep/Plan.md",
        "Lens/Welcome.md",
        "Lens Edu/Week 1.md",
        "Lens/.hidden.md",
    ]


def test_star_does_not_cross_folders():
    assert listed("Lens/*.md") == ["Lens/Welcome.md", "Lens/.hidden.md"]


def test_pattern_without_folder_and_without_scope_finds_nothing():
    assert glob_paths(PATHS, pattern="*.md") == NO_FILES


def test_braces_and_classes():
    assert listed("Lens/{Welcome,Notes/Ideas}.md") == ["Lens/Notes/Ideas.md", "Lens/Welcome.md"]
    assert listed("Lens Edu/[S-V]*.md") == ["Lens Edu/Syllabus.md"]
    assert listed("Lens Edu/Week ?.md") == ["Lens Edu/Week 1.md"]


def test_matching_is_case_sensitive():
    assert glob_paths(PATHS, pattern="lens/*.md") == NO_FILES
    assert glob_paths(PATHS, pattern="**/*.MD") == NO_FILES


def test_scope_limits_to_a_folder_and_matches_relative_to_it():
    assert listed("*.md", scope="Lens") == ["Lens/Welcome.md", "Lens/.hidden.md"]
    assert listed("**/*.md", scope="Lens/Notes") == ["Lens/Notes/Ideas.md", "Lens/Notes/Deep/Plan.md"]


def test_scope_does_not_match_a_folder_that_only_shares_a_prefix():
    assert "Lens Edu/Syllabus.md" not in listed("**", scope="Lens")


def test_scope_accepts_slashes_and_full_path_patterns():
    assert listed("*.md", scope="/Lens/Notes/") == ["Lens/Notes/Ideas.md"]
    assert listed("Lens/Notes/*.md", scope="Lens/Notes") == ["Lens/Notes/Ideas.md"]


def test_leading_slash_or_dot_slash_is_the_root():
    assert (
        listed("/Lens Edu/*.md")
        == listed("./Lens Edu/*.md")
        == ["Lens Edu/Syllabus.md", "Lens Edu/Week 1.md"]
    )


def test_ties_in_mtime_sort_by_path():
    paths = [("B/b.md", 5.0), ("A/a.md", 5.0), ("C/c.md", 9.0)]
    assert glob_paths(paths, pattern="**/*.md").split("\n") == ["C/c.md", "A/a.md", "B/b.md"]


def test_truncates_past_the_limit_with_a_note():
    paths = [(f"F/{n:03}.md", float(n)) for n in range(150)]
    lines = glob_paths(paths, pattern="**/*.md").split("\n")
    assert len(lines) == 101
    assert lines[0] == "F/149.md"
    assert lines[99] == "F/050.md"
    assert lines[100] == TRUNCATED_NOTE
    assert glob_paths(paths, pattern="**/*.md", limit=2).split("\n") == [
        "F/149.md",
        "F/148.md",
        TRUNCATED_NOTE,
    ]


def test_exactly_limit_results_has_no_note():
    paths = [(f"F/{n}.md", float(n)) for n in range(3)]
    assert TRUNCATED_NOTE not in glob_paths(paths, pattern="**", limit=3)


def test_no_match_message():
    assert glob_paths(PATHS, pattern="Nowhere/**") == NO_FILES
    assert glob_paths([], pattern="**") == NO_FILES


def test_unicode_paths():
    paths = [("Notizen/Grüße 👋.md", 1.0), ("ノート/日本語.md", 2.0)]
    assert glob_paths(paths, pattern="**/*[👋語].md").split("\n") == [
        "ノート/日本語.md",
        "Notizen/Grüße 👋.md",
    ]


@pytest.mark.parametrize("pattern", ["", "   ", "/", "./"])
def test_empty_patterns_are_refused(pattern):
    with pytest.raises(ValueError, match="pattern"):
        glob_paths(PATHS, pattern=pattern)


def test_brace_explosion_is_refused_clearly():
    with pytest.raises(ValueError, match="too many alternatives"):
        glob_paths(PATHS, pattern="{1..100000}")


def test_limit_below_one_is_refused():
    with pytest.raises(ValueError, match="limit"):
        glob_paths(PATHS, pattern="**", limit=0)


def test_compile_glob_is_a_reusable_predicate():
    matches = compile_glob("**/Ideas.md", scope="Lens")
    assert matches("Lens/Notes/Ideas.md")
    assert not matches("Lens Edu/Ideas.md")


def test_grep_glob_filter_follows_ripgrep():
    by_name = grep_glob_filter("*.md")
    assert by_name("Lens/Notes/Ideas.md")
    assert not by_name("Lens/notes.txt")
    by_path = grep_glob_filter("Notes/*.md", scope="Lens")
    assert by_path("Lens/Notes/Ideas.md")
    assert not by_path("Lens/Notes/Deep/Plan.md")
    excluded = grep_glob_filter("!Ideas*")
    assert not excluded("Lens/Notes/Ideas.md")
    assert excluded("Lens/Welcome.md")


TRICKY_PATHS = [
    "Lens/Welcome.md",
    "Lens/Notes/Deep/Plan.md",
    "Lens/.hidden.md",
    "Lens/.obsidian/app.md",
    ".md",
    "Lens/.md",
    "Lens/../escape.md",
    "./Lens/x.md",
    "Lens/./x.md",
    "..",
    "Lens/Notes/",
    "Lens/Plan.md.bak",
    "ノート/日本語.md",
    "A/b..md",
]


@pytest.mark.parametrize(
    "pattern",
    [
        "**",
        "**/*",
        "**/*.md",
        "**/*Plan.md",
        "**/*.",
        "*/*.md",
        "Lens/**",
        "Lens/**/*.md",
        "**/.*",
        "{Lens,A}/*.md",
    ],
)
def test_matching_agrees_with_wcmatch_globmatch(pattern):
    flags = glob.GLOBSTAR | glob.BRACE | glob.DOTMATCH | glob.CASE | glob.FORCEUNIX
    matches = compile_glob(pattern)
    for path in TRICKY_PATHS:
        assert matches(path) == glob.globmatch(path, pattern, flags=flags), path
