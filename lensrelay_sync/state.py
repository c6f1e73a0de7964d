"""The client's memory between runs: one hidden JSON file in the directory (Obsidian ignores dot-files).

For each note: its id in the folder, its path, and the text both sides held at the last sync (the base of
the next merge, so edits made on either side while the client was stopped are merged, not overwritten).
For each attachment: its id and the sha256 both sides held at the last sync.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lensrelay_sync.paths import STATE_NAME, TEMP_PREFIX

VERSION = 1


class StateMismatch(RuntimeError):
    """The directory mirrors another folder or server than the one asked for."""


@dataclass
class State:
    server: str = ""
    folder_doc: str = ""
    notes: dict[str, dict[str, str]] = field(default_factory=dict)  # uuid -> {"path", "text"}
    folders: set[str] = field(default_factory=set)  # sub-folder paths mirrored at the last sync
    files: dict[str, dict[str, str]] = field(default_factory=dict)  # attachment path -> {"id", "hash"}
    # Each note's entry as JSON, made again only when its path or text changed: the file is written every
    # second while notes change, and 10,000 notes' texts encoded whole took ~90 ms of the client's loop.
    _encoded: dict[str, tuple[str, str, str]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def load(cls, root: Path) -> State:
        try:
            raw: dict[str, Any] = json.loads((root / STATE_NAME).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        if raw.get("version") != VERSION:
            raise StateMismatch(f"{root / STATE_NAME} was written by another version of lensrelay-sync")
        return cls(
            server=str(raw.get("server", "")),
            folder_doc=str(raw.get("folder_doc", "")),
            notes={str(k): {"path": str(v["path"]), "text": str(v["text"])} for k, v in raw["notes"].items()},
            folders={str(f) for f in raw.get("folders", [])},
            files={
                str(k): {"id": str(v["id"]), "hash": str(v["hash"])} for k, v in raw.get("files", {}).items()
            },
        )

    def check(self, *, server: str, folder_doc: str, root: Path) -> None:
        if self.folder_doc and self.folder_doc != folder_doc:
            raise StateMismatch(
                f"{root} mirrors another folder (document {self.folder_doc} on {self.server}); mirror this "
                f"one into another directory, or delete {root / STATE_NAME} to start over"
            )
        self.server, self.folder_doc = server, folder_doc

    def save(self, root: Path) -> None:
        write_state(root, self.render())

    def render(self) -> str:
        """The file's text."""
        data = {
            "version": VERSION,
            "server": self.server,
            "folder_doc": self.folder_doc,
            "folders": sorted(self.folders),
            "files": dict(sorted(self.files.items())),
        }
        notes = ",\n".join(self._entry(uid, self.notes[uid]) for uid in sorted(self.notes))
        for gone in self._encoded.keys() - self.notes.keys():
            del self._encoded[gone]
        head = json.dumps(data, ensure_ascii=False, indent=0)[: -len("}")].rstrip()
        return f'{head},\n"notes": {{\n{notes}\n}}\n}}'

    def _entry(self, uid: str, entry: dict[str, str]) -> str:
        path, text = entry["path"], entry["text"]
        cached = self._encoded.get(uid)
        if cached is not None and cached[0] == path and (cached[1] is text or cached[1] == text):
            return cached[2]
        encoded = f"{json.dumps(uid)}: {json.dumps({'path': path, 'text': text}, ensure_ascii=False)}"
        self._encoded[uid] = (path, text, encoded)
        return encoded


def write_state(root: Path, text: str) -> None:
    """Replace the state file by ``text`` at once (a reader, or a restart after a crash, sees the old file
    or the new)."""
    temp = root / f"{TEMP_PREFIX}state.tmp"
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, root / STATE_NAME)
