"""import_vault applies the one path validator, and never writes through an entry the mirror ignored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lensrelay.docstore import folderdoc
from lensrelay.docstore.texts import text_cache
from lensrelay.models import Document, Folder
from lensrelay.text.vaultpath import fold_key, validate_relative_path
from lensrelay.vault.documents import document_create
from lensrelay.vault.folders import mirror_folder
from lensrelay.vault.importexport import export_vault, import_vault

pytestmark = pytest.mark.django_db(transaction=True)


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def paths(folder_name: str) -> list[str]:
    return sorted(Document.objects.filter(folder__name=folder_name).values_list("path", flat=True))


async def test_import_skips_names_that_break_the_rules_and_exports_cleanly(
    store: Any, tmp_path: Path, transactional_db: None
) -> None:
    vault = tmp_path / "vault"
    write(vault, "Index.md", "# Index\n")
    write(vault, "index.md", "# the same name on macOS\n")
    write(vault, "Invoice\u202egpj.md", "spoofed\n")
    write(vault, "\ufeffBOM.md", "bom\n")
    write(vault, "Cafe\u0301.md", "decomposed\n")
    write(vault, "Caf\u00e9.md", "composed\n")
    write(vault, "...md", "dots\n")
    write(vault, "Notes/Idea.md", "idea\n")
    report = await import_vault(store=store, root=vault, folder_name="Lens")
    assert await sync_to_async(paths)("Lens") == ["/Caf\u00e9.md", "/Index.md", "/Notes", "/Notes/Idea.md"]
    skipped = "\n".join(report.skipped)
    assert "only by letter case" in skipped
    assert "U+202E" in skipped and "U+FEFF" in skipped and "/...md (hidden)" in skipped
    assert "another file has this name once NFC-normalised" in skipped
    assert report.created == 3

    # a later import that would put a document under a document is refused, the rest goes in
    again = tmp_path / "again"
    write(again, "Index.md/Child.md", "under a file\n")
    write(again, "Fine.md", "fine\n")
    report = await import_vault(store=store, root=again, folder_name="Lens")
    assert any("inside the document '/Index.md'" in line for line in report.skipped), report.skipped
    assert "/Fine.md" in await sync_to_async(paths)("Lens")
    assert "/Index.md/Child.md" not in await sync_to_async(paths)("Lens")

    folder = await sync_to_async(Folder.objects.get)(name="Lens")
    out = tmp_path / "out"
    exported = await sync_to_async(export_vault)(folder=folder, target=out)
    assert exported.files == 4
    assert (out / "Caf\u00e9.md").read_text(encoding="utf-8") in ("decomposed\n", "composed\n")


async def test_reimport_never_writes_through_an_entry_naming_another_folder(
    store: Any, tmp_path: Path, make_folder: Any
) -> None:
    public = await sync_to_async(make_folder)("Public")
    secret = await sync_to_async(make_folder)("Secret")
    plan = await document_create(store=store, folder=secret, path="/Plan.md", text="secret plan\n")
    room = await store.get(public.doc_id)
    with room.transact():
        folderdoc.add_entry(room.doc, path="/Plan.md", uuid=plan.uuid)  # planted by a Public edit token
    await mirror_folder(store, folder_id=public.pk, room=room)
    vault = tmp_path / "public"
    write(vault, "Plan.md", "overwritten by the import\n")
    report = await import_vault(store=store, root=vault, folder_name="Public")
    assert report.created == 1 and report.updated == 0
    assert await text_cache(store).get(plan.doc_id) == "secret plan\n"
    mine = await sync_to_async(Document.objects.get)(folder=public, path="/Plan.md")
    assert mine.doc_id != plan.doc_id
    assert await text_cache(store).get(mine.doc_id) == "overwritten by the import\n"


disk_names = st.lists(
    st.one_of(
        st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
        st.sampled_from([".", "\u202e", "\ufeff", "e\u0301", "\u00e9", "A", "a", "\x1b"]),
    ),
    min_size=1,
    max_size=12,
).map("".join)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(disk_names, min_size=1, max_size=6, unique=True))
async def test_generated_file_names_import_validly_or_are_skipped_with_a_reason(
    store: Any, tmp_path_factory: Any, transactional_db: None, names: list[str]
) -> None:
    vault = tmp_path_factory.mktemp("generated")
    written = 0
    for name in names:
        try:
            (vault / (name + ".md")).write_text("x\n", encoding="utf-8")
            written += 1
        except OSError:
            continue  # a name this file system cannot hold (too long, say)
    report = await import_vault(store=store, root=vault, folder_name="Generated")
    assert all(" (" in line for line in report.skipped)
    settled = report.created + report.updated + report.unchanged
    assert settled + len(report.skipped) == written, report  # no file silently lost  # none silently lost
    imported = await sync_to_async(paths)("Generated")
    for path in imported:
        assert validate_relative_path(path) == path
    keys = [fold_key(path) for path in imported]
    assert len(keys) == len(set(keys))
    folder = await sync_to_async(Folder.objects.get)(name="Generated")
    out = tmp_path_factory.mktemp("exported")
    await sync_to_async(export_vault)(folder=folder, target=out)
