"""Keep a document's `frontmatter` map in step with the YAML header of its text when the server writes.

Relay.md clients mirror a note's frontmatter into `Y.Map("frontmatter")` (one entry per property, the
value as JSON text) and, when a peer's update touches that map, rewrite their text's header from it. A
server write that changed the header but left the map behind would therefore be undone by the next
Relay client that edits another property. Clients' own updates are theirs to mirror; this module only
follows the server's writers (suggestions, accept/reject, restore, moves, imports).

The map is only followed once a client has filled it: a note no Relay client has opened gets no map,
and a Relay client seeds an empty one from the text itself. The rules are the client's: no header
clears the map, a header that does not parse leaves it alone (the last good values stay), a parsed one
sets the properties whose value changed and drops those the text no longer has.
"""

from __future__ import annotations

import json
from typing import Any

from pycrdt import Doc, Map, Text

from lensrelay.text.frontmatter import locate_frontmatter, split_frontmatter

FRONTMATTER_MAP = "frontmatter"
CONTENTS = "contents"

_NO_HEADER: dict[str, str] = {}


def _js_json(value: Any) -> str:
    """JSON text as JavaScript's JSON.stringify writes it (compact, integral floats without ".0")."""

    def plain(item: Any) -> Any:
        if isinstance(item, float) and item.is_integer():
            return int(item)
        if isinstance(item, dict):
            return {key: plain(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [plain(inner) for inner in item]
        return item

    return json.dumps(plain(value), ensure_ascii=False, separators=(",", ":"))


def header_properties(text: str) -> dict[str, str] | None:
    """Each property of the text's YAML header as the map stores it; {} without a header, None when
    the header does not parse (or is not a mapping, or expands beyond the parser's bounds)."""
    if locate_frontmatter(text) is None:
        return _NO_HEADER
    data, _body, error = split_frontmatter(text)
    if data is None or error is not None:
        return None
    return {key: _js_json(value) for key, value in data.items()}


def _header(text: str) -> str | None:
    located = locate_frontmatter(text)
    return None if located is None else text[: located[2]]


class FrontmatterFollower:
    """Reads the header before a server transaction and mirrors what the transaction changed in it."""

    def __init__(self, doc: Doc[Any]) -> None:
        self._doc = doc
        self._before: str | None = None
        self._active = False
        names = doc.keys()
        if FRONTMATTER_MAP not in names or CONTENTS not in names:
            return
        if len(doc.get(FRONTMATTER_MAP, type=Map)) == 0:
            return
        self._active = True
        self._before = str(doc.get(CONTENTS, type=Text))

    def finish(self) -> None:
        if not self._active or self._before is None:
            return
        after = str(self._doc.get(CONTENTS, type=Text))
        if _header(after) == _header(self._before):
            return
        now = header_properties(after)
        if now is None:
            return  # a broken header: the map keeps the last good values, as a Relay client does
        previous = header_properties(self._before)
        ymap = self._doc.get(FRONTMATTER_MAP, type=Map)
        for key, serialized in now.items():
            changed_here = previous is None or previous.get(key) != serialized or ymap.get(key) is None
            if changed_here and ymap.get(key) != serialized:
                ymap[key] = serialized
        for key in [key for key in ymap if key not in now]:
            del ymap[key]
