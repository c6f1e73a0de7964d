"""YAML frontmatter and structural statistics of a markdown document.

Frontmatter is the YAML between a first line ``---`` and the next line that is ``---`` or ``...``
(trailing blanks and a "\\r" allowed on both, a leading byte-order mark ignored). Without a closing
line there is no frontmatter: the ``---`` is a thematic break, as in Obsidian.

The YAML is read with PyYAML's safe loader, adjusted towards YAML 1.2 as Obsidian reads it: only
true/false are booleans (``yes``, ``no``, ``on``, ``off`` stay text), ``10:30`` stays text rather
than becoming the sexagesimal 630, and ``007`` stays text. Dates become ISO strings, so the result
is always JSON-serialisable.
"""

from __future__ import annotations

import base64
import math
import re
from datetime import date, datetime
from typing import Any

import regex
import yaml

from lensrelay.text.lines import line_count
from lensrelay.text.wikilinks import extract_wikilinks

_OPENING = re.compile(r"\A\ufeff?---[ \t]*\r?(?:\n|\Z)")
_CLOSING = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)

# Limits on what a frontmatter may expand to (YAML aliases can nest a small text into a huge or
# even self-referencing structure).
_MAX_NODES = 10_000
_MAX_DEPTH = 64

_BOOL_TAG = "tag:yaml.org,2002:bool"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core-schema booleans and numbers."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag not in (_BOOL_TAG, _INT_TAG, _FLOAT_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_Loader.add_implicit_resolver(
    _INT_TAG, re.compile(r"^(?:[-+]?(?:0|[1-9][0-9]*)|0x[0-9a-fA-F]+)$"), list("-+0123456789")
)
_Loader.add_implicit_resolver(
    _FLOAT_TAG,
    re.compile(
        r"^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]))(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


class _TooBig(Exception):
    pass


def locate_frontmatter(text: str) -> tuple[int, int, int] | None:
    """(yaml_start, yaml_end, body_start) offsets in ``text``, or None without frontmatter."""
    opening = _OPENING.match(text)
    if opening is None:
        return None
    closing = _CLOSING.search(text, opening.end())
    if closing is None:
        return None
    body_start = closing.end()
    if text.startswith("\n", body_start):
        body_start += 1
    return opening.end(), closing.start(), body_start


def split_frontmatter(text: str) -> tuple[dict[str, Any] | None, str, str | None]:
    """(data, body, error). Never raises.

    No frontmatter: (None, text, None). Valid: (mapping, body, None), an empty block giving {}.
    Invalid YAML, or YAML that is not a mapping: (None, body, a message saying what is wrong).
    """
    located = locate_frontmatter(text)
    if located is None:
        return None, text, None
    yaml_start, yaml_end, body_start = located
    body = text[body_start:]
    try:
        loaded = yaml.load(text[yaml_start:yaml_end], Loader=_Loader)  # _Loader is a SafeLoader
    except yaml.MarkedYAMLError as error:
        problem = error.problem or error.context or "could not be parsed"
        mark = error.problem_mark or error.context_mark
        where = f" (line {mark.line + 2} of the document)" if mark is not None else ""
        return None, body, f"Invalid YAML in frontmatter{where}: {problem}."
    except Exception as error:  # deeply nested input can raise RecursionError and the like
        return None, body, f"Invalid YAML in frontmatter: {error}."
    if loaded is None:
        return {}, body, None
    if not isinstance(loaded, dict):
        kind = "a list" if isinstance(loaded, list) else f"a single value ({type(loaded).__name__})"
        return (
            None,
            body,
            f"Frontmatter must be a mapping of properties (key: value lines), but it is {kind}.",
        )
    try:
        return _json_safe_mapping(loaded, [0], 0), body, None
    except _TooBig:
        return None, body, "Frontmatter is too large or too deeply nested to read."


def _json_safe_mapping(mapping: dict[Any, Any], budget: list[int], depth: int) -> dict[str, Any]:
    return {_json_key(key): _json_safe(value, budget, depth + 1) for key, value in mapping.items()}


def _json_safe(value: Any, budget: list[int], depth: int) -> Any:
    budget[0] += 1
    if budget[0] > _MAX_NODES or depth > _MAX_DEPTH:
        raise _TooBig
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return _json_safe_mapping(value, budget, depth)
    if isinstance(value, (set, frozenset)):
        return [_json_safe(item, budget, depth + 1) for item in sorted(value, key=str)]
    if isinstance(value, (list, tuple)):
        return [_json_safe(item, budget, depth + 1) for item in value]
    return str(value)


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, (datetime, date)):
        return key.isoformat()
    return str(key)


# -- statistics ---------------------------------------------------------------------------------

_FENCE = re.compile(r"^[ \t]*(?:>[ \t]*)*(`{3,}|~{3,})(.*)$")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
_TASK = re.compile(r"^[ \t]*(?:>[ \t]*)*(?:[-*+]|[0-9]{1,9}[.)])[ \t]+\[([ xX])\](?:[ \t]|$)")
# Han, kana: one word per character, as Obsidian counts them; other words are runs of non-space
# holding a letter or digit (so "#" or "-" alone is no word).
_CJK = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}]")
_NON_CJK_RUN = regex.compile(r"[^\s\p{Han}\p{Hiragana}\p{Katakana}]+")
_HAS_LETTER = regex.compile(r"[\p{L}\p{N}]")


def document_stats(text: str) -> dict[str, Any]:
    """Structure of a markdown document.

    ``words`` and ``characters`` count the body (frontmatter excluded, as Obsidian's word count);
    ``lines`` counts the whole document as read numbers it, and heading ``line`` numbers use that
    numbering. ``headings`` are ATX (``#``) headings outside fenced code; ``code_blocks`` counts
    fenced blocks (an unclosed one runs to the end); ``wikilinks`` counts ``[[...]]`` and
    ``![[...]]`` outside code, frontmatter included, as get_links sees them; ``tasks`` counts list
    items ``[ ]`` (open) and ``[x]`` (done) outside code.
    """
    located = locate_frontmatter(text)
    body_start = located[2] if located is not None else 0
    body = text[body_start:]
    first_body_line = text.count("\n", 0, body_start) + 1

    headings: list[dict[str, Any]] = []
    code_blocks = 0
    open_tasks = done_tasks = 0
    fence_char, fence_len = "", 0
    for number, raw in enumerate(body.split("\n"), start=first_body_line):
        line = raw[:-1] if raw.endswith("\r") else raw
        fence = _FENCE.match(line)
        if fence_char:
            closes = fence and fence.group(1)[0] == fence_char and len(fence.group(1)) >= fence_len
            if closes and fence is not None and not fence.group(2).strip():
                fence_char = ""
            continue
        if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
            fence_char, fence_len = fence.group(1)[0], len(fence.group(1))
            code_blocks += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            title = _CLOSING_HASHES.sub("", heading.group(2) or "").strip()
            headings.append({"level": len(heading.group(1)), "text": title, "line": number})
            continue
        task = _TASK.match(line)
        if task:
            if task.group(1) == " ":
                open_tasks += 1
            else:
                done_tasks += 1

    words = len(_CJK.findall(body)) + sum(1 for run in _NON_CJK_RUN.findall(body) if _HAS_LETTER.search(run))
    return {
        "words": words,
        "characters": len(body),
        "lines": line_count(text),
        "headings": headings,
        "code_blocks": code_blocks,
        "wikilinks": len(extract_wikilinks(text)),
        "tasks": {"open": open_tasks, "done": done_tasks},
    }
