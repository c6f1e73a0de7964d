"""Frontmatter property queries for property_search: ``{"status": "draft", "tags": ["a", "b"]}``.

Every key must match (AND); a list in the query matches when any of its values does (OR). A
list-valued property matches when any of its items does. Text compares case-insensitively (and
ignoring surrounding blanks); numbers and booleans compare by value, and also match their text
form ("2" matches 2, "true" matches true). A missing key never matches. Keys are looked up
exactly first, then case-insensitively.

``tags``/``tag`` are special, as in Obsidian: a leading ``#`` is ignored on either side, a tag
matches its nested tags (``project`` matches ``project/work``), and a text value such as
``"a, b"`` or ``"#a #b"`` is read as a list of tags.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

_TAG_KEYS = frozenset({"tags", "tag"})
_TAG_SEPARATORS = re.compile(r"[,\s]+")

Scalar = str | int | float | bool | None


def validate_property_query(query: Any) -> dict[str, Any]:
    """The query as a dict, or ValueError saying what is wrong with it."""
    example = 'for example {"status": "draft"} or {"tags": ["urgent", "important"]}'
    if not isinstance(query, Mapping):
        raise ValueError(f"properties must be an object of property names to values, {example}.")
    if not query:
        raise ValueError(f"properties must name at least one property, {example}.")
    checked: dict[str, Any] = {}
    for key, value in query.items():
        if not isinstance(key, str) or not key.strip():
            raise ValueError("property names must be non-empty strings.")
        if isinstance(value, list):
            if not value:
                raise ValueError(f"property {key!r}: an empty list matches nothing; give at least one value.")
            for item in value:
                _check_scalar(key, item, in_list=True)
        else:
            _check_scalar(key, value, in_list=False)
        checked[key] = value
    return checked


def _check_scalar(key: str, value: Any, *, in_list: bool) -> None:
    if value is None or isinstance(value, (str, bool, int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"property {key!r}: {value} is not a usable number.")
        return
    where = "list items" if in_list else "values"
    raise ValueError(
        f"property {key!r}: {where} must be text, numbers, booleans or null, not {type(value).__name__}."
    )


def matches_properties(frontmatter: Mapping[str, Any] | None, query: Mapping[str, Any]) -> bool:
    """True when ``frontmatter`` satisfies every key of ``query`` (see the module docstring)."""
    if not frontmatter:
        return False
    for key, wanted in query.items():
        found, value = _lookup(frontmatter, key)
        if not found:
            return False
        is_tag = key.strip().casefold() in _TAG_KEYS
        options = wanted if isinstance(wanted, list) else [wanted]
        if not any(_value_matches(value, option, is_tag) for option in options):
            return False
    return True


def _lookup(frontmatter: Mapping[str, Any], key: str) -> tuple[bool, Any]:
    if key in frontmatter:
        return True, frontmatter[key]
    folded = key.strip().casefold()
    for name, value in frontmatter.items():
        if isinstance(name, str) and name.strip().casefold() == folded:
            return True, value
    return False, None


def _value_matches(value: Any, wanted: Scalar, is_tag: bool) -> bool:
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_value_matches(item, wanted, is_tag) for item in value)
    if is_tag and isinstance(value, str) and isinstance(wanted, str):
        return any(_tag_matches(tag, wanted) for tag in _TAG_SEPARATORS.split(value) if tag)
    return _scalar_equal(value, wanted)


def _tag_matches(tag: str, wanted: str) -> bool:
    have = tag.strip().lstrip("#").casefold()
    want = wanted.strip().lstrip("#").casefold()
    return bool(want) and (have == want or have.startswith(want + "/"))


def _scalar_equal(value: Any, wanted: Scalar) -> bool:
    if isinstance(value, (datetime, date)):
        value = value.isoformat()
    if wanted is None or value is None:
        return wanted is None and value is None
    if isinstance(wanted, bool) or isinstance(value, bool):
        return _as_bool(value) is not None and _as_bool(value) == _as_bool(wanted)
    if isinstance(wanted, (int, float)) or isinstance(value, (int, float)):
        number_value, number_wanted = _as_number(value), _as_number(wanted)
        return number_value is not None and number_value == number_wanted
    if isinstance(value, str) and isinstance(wanted, str):
        return value.strip().casefold() == wanted.strip().casefold()
    return False


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().casefold()
        if text in ("true", "false"):
            return text == "true"
    return None


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None
