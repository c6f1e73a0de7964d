"""Wikilinks: parse them out of markdown, resolve them Obsidian-style, rewrite them on rename."""

from lensrelay.links.resolve import LinkIndex, LinkResolver, LinkTarget, Resolution, match_key
from lensrelay.links.rewrite import TextEdit, apply_edits, link_edits, rewrite_links
from lensrelay.text.wikilinks import WikiLink, code_regions, extract_wikilinks, target_span

__all__ = [
    "LinkIndex",
    "LinkResolver",
    "LinkTarget",
    "Resolution",
    "TextEdit",
    "WikiLink",
    "apply_edits",
    "code_regions",
    "extract_wikilinks",
    "link_edits",
    "match_key",
    "rewrite_links",
    "target_span",
]
