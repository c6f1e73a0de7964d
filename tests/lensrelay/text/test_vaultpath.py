import pytest

from lensrelay.text.vaultpath import (
    InvalidPath,
    join_user_path,
    normalize_path,
    split_user_path,
    validate_folder_name,
    validate_relative_path,
    with_md_suffix,
)


@pytest.mark.parametrize(
    "path",
    [
        "/Notes/Ideas.md",
        "/Ideas.md",
        "/Café/Crème brûlée.md",
        "/日本語/ノート.md",
        "/🚀 Launch.md",
        "/a..b.md",
    ],
)
def test_valid_relative_paths_come_back_unchanged(path):
    assert validate_relative_path(path) == path


def test_stored_paths_must_be_nfc_and_typed_paths_are_normalised():
    decomposed = "/Cafe\u0301.md"  # e + combining acute, as macOS writes it
    with pytest.raises(InvalidPath, match="not NFC-normalised"):
        validate_relative_path(decomposed)
    assert split_user_path("Lens" + decomposed) == ("Lens", "/Caf\u00e9.md")
    assert normalize_path(decomposed) == "/Caf\u00e9.md"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("Notes/Ideas.md", "must start with '/'"),
        ("", "must start with '/'"),
        ("/", "folder itself"),
        ("//x.md", "empty segment"),
        ("/Notes//Ideas.md", "empty segment"),
        ("/Notes/", "empty segment"),
        ("/./Ideas.md", "'.' segment"),
        ("/Notes/../Ideas.md", "'..' segment"),
        ("/Ideas\x00.md", "control character (U+0000)"),
        ("/Ideas\n.md", "control character (U+000A)"),
        ("/Notes\\Ideas.md", "backslash"),
        ("/.md", "hidden or dot-only name"),
        ("/...md", "hidden or dot-only name"),
        ("/.obsidian/app.md", "hidden or dot-only name"),
        ("/Notes/.secret.md", "hidden or dot-only name"),
        ("/Invoice\u202egpj.md", "U+202E"),
        ("/a\u202ab.md", "U+202A"),
        ("/a\u2066b.md", "U+2066"),
        ("/a\u2069b.md", "U+2069"),
        ("/\ufeffIdeas.md", "U+FEFF"),
        ("/a\u2028b.md", "control character (U+2028)"),
        ("/a\x85b.md", "control character (U+0085)"),
        ("/a\udc80b.md", "unpaired surrogate"),
        ("/Cafe\u0301.md", "not NFC-normalised"),
    ],
)
def test_malformed_relative_paths_are_refused_with_a_reason(path, reason):
    with pytest.raises(InvalidPath, match=None) as info:
        validate_relative_path(path)
    assert reason in str(info.value)


def test_relative_path_length_limits():
    validate_relative_path("/" + "a" * 255)
    with pytest.raises(InvalidPath, match="255 bytes"):
        validate_relative_path("/" + "é" * 128)  # 256 UTF-8 bytes in 128 characters
    with pytest.raises(InvalidPath, match="1024 characters"):
        validate_relative_path(("/" + "a" * 100) * 11)


def test_split_user_path_with_spaces_and_unicode():
    assert split_user_path("Lens/Notes/Ideas.md") == ("Lens", "/Notes/Ideas.md")
    assert split_user_path("Lens Edu/Syllabus.md") == ("Lens Edu", "/Syllabus.md")
    assert split_user_path("/Lens Edu/Syllabus.md") == ("Lens Edu", "/Syllabus.md")
    assert split_user_path("研究 🚀/ノート.md") == ("研究 🚀", "/ノート.md")
    assert split_user_path(" Lens /x.md ") == (" Lens ", "/x.md ")


def test_split_user_path_parses_absolute_looking_paths_as_a_folder_name():
    assert split_user_path("/etc/passwd") == ("etc", "/passwd")


@pytest.mark.parametrize(
    "path",
    [
        "",
        "/",
        "Lens",
        "Lens/",
        "/Lens",
        "Lens//x.md",
        "//Lens/x.md",
        "../Lens/x.md",
        "Lens/../x.md",
        "Lens/a/..",
        "Lens/x\x00.md",
        "Lens\\x.md",
        "Lens/a\\b.md",
    ],
)
def test_split_user_path_refuses_malformed_input(path):
    with pytest.raises(InvalidPath):
        split_user_path(path)


def test_join_user_path_is_the_inverse_of_split():
    for user_path in ["Lens/Notes/Ideas.md", "Lens Edu/Syllabus.md", "Ünï 😀/a b/c.md"]:
        assert join_user_path(*split_user_path(user_path)) == user_path
    with pytest.raises(InvalidPath):
        join_user_path("Le/ns", "/x.md")
    with pytest.raises(InvalidPath):
        join_user_path("Lens", "x.md")


def test_validate_folder_name():
    assert validate_folder_name("Lens Edu") == "Lens Edu"
    for bad in ["", "..", "a/b", "a\x7fb"]:
        with pytest.raises(InvalidPath):
            validate_folder_name(bad)


def test_invalid_path_is_a_value_error():
    assert issubclass(InvalidPath, ValueError)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("Notes/Ideas", "Notes/Ideas.md"),
        ("Notes/Ideas.md", "Notes/Ideas.md"),
        ("Notes/Ideas.MD", "Notes/Ideas.MD"),
        ("v1.md.d/Ideas", "v1.md.d/Ideas.md"),
        ("Report.pdf", "Report.pdf.md"),
        ("ノート", "ノート.md"),
    ],
)
def test_with_md_suffix(path, expected):
    assert with_md_suffix(path) == expected
