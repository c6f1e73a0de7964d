"""Forward links and backlinks between documents, computed from the live texts.

Parsing a document's links is cached per text, and an edit that provably changes none reuses the last
parse (lensrelay.text.wikilink_edits); resolving them is cached until the set of documents
changes (each note's links, and each link target as written from a note, so a typed character outside
the links resolves nothing again), and the resolver itself is updated incrementally (add/remove), never
rebuilt.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lensrelay.links.resolve import LinkIndex, LinkTarget, Resolution
from lensrelay.text.wikilink_edits import links_after_edit
from lensrelay.text.wikilinks import WikiLink, extract_wikilinks

if TYPE_CHECKING:
    from lensrelay.docstore.store import DocStore


MAX_REMEMBERED_RESOLUTIONS = 200_000


@dataclass(frozen=True)
class ResolvedLink:
    link: WikiLink
    resolution: Resolution


class LinkGraph:
    def __init__(self, parsed: dict[LinkTarget, tuple[str, list[WikiLink]]] | None = None) -> None:
        self._index = LinkIndex()
        self._targets: frozenset[LinkTarget] = frozenset()
        self._parsed = {} if parsed is None else parsed  # may be shared: parsing depends on the text only
        self._resolved: dict[LinkTarget, tuple[str, list[ResolvedLink]]] = {}
        self._resolutions: dict[tuple[LinkTarget, str], Resolution] = {}

    def set_documents(self, targets: frozenset[LinkTarget]) -> None:
        # Asked once per note indexed, mostly with the very set it has (the path index keeps one per
        # folder): comparing a folder's thousands of targets each time was a third of backlinks' work.
        if targets is self._targets or targets == self._targets:
            return
        for gone in self._targets - targets:
            self._index.discard(gone)
            self._parsed.pop(gone, None)
        for new in targets - self._targets:
            self._index.add(new)
        self._targets = targets
        self._resolved.clear()  # where a link points depends on which documents exist
        self._resolutions.clear()

    def links(self, source: LinkTarget, text: str) -> list[ResolvedLink]:
        cached = self._resolved.get(source)
        if cached is not None and cached[0] is text:
            return cached[1]
        resolved = [
            ResolvedLink(link=link, resolution=self._resolve(source, link.target))
            for link in self._parse(source, text)
        ]
        self._resolved[source] = (text, resolved)
        return resolved

    def _resolve(self, source: LinkTarget, target: str) -> Resolution:
        resolution = self._resolutions.get((source, target))
        if resolution is None:
            if len(self._resolutions) >= MAX_REMEMBERED_RESOLUTIONS:
                self._resolutions.clear()  # targets typed a character at a time, never written whole
            resolution = self._resolutions[source, target] = self._index.resolve(source=source, target=target)
        return resolution

    def _parse(self, source: LinkTarget, text: str) -> list[WikiLink]:
        cached = self._parsed.get(source)
        if cached is not None and cached[0] is text:
            return cached[1]
        # Typing inside a paragraph changes no link: the last parse, shifted (issue 36).
        known = None if cached is None else links_after_edit(cached[0], text, cached[1])
        # "[[#heading]]" points into the document itself: not a link between documents.
        links = known if known is not None else [link for link in extract_wikilinks(text) if link.target]
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


class LinkGraphs:
    """One graph per set of documents links may resolve to: what a caller may see, or one folder.

    Where a link points depends on which documents exist, so a link must be resolved only among the
    documents its reader may see: a hidden note must not change how a visible link resolves.
    """

    MAX_GRAPHS = 32

    def __init__(self) -> None:
        self._graphs: OrderedDict[Hashable, LinkGraph] = OrderedDict()
        self._parsed: dict[LinkTarget, tuple[str, list[WikiLink]]] = {}

    def get(self, scope: Hashable, targets: frozenset[LinkTarget]) -> LinkGraph:
        graph = self._graphs.pop(scope, None)
        if graph is None:
            graph = LinkGraph(self._parsed)
        self._graphs[scope] = graph
        while len(self._graphs) > self.MAX_GRAPHS:
            self._graphs.popitem(last=False)
        graph.set_documents(targets)
        return graph


def _new_graphs(store: object) -> LinkGraphs:
    return LinkGraphs()


def link_graph(store: DocStore, targets: frozenset[LinkTarget], *, scope: Hashable) -> LinkGraph:
    """The graph of links resolved among exactly `targets`, brought up to date; `scope` names that set
    (a token's folders, a folder) so each keeps its own cached resolutions."""
    return store.attached(_new_graphs).get(scope, targets)
