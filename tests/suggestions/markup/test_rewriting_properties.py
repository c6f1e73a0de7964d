"""Property tests of the suggestion engine's core: generated documents holding pending insertions,
deletions, substitutions, highlights, people's and assistants' comments, code fences, emoji, CJK,
combining marks and long lines, with generated edit / multi_edit / write changes of their accepted view.

For every plan: (a) the accepted view comes out exactly as requested, (b) the base view is unchanged,
comments are byte-identical, other suggestions' marks are byte-identical, no mark holds a delimiter, the
new suggestion's marks never meet (one change reads as one mark),
and deciding every suggestion one by one, in any order, accepting or rejecting each, gives the text the
same decisions give all at once.

Examples per test come from ``HYPOTHESIS_PROFILE`` (see engine_profiles): ``ci``, the default, runs 700
per test, 3,500 in all, in about a minute; ``dev`` runs few, ``deep`` many.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

from hypothesis import assume, event, given
from hypothesis import strategies as st

from suggestions.errors import SuggestionError
from suggestions.markup.criticmarkup import (
    DELIMITERS,
    accept_edits,
    apply_spans,
    mark_id,
    own_changes,
    parse,
    reject_edits,
    render_metadata,
    resolve,
)
from suggestions.markup.rewriting import ONLY_UNDOES, accepted_of, base_of, plan_suggestion
from tests.suggestions.engine_profiles import PURE

UID = "newsuggestion01"
META = render_metadata("claude-review", 1_700_000_000_000, suggestion_id=UID)
AUTHORS = {
    "a1": "gpt",
    "a2": "claude",
    "a3": "claude",
    "a9": "claude",
}  # a2 and a3: the same assistant's earlier ones

# Plain text never holds "{", "}", "~" or ">", so no delimiter can form in it by accident.
WORDS = st.sampled_from(
    [
        "the", "quick", "brown", "fox", "café", "naïve", "e\u0301t\u00e9", "光合作用", "東京",
        "😀", "👩‍👩‍👧", "🇫🇷", "x+y", "a-b", "<x", "@me", "==", "don't", "```", "```py",
        "- item", "# Heading", "| a | b |", "1.", "x" * 300,
    ]
)  # fmt: skip
SEPARATORS = st.sampled_from([" ", " ", " ", "  ", "\n", "\n\n", "\t", ", ", ". "])


@st.composite
def plain(draw: st.DrawFn, min_words: int = 1) -> str:
    words = draw(st.lists(WORDS, min_size=min_words, max_size=6))
    return "".join(word + draw(SEPARATORS) for word in words)


def meta_of(key: str) -> str:
    return render_metadata(AUTHORS[key], 1_600_000_000_000, suggestion_id=key)


@st.composite
def mark(draw: st.DrawFn) -> str:
    kind = draw(
        st.sampled_from(
            [
                "insert",
                "delete",
                "replace",
                "substitution",
                "human comment",
                "assistant comment",
                "human insert",
            ]
        )
    )
    key = draw(st.sampled_from(sorted(AUTHORS)))
    meta = meta_of(key)
    text = draw(plain()).rstrip() or "w"
    other = draw(plain()).rstrip() or "v"
    templates = {
        "insert": "{{++{meta}{text}++}}",
        "delete": "{{--{meta}{text}--}}",
        "replace": "{{--{meta}{text}--}}{{++{meta}{other}++}}",
        "substitution": "{{~~{text}~>{other}~~}}",
        "human comment": "{{>>{text}<<}}",
        "human insert": "{{++{text}++}}",
        "assistant comment": "{{>>{meta}{text}<<}}",
        "highlight": "{{=={text}==}}",
    }
    return templates[kind].format(meta=meta, text=text, other=other)


@st.composite
def document(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(st.one_of(plain(), mark()), min_size=1, max_size=8))
    return "".join(pieces)


@dataclass(frozen=True)
class Change:
    start: int
    end: int
    new: str


@st.composite
def replacements(draw: st.DrawFn, view: str, count: int) -> list[Change]:
    """Up to ``count`` disjoint replacements of ``view`` (an edit, or a multi_edit)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(view)), min_size=2 * count, max_size=2 * count)))
    changes = []
    for k in range(count):
        start, end = cuts[2 * k], cuts[2 * k + 1]
        new = draw(st.one_of(st.just(""), plain(), WORDS))
        changes.append(Change(start, end, new))
    return changes


def applied(view: str, changes: list[Change]) -> str:
    pieces, position = [], 0
    for change in changes:
        pieces += [view[position : change.start], change.new]
        position = change.end
    pieces.append(view[position:])
    return "".join(pieces)


def comments(raw: str) -> list[str]:
    return [raw[m.start : m.end] for m in parse(raw) if m.kind == "comment" and mark_id(m) is None]


def decide_one_by_one(raw: str, order: list[tuple[str, bool]]) -> str:
    """Each suggestion decided alone, as the admin does: only its own marks, found by its id."""
    for uid, accept in order:
        changes = own_changes(raw, uid)
        spans = [s for c in changes for s in (accept_edits(raw, c) if accept else reject_edits(raw, c))]
        raw = apply_spans(raw, spans)
    return raw


def meeting(raw: str) -> list[tuple[str, str]]:
    """Marks of one suggestion that stand side by side as anything but a deletion and its insertion."""
    marks = [m for m in parse(raw) if mark_id(m) is not None and m.kind != "comment"]
    return [
        (raw[first.start : first.end], raw[second.start : second.end])
        for first, second in itertools.pairwise(marks)
        if first.end == second.start
        and mark_id(first) == mark_id(second)
        and (first.kind, second.kind) != ("deletion", "addition")
    ]


def check_plan(raw: str, new_view: str, data: st.DataObject) -> None:
    try:
        plan = plan_suggestion(raw, new_view, meta=META, uid=UID)
    except SuggestionError as exc:
        # The only refusal plain text can meet: the change just takes back earlier suggestions.
        assert str(exc).startswith(ONLY_UNDOES.split("{")[0]), str(exc)
        event("refused: only takes back earlier suggestions")
        return
    event(f"superseded {len(plan.superseded)}")
    after = plan.raw
    assert accepted_of(after) == new_view
    assert base_of(after) == base_of(raw)
    assert comments(after) == comments(raw)
    for m in parse(after):
        body = after[m.content_start : m.end - 3]
        assert not any(d in body for d in DELIMITERS if d != "~>"), (m, after)
    untouched = [after[m.start : m.end] for m in parse(after) if mark_id(m) not in (UID, None)]
    before = {raw[m.start : m.end] for m in parse(raw)}
    assert all(piece in before for piece in untouched)
    assert not set(plan.superseded) & {mark_id(m) for m in parse(after)}
    # One change reads as one mark: the new suggestion's marks never meet, but for a deletion followed by
    # its insertion ({--quick brown--}{++slow++}, never {--quick--}{-- brown--} or {++a++}{++b++}), unless
    # the document already held such a pair (superseded marks outside the change only take its metadata).
    if not meeting(raw):
        assert not meeting(after), after
    # Deciding every suggestion alone, in any order, equals deciding them all at once.
    ids = sorted({i for m in parse(after) if (i := mark_id(m)) is not None})
    order = data.draw(st.permutations(ids))
    verdicts = {uid: data.draw(st.booleans()) for uid in ids}
    decided = decide_one_by_one(after, [(uid, verdicts[uid]) for uid in order])
    people = data.draw(st.booleans())  # people's own marks (no id): accepted or rejected too

    def verdict(m: object) -> bool:
        uid = mark_id(m)  # type: ignore[arg-type]
        return people if uid is None else verdicts[uid]

    assert resolve(decided, verdict) == resolve(after, verdict)
    assert comments(decided) == comments(raw)
    people_marks = [[r[m.start : m.end] for m in parse(r) if mark_id(m) is None] for r in (raw, after)]
    if verdicts.get(UID) is False and people_marks[0] == people_marks[1]:
        # Rejecting the new suggestion leaves what the others' decisions make of the original text.
        others = {uid: v for uid, v in verdicts.items() if uid != UID}
        expect = resolve(raw, lambda m: people if mark_id(m) is None else others.get(mark_id(m), False))
        assert resolve(decided, verdict) == expect


@PURE
@given(raw=document(), data=st.data())
def test_an_edit_keeps_both_views_and_every_other_suggestion(raw: str, data: st.DataObject) -> None:
    view = accepted_of(raw)
    new_view = applied(view, data.draw(replacements(view, 1)))
    assume(new_view != view)
    check_plan(raw, new_view, data)


@PURE
@given(raw=document(), data=st.data(), count=st.integers(2, 4))
def test_a_multi_edit_keeps_both_views_and_every_other_suggestion(
    raw: str, data: st.DataObject, count: int
) -> None:
    view = accepted_of(raw)
    new_view = applied(view, data.draw(replacements(view, count)))
    assume(new_view != view)
    check_plan(raw, new_view, data)


@PURE
@given(raw=document(), data=st.data())
def test_a_write_keeps_both_views_and_every_other_suggestion(raw: str, data: st.DataObject) -> None:
    view = accepted_of(raw)
    new_view = data.draw(st.one_of(document().map(accepted_of), plain(), st.just(view[::-1])))
    assume(new_view != view)
    check_plan(raw, new_view, data)


@PURE
@given(raw=document(), data=st.data())
def test_an_edit_of_an_edit_supersedes_and_carries_the_base_forward(raw: str, data: st.DataObject) -> None:
    """Two suggestions in a row by the same assistant: the second is planned on the first's result."""
    view = accepted_of(raw)
    first_view = applied(view, data.draw(replacements(view, 1)))
    assume(first_view != view)
    try:
        first = plan_suggestion(raw, first_view, meta=meta_of("a2").replace("a2", "a9"), uid="a9")
    except SuggestionError:
        return
    second_view = applied(first_view, data.draw(replacements(first_view, 1)))
    assume(second_view != first_view)
    check_plan(first.raw, second_view, data)


FRAGMENTS = st.sampled_from(
    ["{", "}", "+", "-", "{+", "+}", "-}", "{-", "++", "--", "@@", "~", ">", "<", " ", "a"]
)


@st.composite
def fragments(draw: st.DrawFn) -> str:
    return "".join(draw(st.lists(FRAGMENTS, min_size=1, max_size=6)))


def delimiter_count(text: str) -> int:
    return sum(len(re.findall(f"(?={re.escape(d)})", text)) for d in DELIMITERS)


def assert_no_decisions_forge(raw: str, new_view: str) -> str:
    """Planned, or refused: whatever the reviewers decide, every mix of verdicts on the other
    suggestions and on people's marks, no more delimiters appear than the same decisions give without
    the new suggestion."""
    try:
        plan = plan_suggestion(raw, new_view, meta=META, uid=UID)
    except SuggestionError:
        return "refused"
    ids = sorted({i for m in parse(plan.raw) if (i := mark_id(m)) is not None and i != UID})
    for people, *verdicts in itertools.product((True, False), repeat=len(ids) + 1):
        decided = dict(zip(ids, verdicts, strict=True))

        def others(m: Any, people: bool = people, decided: dict[str, bool] = decided) -> bool:
            uid = mark_id(m)
            return people if uid is None else decided.get(uid, False)

        before = resolve(raw, others)
        after = resolve(plan.raw, lambda m: True if mark_id(m) == UID else others(m))
        assert delimiter_count(after) <= delimiter_count(before), (raw, new_view, plan.raw, decided, people)
    return "written"


@PURE
@given(raw=document(), data=st.data())
def test_no_decision_can_bring_out_markup_that_was_not_there(raw: str, data: st.DataObject) -> None:
    """New text made of delimiter halves, next to others' pending marks."""
    view = accepted_of(raw)
    changes = data.draw(replacements(view, data.draw(st.integers(1, 3))))
    new_view = applied(view, [Change(c.start, c.end, data.draw(fragments())) for c in changes])
    assume(new_view != view)
    event(assert_no_decisions_forge(raw, new_view))


def test_no_decision_forges_on_what_ci_found() -> None:
    # A deletion accepted and a person's substitution rejected leave "==" after the new "{".
    assert assert_no_decisions_forge(f"{{--{meta_of('a1')}the--}}{{~~==~>the~~}}", "{the") == "refused"
