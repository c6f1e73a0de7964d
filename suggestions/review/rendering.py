"""A note as a reviewer reads it: Markdown rendered to sanitized HTML, pending suggestions shown in place.

The note's own text never becomes markup: raw HTML is escaped by the Markdown renderer (``html`` off),
links are limited to safe schemes, and the result passes an allowlist sanitizer (nh3) at the end. The
suggestion marks are carried through the renderer as private-use characters and only turned into
``<del>``/``<ins>`` tags afterwards, so nothing a writer types can forge a mark or an attribute.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import nh3

from lensrelay.links.resolve import LinkIndex, LinkTarget
from suggestions.markup.accepted_view import build_accepted_view
from suggestions.markup.criticmarkup import Change, parse_changes, reject_all

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_inline import StateInline

# Placeholders: one private-use character names the piece, one from plane 15 numbers the change.
_DEL_OPEN, _DEL_CLOSE, _INS_OPEN, _INS_CLOSE, _BADGE, _HL_OPEN, _HL_CLOSE = (
    chr(0xE000 + i) for i in range(7)
)
_KINDS = _DEL_OPEN + _DEL_CLOSE + _INS_OPEN + _INS_CLOSE + _BADGE + _HL_OPEN + _HL_CLOSE
_INDEX_BASE = 0xF0000
MAX_MARKED_CHANGES = 0xFFFD
_PLACEHOLDER_RE = re.compile(f"([{_KINDS}])([\U000f0000-\U000ffffd])")
_STRAY_RE = re.compile(f"[{_KINDS}\U000f0000-\U000ffffd]")
# Block syntax at a line's start (headings, quotes, list items) must stay first for Markdown to see it.
_BLOCK_PREFIX_RE = re.compile(r"[ \t]*(?:(?:#{1,6}|>|[-*+]|\d{1,9}[.)])[ \t]+)*")

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
    "i", "ins", "li", "mark", "ol", "p", "pre", "s", "span", "strong", "sub", "sup", "table",
    "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "class"},
    "del": {"class", "data-uid", "data-change"},
    "ins": {"class", "data-uid", "data-change"},
    "mark": {"class", "data-uid", "data-change"},
    "sup": {"class", "data-uid", "data-change"},
    "td": {"style"},
    "th": {"style"},
    "span": {"class"},
}
SAFE_URL_SCHEMES = {"http", "https", "mailto"}

LinkResolver = Callable[[str], "str | None"]


@dataclass(frozen=True)
class FolderLinks:
    """Where a note's wikilinks may lead, as plain values a heavy-work process can take: the note itself
    and each document of its folder with the URL a link to it gets."""

    source: LinkTarget
    urls: dict[LinkTarget, str]

    def resolver(self) -> LinkResolver:
        index = LinkIndex(self.urls)

        def resolve(target: str) -> str | None:
            found = index.resolve(source=self.source, target=target).target if target else None
            return self.urls.get(found) if found is not None else None

        return resolve


@dataclass(frozen=True)
class RenderedNote:
    """The note three ways: with the suggestions in place, as if all were accepted, as if none were.

    ``numbers`` gives each change its mark's number: the changes of one suggestion share one.
    """

    marked: str
    accepted: str
    rejected: str
    changes: list[Change]
    numbers: list[int]

    def number_of(self, uid: str) -> int | None:
        for change, number in zip(self.changes, self.numbers, strict=True):
            if suggestion_uid(change) == uid:
                return number
        return None


def _numbers(changes: list[Change], numbering: dict[str, int] | None = None) -> list[int]:
    """1, 2, 3… in order of appearance, one number per suggestion id (changes without one count alone);
    ``numbering`` fixes the numbers of the ids it names, the others follow its highest."""
    given: dict[str, int] = dict(numbering or {})
    following = max(given.values(), default=0) + 1
    numbers = []
    for index, change in enumerate(changes):
        uid = suggestion_uid(change) or f"#{index}"
        if uid not in given:
            given[uid], following = following, following + 1
        numbers.append(given[uid])
    return numbers


def suggestion_uid(change: Change) -> str:
    for mark in change.all_marks:
        uid = (mark.metadata or {}).get("id")
        if isinstance(uid, str):
            return uid
    return ""


def _wikilink_rule(resolve: LinkResolver | None) -> Callable[[StateInline, bool], bool]:
    def wikilink(state: StateInline, silent: bool) -> bool:
        start = state.pos
        embed = state.src.startswith("![[", start)
        opening = start + (3 if embed else 2)
        if not (embed or state.src.startswith("[[", start)):
            return False
        end = state.src.find("]]", opening)
        if end < 0 or "\n" in state.src[opening:end]:
            return False
        body = state.src[opening:end]
        target, _, alias = body.partition("|")
        label = alias or target
        if not silent:
            href = resolve(_STRAY_RE.sub("", target.split("#")[0]).strip()) if resolve else None
            if href is not None:
                token = state.push("link_open", "a", 1)
                token.attrs = {"href": href, "class": "wikilink"}
            else:
                token = state.push("span_open", "span", 1)
                token.attrs = {"class": "wikilink unresolved"}
            text = state.push("text", "", 0)
            text.content = label
            state.push("link_close" if href is not None else "span_close", "a" if href else "span", -1)
        state.pos = end + 2
        return True

    return wikilink


def _renderer(resolve: LinkResolver | None) -> MarkdownIt:
    # Imported on first render: the review page is rarely the first thing asked of a fresh process,
    # and markdown-it adds ~0.2 s to every start-up (the admin imports this module).
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table").enable("strikethrough")
    md.inline.ruler.before("link", "wikilink", _wikilink_rule(resolve))
    return md


_FRONTMATTER_RE = re.compile(r"\A---[ \t]*\n(.*?\n)?---[ \t]*(?:\n|\Z)", flags=re.S)


def _markdown_source(text: str) -> str:
    """YAML frontmatter reads as a code block, not as a rule, a list and a heading."""
    return _FRONTMATTER_RE.sub(lambda m: "```yaml\n" + (m.group(1) or "") + "```\n", text, count=1)


def _sanitize(html: str) -> str:
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=SAFE_URL_SCHEMES,
        link_rel="noopener noreferrer",
        strip_comments=True,
    )


def markdown_html(text: str, *, resolve: LinkResolver | None = None) -> str:
    """Plain Markdown (no suggestions) as sanitized HTML."""
    return _sanitize(_renderer(resolve).render(_markdown_source(_STRAY_RE.sub("", text))))


def _wrapped(content: str, opening: str, closing: str, index: int) -> str:
    """``content`` between placeholders, closed and reopened around line breaks so no tag spans blocks,
    and reopened after a line's block syntax (``# ``, ``- ``, ``> ``) so Markdown still sees it."""
    number = chr(_INDEX_BASE + index)
    lines = content.split("\n")
    pieces: list[str] = []
    for position, line in enumerate(lines):
        if not line:
            pieces.append(line)
            continue
        block = _BLOCK_PREFIX_RE.match(line) if position > 0 else None
        prefix = block.group() if block is not None else ""
        body = line[len(prefix) :]
        pieces.append(prefix + (opening + number + body + closing + number if body else ""))
    return "\n".join(pieces)


def _marked_source(raw: str, changes: list[Change]) -> str:
    pieces: list[str] = []
    position = 0
    for index, change in enumerate(changes):
        pieces.append(raw[position : change.start])
        position = change.end
        if index >= MAX_MARKED_CHANGES:
            continue
        if change.kind == "highlight":
            pieces.append(_wrapped(change.old, _HL_OPEN, _HL_CLOSE, index))
        else:
            pieces.append(_wrapped(change.old, _DEL_OPEN, _DEL_CLOSE, index))
            pieces.append(_wrapped(change.new, _INS_OPEN, _INS_CLOSE, index))
        pieces.append(_BADGE + chr(_INDEX_BASE + index))
    pieces.append(raw[position:])
    # A line that starts with a mark keeps its block syntax ahead of the placeholder.
    return re.sub(
        f"(^|\n)([{_KINDS}][\U000f0000-\U000ffffd])({_BLOCK_PREFIX_RE.pattern})",
        lambda m: m.group(1) + m.group(3) + m.group(2),
        "".join(pieces),
    )


def _tags_for(changes: list[Change], numbers: list[int]) -> Callable[[re.Match[str]], str]:
    def tag(match: re.Match[str]) -> str:
        kind, index = match.group(1), ord(match.group(2)) - _INDEX_BASE
        if index >= len(changes):
            return ""
        uid, number = suggestion_uid(changes[index]), numbers[index]
        attrs = f'data-change="{number}" data-uid="{uid}"'  # digits and an id checked by _safe_uid
        return {
            _DEL_OPEN: f'<del class="sg sg-del" {attrs}>',
            _DEL_CLOSE: "</del>",
            _INS_OPEN: f'<ins class="sg sg-ins" {attrs}>',
            _INS_CLOSE: "</ins>",
            _HL_OPEN: f'<mark class="sg sg-hl" {attrs}>',
            _HL_CLOSE: "</mark>",
            _BADGE: f'<sup class="sg-badge" {attrs}>{number}</sup>',
        }[kind]

    return tag


def _safe_uid(change: Change) -> bool:
    return re.fullmatch(r"[0-9A-Za-z_-]{0,64}", suggestion_uid(change)) is not None


def shown_changes(raw: str) -> list[Change]:
    """The changes :func:`render_note` shows for ``raw`` (those with an id fit for an attribute), without
    rendering anything."""
    return [c for c in parse_changes(_STRAY_RE.sub("", raw)) if _safe_uid(c)]


def render_note(
    raw: str, *, resolve: LinkResolver | None = None, numbering: dict[str, int] | None = None
) -> RenderedNote:
    """Render a note's raw text (CriticMarkup included) for review; ``numbering`` gives suggestion ids
    their numbers (by default 1, 2, 3… in order of appearance)."""
    md = _renderer(resolve)
    clean = _STRAY_RE.sub("", raw)
    changes = shown_changes(clean)
    numbers = _numbers(changes, numbering)
    html = md.render(_markdown_source(_marked_source(clean, changes)))
    marked = _sanitize(_PLACEHOLDER_RE.sub(_tags_for(changes, numbers), html))
    return RenderedNote(
        marked=_STRAY_RE.sub("", marked),
        accepted=_sanitize(md.render(_markdown_source(build_accepted_view(clean).text))),
        rejected=_sanitize(md.render(_markdown_source(reject_all(clean)))),
        changes=changes,
        numbers=numbers,
    )


def render_note_linked(raw: str, links: FolderLinks | None, numbering: dict[str, int] | None) -> RenderedNote:
    """:func:`render_note` with the note's wikilinks resolved in its folder: what a heavy-work process runs
    for the review page of a long note (``lensrelay.docstore.offload``)."""
    return render_note(raw, resolve=links.resolver() if links is not None else None, numbering=numbering)


def change_summary(change: Change) -> dict[str, Any]:
    """What a suggestion card shows beside the note."""
    return {
        "uid": suggestion_uid(change),
        "kind": change.kind,
        "old": change.old,
        "new": change.new,
        "author": change.author or "unknown",
        "timestamp_ms": change.timestamp_ms,
        "comment": change.comment.content if change.comment is not None else "",
    }
