"""Unpaired surrogates are refused by name before anything is stored."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from lensrelay.models import Document, YDoc
from lensrelay.text.unicode_text import UnencodableText, find_nul, find_unencodable, refuse_unencodable
from lensrelay.vault.importexport import import_vault


def test_refuse_unencodable_names_the_place_and_the_code_point() -> None:
    assert refuse_unencodable("Grüße 😀", where="path") == "Grüße 😀"
    with pytest.raises(
        UnencodableText, match=r"path contains an unpaired surrogate \(U\+DC80\) at character 3"
    ):
        refuse_unencodable("abc\udc80", where="path")


def test_find_unencodable_walks_keys_lists_and_nesting() -> None:
    assert find_unencodable({"a": ["fine", {"b": "😀"}]}) is None
    found = find_unencodable({"a": ["fine", {"b": "x\ud800"}]}, where="arguments")
    assert found is not None and found.startswith("arguments.a[1].b contains") and "U+D800" in found
    key = find_unencodable({"\udfff": 1}, where="arguments")
    assert key is not None and key.startswith("a key of arguments")
    # the message itself is plain Unicode: it can be logged, encoded and sent back
    found.encode("utf-8")


@pytest.mark.django_db(transaction=True)
async def test_import_skips_undecodable_names_by_name_and_stores_nothing_for_them(
    store: Any, tmp_path: Path
) -> None:
    (tmp_path / "Good.md").write_text("fine\n", encoding="utf-8")
    os.makedirs(os.fsencode(tmp_path) + b"/Bad\xffDir")
    (Path(os.fsdecode(os.fsencode(tmp_path) + b"/Bad\xffDir")) / "Inner.md").write_text("x", encoding="utf-8")
    with open(os.fsencode(tmp_path) + b"/Bad\xfe.md", "wb") as handle:
        handle.write(b"bad name\n")
    report = await import_vault(store=store, root=tmp_path, folder_name="Lens")
    assert report.created == 1 and report.folders == 0
    assert len(report.skipped) == 2
    assert all("unpaired surrogate" in line for line in report.skipped), report.skipped
    for line in report.skipped:
        line.encode("utf-8")  # printable by the command
    paths = await sync_to_async(lambda: sorted(Document.objects.values_list("path", flat=True)))()
    assert paths == ["/Good.md"]
    # one folder document and one content document: no orphan rows for the refused names
    assert await sync_to_async(YDoc.objects.count)() == 2


@pytest.mark.django_db(transaction=True)
async def test_import_refuses_an_unencodable_folder_name_before_storing_anything(
    store: Any, tmp_path: Path
) -> None:
    (tmp_path / "Good.md").write_text("fine\n", encoding="utf-8")
    with pytest.raises(ValueError, match="surrogate"):  # UnencodableText (or the path rules' InvalidPath)
        await import_vault(store=store, root=tmp_path, folder_name="Lens\udc80")
    assert await sync_to_async(YDoc.objects.count)() == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "query",
    [
        "path=%ED%B2%80",
        "folder=%ED%A0%80x",
        "path=Lens/%FF%FE.md",
        "path=%C0%AF",
        "path=" + "%ED%B2%80" * 5000,
    ],
)
async def test_api_query_strings_that_decode_to_no_valid_text_never_fail_the_server(
    store: Any, make_token: Any, query: str
) -> None:
    from django.test import AsyncClient

    token = await sync_to_async(make_token)("edit")
    response = await AsyncClient().get(
        "/api/documents", QUERY_STRING=query, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code < 500
    assert response["Content-Type"].startswith("application/json")
    assert await sync_to_async(YDoc.objects.count)() == 0


def test_find_nul_names_where_the_first_one_is() -> None:
    assert find_nul({"a": ["fine", {"b": "😀\n\t"}]}) is None
    found = find_nul({"a": ["fine", {"b": "ab\x00c"}]}, where="arguments")
    assert found is not None and found.startswith(
        "arguments.a[1].b contains a NUL character (U+0000) at character 2"
    )
    assert find_nul({"k\x00": 1}, where="arguments") is not None
    assert find_nul(None) is None and find_nul(7) is None
