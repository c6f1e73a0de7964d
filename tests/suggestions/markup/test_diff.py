import random
import time

import pytest

from suggestions.markup.criticmarkup import (
    accept_all,
    contains_delimiters,
    parse,
    reject_all,
    render_metadata,
)
from suggestions.markup.diff import (
    WHOLE_BLOCK_CHARS,
    Hunk,
    TextEdit,
    apply_text_edits,
    render_suggestion,
    suggestion_edits,
    tokenize,
    unified_diff,
    word_hunks,
)

META = render_metadata("claude", 1_700_000_000_000)


def test_lens_relay_example_is_one_hunk() -> None:
    assert word_hunks("The quick brown fox", "A slow red fox") == [
        Hunk(0, 15, "The quick brown", "A slow red")
    ]
    assert render_suggestion("The quick brown fox", "A slow red fox", meta="") == (
        "{--The quick brown--}{++A slow red++} fox"
    )


def test_rendered_example_carries_metadata_on_both_marks() -> None:
    rendered = render_suggestion("The quick brown fox", "A slow red fox", meta=META)
    marks = parse(rendered)
    assert [m.kind for m in marks] == ["deletion", "addition"]
    assert all(m.metadata == {"author": "claude", "timestamp": 1_700_000_000_000} for m in marks)
    assert rendered.endswith("++} fox")


def test_identical_texts_have_no_hunks() -> None:
    assert word_hunks("same 😀 text", "same 😀 text") == []
    assert render_suggestion("same 😀 text", "same 😀 text", meta=META) == "same 😀 text"


def test_unchanged_words_stay_plain_between_hunks() -> None:
    rendered = render_suggestion("one two three four", "one 2 three 4", meta="")
    assert rendered == "one {--two--}{++2++} three {--four--}{++4++}"


def test_pure_insertion_and_deletion() -> None:
    [insert] = word_hunks("a c", "a b c")
    assert insert.start == insert.end and insert.old == "" and insert.new.strip() == "b"
    [delete] = word_hunks("a b c", "a c")
    assert delete.new == "" and delete.old.strip() == "b"
    assert render_suggestion("a b c", "a c", meta="").count("{++") == 0
    assert render_suggestion("a c", "a b c", meta="").count("{--") == 0


@pytest.mark.parametrize(
    ("old", "new", "rendered"),
    [
        # the diff matches the final stop; the insertion moves past it, so it reads as one sentence
        ("The end.", "The end. More words.", "The end.{++ More words.++}"),
        (
            "I like tea.\nNext",
            "I like tea. I also like coffee.\nNext",
            "I like tea.{++ I also like coffee.++}\nNext",
        ),
        ("Wait!", "Wait! Then go!", "Wait!{++ Then go!++}"),
        ("Hi.\nBye.", "Hi. There.\nBye.", "Hi.{++ There.++}\nBye."),
        # already after the punctuation: left alone; never moved past a line break
        ("x, y", "x, z, y", "x, {++z, ++}y"),
        ("Stop.\n", "Stop.\nGo.\n", "Stop.\n{++Go.\n++}"),
    ],
)
def test_an_insertion_after_a_sentence_is_placed_after_its_stop(old: str, new: str, rendered: str) -> None:
    assert render_suggestion(old, new, meta="") == rendered
    assert reject_all(rendered) == old and accept_all(rendered) == new


def test_hunks_do_not_merge_across_line_breaks() -> None:
    hunks = word_hunks("# Title\n- item", "# Heading\n- entry")
    assert [(h.old, h.new) for h in hunks] == [("Title", "Heading"), ("item", "entry")]


def test_common_whitespace_is_trimmed_out_of_hunks() -> None:
    for hunk in word_hunks("alpha beta gamma", "alpha delta epsilon gamma"):
        assert not (hunk.old[:1].isspace() and hunk.old[:1] == hunk.new[:1])
        assert not (hunk.old[-1:].isspace() and hunk.old[-1:] == hunk.new[-1:])


def test_tokenize_unicode() -> None:
    assert tokenize("café naïve") == ["café", " ", "naïve"]
    assert tokenize("cafe\u0301!") == ["cafe\u0301", "!"]  # decomposed accent stays in its word
    assert tokenize("我爱北京") == ["我", "爱", "北", "京"]
    assert tokenize("hi👍🏽👨\u200d👩\u200d👧🇫🇷") == ["hi", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷"]
    assert tokenize("don't stop") == ["don't", " ", "stop"]
    sample = "Mixed: 日本語テキスト, ελληνικά\t\n 🎉!! ok_1"
    assert "".join(tokenize(sample)) == sample


def test_cjk_diff_is_per_character() -> None:
    assert word_hunks("我爱北京天安门", "我爱上海天安门") == [Hunk(2, 4, "北京", "上海")]
    rendered = render_suggestion("我爱北京天安门", "我爱上海天安门", meta="")
    assert rendered == "我爱{--北京--}{++上海++}天安门"


def test_emoji_diff_keeps_sequences_whole() -> None:
    old, new = "ship it 👍🏽 now", "ship it 👎🏿 now"
    [hunk] = word_hunks(old, new)
    assert (hunk.old, hunk.new) == ("👍🏽", "👎🏿")
    assert old[hunk.start : hunk.end] == "👍🏽"
    family_old, family_new = "a 👨\u200d👩\u200d👧 b", "a 👨\u200d👩\u200d👦 b"
    [family] = word_hunks(family_old, family_new)
    assert family.old == "👨\u200d👩\u200d👧"


def test_accented_word_changes_as_a_whole_word() -> None:
    [hunk] = word_hunks("un café noir", "un thé noir")
    assert (hunk.old, hunk.new) == ("café", "thé")


def test_suggestion_edits_are_descending_insertions_only() -> None:
    old, new = "one two three four", "one 2 three 4"
    edits = suggestion_edits(old, new, meta=META)
    assert all(e.start == e.end for e in edits)
    assert [e.start for e in edits] == sorted((e.start for e in edits), reverse=True)
    assert apply_text_edits(old, edits) == render_suggestion(old, new, meta=META)
    text = old
    for edit in edits:  # applying one by one in the given order works too
        text = text[: edit.start] + edit.insert + text[edit.end :]
    assert text == render_suggestion(old, new, meta=META)


def test_apply_text_edits_rejects_overlap() -> None:
    with pytest.raises(ValueError):
        apply_text_edits("abcdef", [TextEdit(0, 3, "x"), TextEdit(2, 4, "y")])


def test_unified_diff_headers_and_missing_newline() -> None:
    diff = unified_diff("a\nb\n", "a\nc\n", path="/notes/x.md")
    assert diff.splitlines()[:2] == ["--- a/notes/x.md", "+++ b/notes/x.md"]
    assert "-b\n+c\n" in diff
    tail = unified_diff("a", "b", path="x.md")
    assert "-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n" in tail
    assert unified_diff("same\n", "same\n", path="x.md") == ""


_WORDS = ["the", "quick", "fox", "café", "naïve", "über", "don't", "42"]
_WORDS += ["我", "爱", "北京", "🎉", "👍🏽", "🇫🇷"]
_SEPARATORS = [" ", " ", " ", "  ", "\n", "\n\n", "\t", "- ", *".,!-+{}~=><#"]
_ALPHABET = _WORDS + _SEPARATORS


def _random_text(rng: random.Random) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 25)))


def _mutate(rng: random.Random, text: str) -> str:
    tokens = tokenize(text)
    for _ in range(rng.randint(1, 4)):
        position = rng.randint(0, len(tokens))
        action = rng.choice(["insert", "delete", "replace"])
        if action == "insert" or not tokens:
            tokens.insert(position, rng.choice(_ALPHABET))
        elif action == "delete":
            del tokens[min(position, len(tokens) - 1)]
        else:
            tokens[min(position, len(tokens) - 1)] = rng.choice(_ALPHABET)
    return "".join(tokens)


@pytest.mark.parametrize("seed", range(8))
def test_render_then_accept_gives_new_and_reject_gives_old(seed: int) -> None:
    rng = random.Random(seed)
    checked = 0
    for _ in range(150):
        old = _random_text(rng)
        new = _mutate(rng, old) if rng.random() < 0.8 else _random_text(rng)
        if contains_delimiters(old) or contains_delimiters(new):
            continue  # the edit tool refuses these
        for meta in (META, ""):
            rendered = render_suggestion(old, new, meta=meta)
            assert accept_all(rendered) == new, (old, new, rendered)
            assert reject_all(rendered) == old, (old, new, rendered)
            for hunk in word_hunks(old, new):
                assert old[hunk.start : hunk.end] == hunk.old
        checked += 1
    assert checked > 100


def test_long_document_diff_stays_fast_and_exact() -> None:
    rng = random.Random(7)
    vocabulary = [f"word{i}" for i in range(2000)]
    weights = [1 / (rank + 1) for rank in range(2000)]
    paragraphs = [" ".join(rng.choices(vocabulary, weights, k=120)) for _ in range(60)]
    old = "\n\n".join(paragraphs)
    words = old.split(" ")
    for i in range(0, len(words), 97):
        words[i] = "EDITED"
    new = " ".join(words)
    started = time.thread_time()
    rendered = render_suggestion(old, new, meta=META)
    assert time.thread_time() - started < 5
    assert accept_all(rendered) == new
    assert reject_all(rendered) == old
    # One long line with scattered edits takes the large-block path and still round trips.
    line = " ".join(rng.choices(vocabulary, weights, k=4000))
    changed = line.replace(" word5 ", " WORD5 ")
    rendered_line = render_suggestion(line, changed, meta="")
    assert accept_all(rendered_line) == changed
    assert reject_all(rendered_line) == line


# -- big blocks -------------------------------------------------------------------------------------------


def test_a_block_over_the_whole_block_size_is_one_hunk_and_fast() -> None:
    old = "Intro stays here. The PLACEHOLDER goes. Outro stays too.\n"
    new_text = "".join(f"New line {n} with café and 東京 words.\n" for n in range(60_000))
    assert len(new_text) > 10 * WHOLE_BLOCK_CHARS
    new = old.replace("PLACEHOLDER", new_text)
    started = time.thread_time()  # this thread's CPU: a loaded machine stretches the wall time
    hunks = word_hunks(old, new)
    assert time.thread_time() - started < 2.0
    assert len(hunks) == 1
    [hunk] = hunks
    assert old[: hunk.start] + hunk.new + old[hunk.end :] == new
    # The shared edges are cut at word boundaries: neither side's first words are inside the hunk.
    assert old[: hunk.start].startswith("Intro stays here.") and hunk.old.strip().startswith("PLACEHOLDER")


def test_a_big_block_without_a_clean_cut_keeps_its_edges_inside() -> None:
    old = "x" * 200_000
    new = "x" * 100_000 + "y" + "x" * 100_000
    [hunk] = word_hunks(old, new)
    assert old[: hunk.start] + hunk.new + old[hunk.end :] == new
