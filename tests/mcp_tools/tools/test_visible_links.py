"""Links resolve only among what the caller may see: a hidden note never changes how a visible link resolves,
and `read_metadata` counts only visible backlinks. Writes and moves obey the path rules."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lensrelay.docstore import folderdoc
from lensrelay.models import Document, YDoc
from lensrelay.text.vaultpath import normalize_path, validate_relative_path, with_md_suffix
from lensrelay.vault.documents import document_create
from tests.mcp_tools.tools.conftest import access

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def folders(store: Any, make_folder: Any) -> dict[str, Any]:
    # "Aaa" sorts before "Alpha": for a basename found in several other folders, the first folder wins.
    made = {name: await sync_to_async(make_folder)(name) for name in ("Public", "Alpha", "Aaa")}
    await document_create(store=store, folder=made["Public"], path="/Index.md", text="See [[Plan]].\n")
    await document_create(store=store, folder=made["Alpha"], path="/Plan.md", text="# Alpha plan\n")
    await document_create(store=store, folder=made["Aaa"], path="/Plan.md", text="[[Plan]] [[Alpha/Plan]]\n")
    return made


def sees(folders: dict[str, Any], *names: str) -> Any:
    return access(role="view", folder_ids=frozenset(folders[name].pk for name in names))


async def test_a_hidden_note_does_not_change_where_a_visible_link_goes(folders: Any, call: Any) -> None:
    text, error = await call(
        "get_links", {"file_path": "Public/Index.md"}, who=sees(folders, "Public", "Alpha")
    )
    assert not error
    assert "- Alpha/Plan.md" in text.split("Forward links")[1]
    assert "Unresolved" not in text and "Aaa" not in text
    # with everything visible the same link goes to the first folder and is reported as ambiguous
    text, _ = await call("get_links", {"file_path": "Public/Index.md"}, who=access(role="view"))
    assert "[[Plan]] -> Aaa/Plan.md (candidates: Aaa/Plan.md, Alpha/Plan.md)" in text


async def test_read_metadata_counts_only_visible_backlinks(folders: Any, call: Any) -> None:
    async def backlinks(who: Any) -> int:
        text, error = await call("read_metadata", {"file_path": "Alpha/Plan.md"}, who=who)
        assert not error, text
        count: int = json.loads(text)["stats"]["backlinks"]
        return count

    # Public/Index.md links to it once the hidden Aaa/Plan.md is out of the picture
    assert await backlinks(sees(folders, "Public", "Alpha")) == 1
    assert await backlinks(sees(folders, "Alpha")) == 0
    # everything visible: [[Plan]] in Public goes to Aaa; only Aaa's [[Alpha/Plan]] points here
    assert await backlinks(access(role="view")) == 1
    text, _ = await call("get_links", {"file_path": "Alpha/Plan.md"}, who=sees(folders, "Alpha", "Public"))
    assert "- Public/Index.md" in text and "Aaa" not in text


def stored() -> list[tuple[str, str]]:
    return sorted(Document.objects.values_list("doc_id", "path")) + sorted(
        YDoc.objects.values_list("doc_id", "kind")
    )


@pytest.mark.parametrize(
    ("file_path", "rule"),
    [
        ("Public/Index.md/x", "inside the document '/Index.md'"),
        ("Public/index.md", "only by letter case"),
        ("Public/INDEX", "only by letter case"),
        ("Public/.md", "hidden or dot-only name"),
        ("Public/...md", "hidden or dot-only name"),
        ("Public/.obsidian/x.md", "hidden or dot-only name"),
        ("Public/Invoice\u202egpj.md", "U+202E"),
        ("Public/\u2066Isolated.md", "U+2066"),
        ("Public/\ufeffBOM.md", "U+FEFF"),
        ("Public/a\x07b.md", "control character (U+0007)"),
    ],
)
async def test_write_refuses_paths_that_break_the_rules(
    folders: Any, call: Any, file_path: str, rule: str
) -> None:
    before = await sync_to_async(stored)()
    text, error = await call("write", {"file_path": file_path, "content": "hello"})
    assert error, text
    assert rule in text, text
    assert await sync_to_async(stored)() == before


async def test_write_normalises_a_decomposed_name_and_then_refuses_its_twin(folders: Any, call: Any) -> None:
    text, error = await call("write", {"file_path": "Public/Cafe\u0301", "content": "one"})
    assert not error, text
    assert await sync_to_async(Document.objects.filter(path="/Caf\u00e9.md").exists)()
    before = await sync_to_async(stored)()
    text, error = await call("write", {"file_path": "Public/CAF\u00c9.md", "content": "two"})
    assert error and "only by letter case or Unicode normalisation" in text
    assert await sync_to_async(stored)() == before


async def test_move_obeys_the_path_rules_but_may_change_case(store: Any, folders: Any, call: Any) -> None:
    await document_create(store=store, folder=folders["Public"], path="/Other.md", text="x\n")
    before = await sync_to_async(stored)()
    for new_path, rule in [
        ("Public/index.md", "only by letter case"),
        ("Public/Index.md/Other.md", "inside the document '/Index.md'"),
        ("Public/.Other.md", "hidden or dot-only name"),
        ("Public/Other\u202e.md", "U+202E"),
    ]:
        text, error = await call("move", {"file_path": "Public/Other.md", "new_path": new_path})
        assert error and rule in text, (new_path, text)
    assert await sync_to_async(stored)() == before
    text, error = await call("move", {"file_path": "Public/Other.md", "new_path": "Public/OTHER.md"})
    assert not error, text


generated_names = st.lists(
    st.one_of(
        st.characters(),
        st.sampled_from(
            ["/", ".", "..", "\u202e", "\ufeff", "e\u0301", "\udc80", "\x00", "Index", "INDEX.md"]
        ),
    ),
    max_size=10,
).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=generated_names)
@example(name="\u00e9INDEX.md/\u00e9")  # a new sub-folder whose name ends in .md, beside the new note
async def test_write_with_generated_names_creates_a_valid_path_or_changes_nothing(
    folders: Any, call: Any, name: str
) -> None:
    before = await sync_to_async(stored)()
    text, error = await call("write", {"file_path": "Public/" + name, "content": "generated"})
    after = await sync_to_async(stored)()
    if error:
        assert text.startswith(("Error:", "You must read")) and after == before, text
        return
    paths = await sync_to_async(lambda: set(Document.objects.values_list("path", flat=True)))()
    new = paths - {path for _, path in before}
    # The document at the normalized path, plus an entry for each sub-folder on its way that was not
    # there yet (a sub-folder's name may end in .md too).
    expected = normalize_path(with_md_suffix("Public/" + name))
    assert expected.startswith("Public/"), expected
    path = expected.removeprefix("Public")
    assert path in new, (name, new)
    assert new - {path} <= set(folderdoc.parent_paths(path)), (name, new)
    assert validate_relative_path(path) == path
