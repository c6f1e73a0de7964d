"""A link graph keeps its resolutions while its set of documents stays the same (the very set, or an equal
one), each link target as written from a note included, and resolves again when a document comes or
goes."""

from __future__ import annotations

import pytest

from lensrelay.links.graph import LinkGraph
from lensrelay.links.resolve import LinkTarget, Resolution
from lensrelay.text.wikilinks import extract_wikilinks as extract

SOURCE = LinkTarget("Lens", "/Notes/A.md")


def targets(*paths: str) -> frozenset[LinkTarget]:
    return frozenset(LinkTarget("Lens", path) for path in paths)


def resolved_paths(graph: LinkGraph, text: str) -> list[str | None]:
    return [r.resolution.target.path if r.resolution.target else None for r in graph.links(SOURCE, text)]


def test_the_same_documents_keep_the_resolutions_and_a_new_one_is_found() -> None:
    graph = LinkGraph()
    documents = targets("/Notes/A.md", "/Notes/B.md")
    graph.set_documents(documents)
    text = "See [[B]] and [[C]]."
    first = graph.links(SOURCE, text)
    assert resolved_paths(graph, text) == ["/Notes/B.md", None]
    graph.set_documents(documents)
    assert graph.links(SOURCE, text) is first
    graph.set_documents(targets("/Notes/A.md", "/Notes/B.md"))  # equal, not the same object
    assert graph.links(SOURCE, text) is first
    graph.set_documents(targets("/Notes/A.md", "/Notes/B.md", "/Notes/C.md"))
    assert resolved_paths(graph, text) == ["/Notes/B.md", "/Notes/C.md"]
    graph.set_documents(targets("/Notes/A.md", "/Notes/C.md"))
    assert resolved_paths(graph, text) == [None, "/Notes/C.md"]


def test_a_character_typed_outside_the_links_resolves_nothing_again(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = LinkGraph()
    graph.set_documents(targets("/Notes/A.md", "/Notes/B.md"))
    asked: list[str] = []
    original = graph._index.resolve

    def counted(*, source: LinkTarget, target: str) -> Resolution:
        asked.append(target)
        return original(source=source, target=target)

    monkeypatch.setattr(graph._index, "resolve", counted)
    assert resolved_paths(graph, "See [[B]].") == ["/Notes/B.md"]
    assert resolved_paths(graph, "See [[B]]!") == ["/Notes/B.md"]
    assert resolved_paths(graph, "See [[B]]! And [[C]]") == ["/Notes/B.md", None]
    assert asked == ["B", "C"]
    graph.set_documents(targets("/Notes/A.md", "/Notes/B.md", "/Notes/C.md"))
    assert resolved_paths(graph, "See [[B]]! And [[C]]") == ["/Notes/B.md", "/Notes/C.md"]
    assert asked == ["B", "C", "B", "C"]


def test_typing_in_prose_parses_nothing_again_and_a_typed_link_is_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lensrelay.links import graph as graph_module

    graph = LinkGraph()
    graph.set_documents(targets("/Notes/A.md", "/Notes/B.md", "/Notes/C.md"))
    text = "# A\n\nSee [[B]].\n\nProse.\n"
    assert resolved_paths(graph, text) == ["/Notes/B.md"]
    parses: list[str] = []
    monkeypatch.setattr(graph_module, "extract_wikilinks", lambda t: parses.append(t) or extract(t))
    typed = text.replace("Prose.", "Prose, typed live.")
    assert resolved_paths(graph, typed) == ["/Notes/B.md"]
    assert [link.link.start for link in graph.links(SOURCE, typed)] == [text.index("[[B]]")]
    assert parses == []
    linked = typed.replace("typed live.", "typed live, [[C]].")
    assert resolved_paths(graph, linked) == ["/Notes/B.md", "/Notes/C.md"]
    assert parses == [linked]
