"""People in suggesting mode on a socket: every update their editor sends is checked before the document
sees it, and what it may change is decided by the app that knows CriticMarkup.

A person's socket suggests when they may suggest but not edit live (the permission *Can suggest changes to
documents*: they are always in it), or when someone who may edit live asks for it (`?suggesting=1` on the
socket's URL: the editor's toggle). lensrelay knows nothing of marks: the suggestions app registers
the rule (suggestions.lifecycle.suggesting) when it starts; without it, every suggesting update is
refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qs

from pycrdt import Doc, Map, Text

from lensrelay.access.auth import Access
from lensrelay.docstore.frontmattermap import FRONTMATTER_MAP
from lensrelay.docstore.rehearsal import UpdateDeclined
from lensrelay.docstore.room import Room
from lensrelay.docstore.texts import CONTENTS
from lensrelay.docstore.writers import USERS
from lensrelay.models import ApiToken

SUGGESTING_PARAMETER = "suggesting"


@dataclass(frozen=True)
class Person:
    """Who a suggesting session types for: their marks carry the user id and name them by username."""

    user_id: int
    username: str


class SuggestingRule(Protocol):
    def check(self, before: str, after: str, person: Person) -> None:
        """Raise UpdateDeclined, saying why, unless going from `before` to `after` only adds or changes
        the person's own marks."""

    def suggested(self, room: Room[Any], person: Person) -> None:
        """Called after a checked update was applied (rows for new marks are made from here)."""


class _NoRule:
    def check(self, before: str, after: str, person: Person) -> None:
        raise UpdateDeclined("this server cannot take suggestions typed in the editor")

    def suggested(self, room: Room[Any], person: Person) -> None:
        return None


_rule: SuggestingRule = _NoRule()


def set_suggesting_rule(rule: SuggestingRule) -> None:
    global _rule
    _rule = rule


def suggesting_rule() -> SuggestingRule:
    return _rule


def suggesting_person(access: Access, scope: dict[str, Any]) -> Person | None:
    """The person this socket suggests for, or None when it does not suggest: tokens never do (assistants
    suggest over MCP), people who may edit live only when their editor asks."""
    if access.user_id is None or access.token_id is not None:
        return None
    if access.role == ApiToken.Role.SUGGEST:
        return Person(user_id=access.user_id, username=access.name)
    query = parse_qs(scope.get("query_string", b"").decode(errors="replace"))
    if access.can_write_live and (query.get(SUGGESTING_PARAMETER) or [""])[0] == "1":
        return Person(user_id=access.user_id, username=access.name)
    return None


def suggesting_check(person: Person) -> Callable[[Doc[Any], Doc[Any]], None]:
    """The check `Room.apply_update` runs on a suggesting session's update: its text changes go to the
    rule; its own entry of `users` may change (its editor names its client id there); no other part of
    the document may change (a new shared type, Relay's frontmatter map, another person's entry)."""

    def check(live: Doc[Any], tried: Doc[Any]) -> None:
        roots, tried_roots = set(live.keys()), set(tried.keys())
        if tried_roots - roots - {CONTENTS, USERS}:
            raise UpdateDeclined("only the note's text can be changed")
        if FRONTMATTER_MAP in roots and (
            tried.get(FRONTMATTER_MAP, type=Map).to_py() != live.get(FRONTMATTER_MAP, type=Map).to_py()
        ):
            raise UpdateDeclined("only the note's text can be changed")
        if USERS in tried_roots:
            _check_users(_users(live, roots), tried.get(USERS, type=Map).to_py() or {}, person.username)
        before, after = str(live.get(CONTENTS, type=Text)), str(tried.get(CONTENTS, type=Text))
        if before != after:
            _rule.check(before, after, person)

    return check


# A PermanentUserData entry: a person's client ids (one per browser tab) and their deletions.
_MAX_USER_IDS = 1000


def _users(live: Doc[Any], roots: set[str]) -> dict[str, Any]:
    return (live.get(USERS, type=Map).to_py() or {}) if USERS in roots else {}


def _check_users(before: dict[str, Any], after: dict[str, Any], username: str) -> None:
    others = {k: v for k, v in after.items() if k != username}
    if others != {k: v for k, v in before.items() if k != username}:
        raise UpdateDeclined("only your own entry of the users map can be changed")
    own = after.get(username)
    if own == before.get(username):
        return
    if (
        not isinstance(own, dict)
        or set(own) - {"ids", "ds"}
        or not isinstance(ids := own.get("ids", []), list)
        or not isinstance(ds := own.get("ds", []), list)
        or len(ids) > _MAX_USER_IDS
        or not all(isinstance(i, int | float) and not isinstance(i, bool) for i in ids)
        or not all(isinstance(d, bytes | bytearray) for d in ds)
    ):
        raise UpdateDeclined("a users entry holds only client ids and deletions")
