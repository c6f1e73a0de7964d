"""Names of people, tokens and assistants as every record shows them: one safe line that cannot pose as
another.

A name becomes an author (a suggestion's, a version's, a span's) and part of a label
(`claude-review · Claude Code (token #3)`, `ada · Claude (OAuth grant #7 for ada)`, `ada (staff)`), and
the audit finds an assistant's changes by those labels. Names come from people and from clients that
name themselves without signing in (OAuth registration, MCP `clientInfo`), so every one goes through
`clean_name`:
- NFKC first, so fullwidth parentheses, `Ŀ` (L and a middle dot) and U+0387 (whose normal form is `·`)
  become the characters they stand for and are caught below;
- every default-ignorable, format, control, private-use, unassigned or line-breaking character becomes a
  space (soft hyphen, zero-width and bidi characters, the U+E0000 tags, the Hangul fillers);
- the separator `·` and the dots that look like it, every bracket (Unicode's opening and closing
  punctuation: the parentheses and square brackets of `(token #7)` and `[admin]`, in any script) and the
  commas (a version joins its authors with commas) become spaces;
- spaces collapse, and the name is cut to its limit.
`unique_name` then suffixes a name that folds to one already taken (` 2`, ` 3`, …).
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Callable

import regex

NAME_LIMIT = 80
# A client's own name is shown after whom it acts for: shorter.
CLIENT_NAME_LIMIT = 40
SEPARATOR = " · "

# U+00B7 and the characters drawn as a raised or middle dot between words.
_DOTS = (
    "\u00b7\u0387\u1427\u16eb\u18df\u2022\u2027\u2219\u22c5\u2981\u2e31\u2e33\u30fb\u318d\ua78f\uff65"
    "\U00010101"
)
# The comma in the scripts and forms NFKC leaves alone.
_COMMAS = ",\u060c\u1363\u2e41\u3001\ua4fe\uff64"
_UNSAFE = regex.compile(
    r"[\p{Default_Ignorable_Code_Point}\p{Cf}\p{Cc}\p{Co}\p{Cs}\p{Cn}\p{Zl}\p{Zp}\p{Ps}\p{Pe}"
    + regex.escape(_DOTS + _COMMAS, special_only=True)
    + "]+"
)
_SPACES = regex.compile(r"\s+")
SUFFIX_LIMIT = 1000


def _pass(name: str) -> str:
    return _SPACES.sub(" ", _UNSAFE.sub(" ", unicodedata.normalize("NFKC", name))).strip()


# Remembered: every live transaction labels its author with it, and a room's few authors repeat.
@functools.lru_cache(maxsize=4096)
def clean_name(name: str, *, limit: int = NAME_LIMIT) -> str:
    """`name` as every record shows it (see the module's docstring); empty when nothing visible is left."""
    # Twice: taking a character out can leave a pair that NFKC composes anew.
    return _pass(_pass(name))[:limit].strip()


def name_key(name: str) -> str:
    """What two names are compared by: the cleaned name, case-folded."""
    return clean_name(name).casefold()


class NameTaken(ValueError):
    """No free spelling of a name was found."""


def unique_name(name: str, *, taken: Callable[[str], bool], limit: int = NAME_LIMIT) -> str:
    """The cleaned `name`, or it with the first free number after it, so that no two actors read alike;
    `taken(candidate)` says whether another actor already folds to `candidate`."""
    cleaned = clean_name(name, limit=limit)
    if not taken(cleaned):
        return cleaned
    for number in range(2, SUFFIX_LIMIT):
        suffix = f" {number}"
        candidate = cleaned[: limit - len(suffix)].rstrip() + suffix
        if not taken(candidate):
            return candidate
    raise NameTaken(f"Every spelling of the name {cleaned!r} is taken; choose another name.")
