"""Whole vaults, attachments included: import -> export byte-identical; re-import updates only changes."""

from __future__ import annotations

import hashlib
import io
import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lensrelay.docstore import folderdoc
from lensrelay.models import Document, Folder
from lensrelay.vault.importexport import export_vault, import_vault
from tests.lensrelay.files.samples import png
from tests.lensrelay.vault.test_vault_reimport import tree, write_vault

pytestmark = pytest.mark.django_db(transaction=True)


PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
CANVAS = json.dumps(
    {"nodes": [{"id": "a", "type": "file", "file": "Notes/Idée.md", "x": 0, "y": 0}], "edges": []},
    indent="\t",
).encode()

VAULT: dict[str, bytes] = {
    "Index.md": b"# Index\n\n![[diagram.png]] and [[Notes/Id\xc3\xa9e]]\n",
    "Notes/Idée.md": "# Idée\n\n東京 🙂\r\nCRLF line\r\n".encode(),
    "Notes/Deep/Nested/ünïcødé 図.png": png(7, 2),
    "diagram.png": png(1),
    "Papers/Ünïcode paper.pdf": PDF,
    "Boards/Plan.canvas": CANVAS,
    "data/config.json": b'{"b": 1,   "a": [1,2]}',  # odd formatting must survive
    "site/page.html": "<!doctype html>\r\n<p>Héllo {++not markup++}</p>".encode(),
    "site/legacy.html": "<p>café</p>".encode("latin-1"),  # not UTF-8: kept as a blob
    "bin/all-bytes.bin": bytes(range(256)) * 3,
    "bin/empty.dat": b"",
    "Empty.md": b"",
}


def folder_named(name: str) -> Folder:
    return Folder.objects.get(name=name)


def rows(name: str) -> dict[str, tuple[str, str, str]]:
    return {
        path: (doc_id, kind, digest)
        for path, doc_id, kind, digest in Document.objects.filter(folder__name=name).values_list(
            "path", "doc_id", "type", "hash"
        )
    }


async def test_import_export_is_byte_identical_for_every_file_type(
    store: Any, tmp_path: Path, blob_dir: Path
) -> None:
    vault = tmp_path / "vault"
    write_vault(vault, VAULT)
    report = await import_vault(store=store, root=vault, folder_name="Lens Edu")
    assert report.skipped == [] and report.created == len(VAULT)
    assert report.kinds == {"markdown": 3, "image": 2, "pdf": 1, "canvas": 1, "file": 5}

    stored = await sync_to_async(rows)("Lens Edu")
    assert stored["/diagram.png"][1:] == ("image", hashlib.sha256(VAULT["diagram.png"]).hexdigest())
    assert stored["/Boards/Plan.canvas"][1] == "canvas" and stored["/Boards/Plan.canvas"][2]
    assert stored["/data/config.json"][1] == "file" and stored["/data/config.json"][2]
    assert stored["/site/page.html"][1:] == ("file", "")  # live Y.Text
    assert stored["/site/legacy.html"][2]  # blob
    assert stored["/Notes/Deep/Nested"][1] == "folder"
    # The blob sits at files/<doc id>/<sha256>, the entry carries Relay's hash, mimetype and synctime.
    doc_id, _, digest = stored["/Papers/Ünïcode paper.pdf"]
    assert (blob_dir / "files" / doc_id / digest).read_bytes() == PDF
    folder = await sync_to_async(folder_named)("Lens Edu")
    room = await store.get(folder.doc_id)
    meta = folderdoc.entry_meta(room.doc, path="/Papers/Ünïcode paper.pdf")
    assert (meta["type"], meta["hash"], meta["mimetype"]) == ("pdf", digest, "application/pdf")

    out = tmp_path / "out"
    exported = await sync_to_async(export_vault)(folder=folder, target=out)
    assert exported.files == len(VAULT) and exported.missing == []
    assert tree(out) == VAULT


async def test_reimport_updates_changed_attachments_and_leaves_the_rest(
    store: Any, tmp_path: Path, blob_dir: Path
) -> None:
    vault = tmp_path / "vault"
    write_vault(vault, VAULT)
    await import_vault(store=store, root=vault, folder_name="Lens")
    before = await sync_to_async(rows)("Lens")
    folder = await sync_to_async(folder_named)("Lens")
    room = await store.get(folder.doc_id)
    state = room.doc.get_update()
    blob_files = {p: p.stat().st_mtime_ns for p in blob_dir.rglob("*") if p.is_file()}

    again = await import_vault(store=store, root=vault, folder_name="Lens")
    assert (again.created, again.updated, again.unchanged) == (0, 0, len(VAULT))
    assert await sync_to_async(rows)("Lens") == before
    assert room.doc.get_update() == state  # the folder document was not touched
    assert {p: p.stat().st_mtime_ns for p in blob_dir.rglob("*") if p.is_file()} == blob_files

    changed = png(99)
    (vault / "diagram.png").write_bytes(changed)
    (vault / "data/config.json").write_bytes(b'{"b": 2}')
    (vault / "site/page.html").write_bytes(b"<p>edited</p>")
    third = await import_vault(store=store, root=vault, folder_name="Lens")
    assert (third.created, third.updated, third.unchanged) == (0, 3, len(VAULT) - 3)
    after = await sync_to_async(rows)("Lens")
    assert after["/diagram.png"][0] == before["/diagram.png"][0]  # same document, new hash
    assert after["/diagram.png"][2] == hashlib.sha256(changed).hexdigest() != before["/diagram.png"][2]
    meta = folderdoc.entry_meta(room.doc, path="/diagram.png")
    assert meta["hash"] == after["/diagram.png"][2] and meta["id"] == before["/diagram.png"][0][37:]
    # The previous version stays stored: its history.
    old_blob = blob_dir / "files" / before["/diagram.png"][0] / before["/diagram.png"][2]
    assert old_blob.read_bytes() == VAULT["diagram.png"]
    out = tmp_path / "out"
    await sync_to_async(export_vault)(folder=folder, target=out)
    expected = {
        **VAULT,
        "diagram.png": changed,
        "data/config.json": b'{"b": 2}',
        "site/page.html": b"<p>edited</p>",
    }
    assert tree(out) == expected


async def test_commands_print_a_summary_and_progress(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    many = {f"img/{n:03}.png": png(n, 1) for n in range(210)}
    write_vault(vault, {**VAULT, **many})
    # The command runs (and closes) its own store.
    out, err = io.StringIO(), io.StringIO()
    await sync_to_async(call_command)("import_vault", str(vault), folder="Lens", stdout=out, stderr=err)
    assert f"{len(VAULT) + 210} created" in out.getvalue()
    assert "image 212" in out.getvalue() and "canvas 1" in out.getvalue()
    blob_bytes = sum(
        len(data) for path, data in {**VAULT, **many}.items() if not path.endswith((".md", "page.html"))
    )
    assert f"{blob_bytes} bytes of attachments stored" in out.getvalue()
    assert f"attachments  [{'#' * 30}] 218/218" in err.getvalue()  # every blob file, stored with progress
    out = io.StringIO()
    target = tmp_path / "exported"
    await sync_to_async(call_command)(
        "export_vault", str(target), folder="Lens", stdout=out, stderr=io.StringIO()
    )
    assert f"{len(VAULT) + 210} files" in out.getvalue()
    assert tree(target) == {**VAULT, **many}


names = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs", "Cc", "Zl", "Zp", "Cf"), blacklist_characters='/\\.:*?"<>|'
    ),
    min_size=1,
    max_size=10,
).filter(lambda name: name.strip() == name and name.casefold() == name.casefold().strip())
extensions = st.sampled_from(["png", "pdf", "canvas", "json", "html", "md", "bin", "mp3"])
contents = st.binary(max_size=300)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    files=st.dictionaries(
        st.tuples(st.lists(names, max_size=2).map(tuple), names, extensions), contents, min_size=1, max_size=6
    )
)
async def test_generated_vaults_round_trip(
    store: Any, tmp_path_factory: Any, files: dict[Any, bytes]
) -> None:
    vault = tmp_path_factory.mktemp("generated")
    written: dict[str, bytes] = {}
    for (dirs, stem, ext), data in files.items():
        relative = "/".join([*dirs, f"{stem}.{ext}"])
        if ext == "md":
            data = data.decode("utf-8", "replace").encode()  # markdown must be UTF-8
        # Paths may clash with each other's folders or by case: the import skips those with a reason.
        try:
            target = vault / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except OSError:
            continue
        written[relative] = data
    name = f"Gen{len(list(tmp_path_factory.getbasetemp().iterdir()))}"
    report = await import_vault(store=store, root=vault, folder_name=name)
    folder = await sync_to_async(folder_named)(name)
    out = tmp_path_factory.mktemp("out")
    await sync_to_async(export_vault)(folder=folder, target=out)
    exported = tree(out)
    skipped = {line.split(" (")[0] for line in report.skipped}
    # The import takes names in their NFC form: compare in that form.
    on_disk = {unicodedata.normalize("NFC", relative): data for relative, data in tree(vault).items()}
    for relative, data in on_disk.items():
        if "/" + relative in skipped:
            continue  # with its reason (a clash with another path, say): nothing silently lost
        assert exported.get(relative) == data, relative
    assert set(exported) <= set(on_disk)
