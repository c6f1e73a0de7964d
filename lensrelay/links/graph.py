"""Forward links and backlinks between documents, computed from the live texts.

Parsing a document's links is cached per text; resolving them is cached until the set of documents
changes, and the resolver itself is updated incrementally (add/remove), never rebuilt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lensrelay.links.parse import WikiLink, extract_wikilinks
from lensrelay.links.resolve import LinkIndex, LinkTarget, Resolution

if TYPE_CHECKING:
    from lensrelay.docstore.store import DocStore


@dataclass(frozen=True)
class ResolvedLink:
    link: WikiLink
    resolution: Resolution


class LinkGraph:
    def __init__(self) -> None:
        self._index = LinkIndex()
        self._targets: frozenset[LinkTarget] = frozenset()
        self._parsed: dict[LinkTarget, tuple[str, list[WikiLink]]] = {}
        self._resolved: dict[LinkTarget, tuple[str, list[ResolvedLink]]] = {}

    def set_documents(self, targets: frozenset[LinkTarget]) -> None:
        if targets == self._targets:
            return
        for gone in self._targets - targets:
            self._index.discard(gone)
            self._parsed.pop(gone, None)
        for new in targets - self._targets:
            self._index.add(new)
        self._targets = targets
        self._resolved.clear()  # where a link points depends on which documents exist

    def links(self, source: LinkTarget, text: str) -> list[ResolvedLink]:
        cached = self._resolved.get(source)
        if cached is not None and cached[0] is text:
            return cached[1]
        resolved = [
            ResolvedLink(link=link, resolution=self._index.resolve(source=source, target=link.target))
            for link in self._parse(source, text)
        ]
        self._resolved[source] = (text, resolved)
        return resolved

    def _parse(self, source: LinkTarget, text: str) -> list[WikiLink]:
        cached = self._parsed.get(source)
        if cached is not None and cached[0] is text:
            return cached[1]
        # "[[#heading]]" points into the document itself: not a link between documents.
        links = [link for link in extract_wikilinks(text) if link.target]
        self._parsed[source] = (text, links)
        return links

    def backlinks(self, target: LinkTarget, texts: dict[LinkTarget, str]) -> list[LinkTarget]:
        return sorted(
            (
                source
                for source, text in texts.items()
                if source != target and any(r.resolution.target == target for r in self.links(source, text))
            ),
            key=lambda t: t.user_path,
        )


def _new_graph(store: object) -> LinkGraph:
    return LinkGraph()


def link_graph(store: DocStore, targets: frozenset[LinkTarget]) -> LinkGraph:
    """The store's link graph, brought up to date with the documents that exist."""
    graph = store.attached(_new_graph)
    graph.set_documents(targets)
    return graph
