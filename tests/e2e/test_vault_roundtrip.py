"""`import_vault` then `export_vault` gives back the very same bytes; re-importing edits live documents."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import YClientFactory
from .relay import Relay, tree

pytestmark = pytest.mark.e2e

DEMO_VAULT = Path(__file__).resolve().parents[2] / "lensrelay" / "demo_vault"

# Every file of the generated vault: nested folders, Unicode and spaces in names, awkward contents.
GENERATED: dict[str, bytes] = {
    "Top level.md": "# Top\n\nSee [[日本語/メモ]] and [[Café/Crème brûlée]].\n".encode(),
    "日本語/メモ.md": "# メモ\n\n中文字符と日本語のテキスト。\n".encode(),
    "日本語/深い/さらに深い/ノート 1.md": "深い階層のノート\n".encode(),
    "Café/Crème brûlée.md": "---\ntags: [dessert]\n---\nÀ la française: œufs, crème, sucre.\n".encode(),
    "Emoji 🎉/Party 🎈 plan.md": "Balloons 🎈🎈, cake 🎂, and 👩‍👩‍👧‍👦.\n".encode(),
    "With  spaces/a b  c.md": b"two  spaces  inside\n",
    "Line endings/CRLF.md": b"# Windows\r\n\r\nLine one\r\nLine two\r\n",
    "Line endings/Mixed.md": b"unix\nwindows\r\nold mac\rend\n",
    "Line endings/No trailing newline.md": "no newline at the end — ünïcode".encode(),
    "Empty.md": b"",
    "Only whitespace.md": b"  \n\t\n",
    "Ünïcödé/Ñandú/ärger.md": "Ä Ö Ü ß ñ ç\n".encode(),
}
EMPTY_DIRECTORIES = ("Empty folder", "日本語/空")


LIVE_ORIGINAL = "# Live\n\nThe first version.\n"
LIVE_CHANGED = "# Live\n\nThe second version, édité 😀.\nWith a new line.\n"


@dataclass(frozen=True)
class RoundTrip:
    source: Path
    imported: str  # import_vault's output
    exported: Path


@dataclass(frozen=True)
class Vaults:
    relay: Relay
    token: str
    demo: RoundTrip
    generated: RoundTrip
    live_source: Path
    live_imported: str


def write_generated_vault(root: Path) -> None:
    for relative, data in GENERATED.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for relative in EMPTY_DIRECTORIES:
        (root / relative).mkdir(parents=True, exist_ok=True)


@pytest.fixture(scope="module")
def vaults(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Vaults:
    """Three vaults imported by three concurrent `import_vault` processes; two of them exported again."""
    base: Path = tmp_path_factory.mktemp("roundtrip")
    write_generated_vault(base / "generated")
    (base / "live" / "Notes").mkdir(parents=True)
    (base / "live" / "Notes" / "Live.md").write_text(LIVE_ORIGINAL, encoding="utf-8")
    (base / "live" / "Notes" / "Untouched.md").write_text("Stays the same.\n", encoding="utf-8")

    def round_trip(source: Path, folder: str) -> RoundTrip:
        imported = relay.import_vault(source, folder=folder)
        exported = base / f"{folder}-export"
        relay.export_vault(folder=folder, path=exported)
        return RoundTrip(source=source, imported=imported, exported=exported)

    with ThreadPoolExecutor(max_workers=3) as pool:
        demo = pool.submit(round_trip, DEMO_VAULT, "Demo")
        generated = pool.submit(round_trip, base / "generated", "Generated ✨")
        live = pool.submit(relay.import_vault, base / "live", folder="Live")
        return Vaults(
            relay=relay,
            token=relay.tokens["edit"],
            demo=demo.result(),
            generated=generated.result(),
            live_source=base / "live",
            live_imported=live.result(),
        )


def assert_same_tree(source: Path, exported: Path) -> None:
    before, after = tree(source), tree(exported)
    assert sorted(after) == sorted(before), "the set of paths differs"
    for relative, data in before.items():
        assert after[relative] == data, f"{relative}: bytes differ"


def counts(import_output: str) -> dict[str, int]:
    return {
        word: int(number) for number, word in re.findall(r"(\d+) (created|updated|unchanged)", import_output)
    }


def test_the_demo_vault_round_trips_byte_for_byte(vaults: Vaults) -> None:
    demo_files = list(DEMO_VAULT.rglob("*.md"))
    assert len(demo_files) >= 10 and any(not p.name.isascii() for p in demo_files)
    assert counts(vaults.demo.imported)["created"] == len(demo_files), vaults.demo.imported
    assert_same_tree(DEMO_VAULT, vaults.demo.exported)


async def test_a_generated_unicode_vault_round_trips_byte_for_byte(vaults: Vaults) -> None:
    generated = vaults.generated
    assert counts(generated.imported)["created"] == len(GENERATED), generated.imported
    assert_same_tree(generated.source, generated.exported)
    # and every file is also a live document with exactly that text
    documents = await vaults.relay.document_paths(vaults.token, folder="Generated ✨")
    assert sorted(documents) == sorted(f"Generated ✨/{relative}" for relative in GENERATED)
    crlf_id = documents["Generated ✨/Line endings/CRLF.md"]
    assert (
        await vaults.relay.doc_text(crlf_id, token=vaults.token) == GENERATED["Line endings/CRLF.md"].decode()
    )


async def test_reimporting_a_changed_file_updates_a_connected_client_live(
    vaults: Vaults, yclients: YClientFactory
) -> None:
    relay, token, source = vaults.relay, vaults.token, vaults.live_source
    assert counts(vaults.live_imported) == {"created": 2, "updated": 0, "unchanged": 0}, vaults.live_imported
    doc_id = await relay.doc_id(token, folder="Live", path="/Notes/Live.md")
    client = await yclients(relay.doc_url(doc_id), doc_id, params={"token": token})
    assert await client.text() == LIVE_ORIGINAL

    (source / "Notes" / "Live.md").write_text(LIVE_CHANGED, encoding="utf-8")
    out = await relay.aimport_vault(source, folder="Live")
    assert counts(out) == {"created": 0, "updated": 1, "unchanged": 1}, out
    assert "1 updated" in out
    # the import ran in another process; the server picks its logged change up and pushes it
    assert await client.wait_text(equals=LIVE_CHANGED, timeout=3.0) == LIVE_CHANGED
    assert await relay.doc_text(doc_id, token=token) == LIVE_CHANGED
