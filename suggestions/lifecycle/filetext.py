"""Files that are not notes, as assistants see and change them: their content, and whole-file suggestions.

No CriticMarkup can go inside JSON, a canvas or HTML without breaking it for every other reader, so an
assistant's change to such a file is a `replace` suggestion row carrying the file's text before and after;
the file itself changes only when a reviewer accepts (a new blob and the entry's `hash` for blob files,
the Y.Text for HTML). The row records the sha256 of the content it was proposed on (`base_hash`): once the
file changed, accepting is refused as stale, so nobody's later change is overwritten.

What assistants read is the file as if its newest pending replacement were accepted (as notes show their
pending suggestions accepted), so a second edit builds on the first and supersedes it.

Binary files (images, PDFs, ...) are described, never changed here. JSON and canvases must stay valid JSON:
an edit that would break a valid file is refused, naming the parser's complaint.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from pycrdt import Doc, Map

from lensrelay.docstore import folderdoc
from lensrelay.docstore.store import DocStore
from lensrelay.docstore.texts import room_text, text_cache
from lensrelay.files import BlobMissing, blob_put, blob_read, blob_size, is_text_file, stored_as_text
from lensrelay.files.kinds import extension, mimetype
from lensrelay.vault.folders import mirror_folder
from lensrelay.vault.importexport import replace_text
from lensrelay.vault.paths import DocEntry
from suggestions.errors import StaleSuggestion, SuggestionError
from suggestions.lifecycle.proposing import EditSpec, Proposer, _new_row, _save_suggestion, apply_edit_specs
from suggestions.markup.diff import unified_diff
from suggestions.models import Suggestion

JSON_EXTENSIONS = frozenset({"json", "canvas"})
STALE_CHANGED = "the file changed since the suggestion was made"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class FileContent:
    """A file's content now: ``text`` for a UTF-8 text file, else None (``size`` bytes of a binary)."""

    entry: DocEntry
    hash: str  # the blob's sha256; "" for a Y.Text file (HTML) or an entry whose blob is not uploaded
    size: int | None  # None when no content is stored yet
    text: str | None

    @property
    def is_text(self) -> bool:
        return self.text is not None


def _listed(doc: Doc, path: str) -> bool:
    return path in doc.get(folderdoc.FILEMETA, type=Map)


def _live_hash(store: DocStore, entry: DocEntry) -> str:
    """The blob hash the live folder document names for the file (one entry read, not the whole map)."""
    room = store.rooms.get(entry.folder_doc_id)
    if room is None or not _listed(room.doc, entry.path):
        return ""
    digest = folderdoc.entry_meta(room.doc, path=entry.path).get("hash")
    return digest if isinstance(digest, str) and folderdoc.SHA256_HEX.fullmatch(digest) else ""


async def file_content(store: DocStore, entry: DocEntry) -> FileContent:
    """The file's content as stored now (the live folder document names its blob)."""
    await store.get(entry.folder_doc_id)
    digest = _live_hash(store, entry)
    if not digest and stored_as_text(entry.path):
        text = await text_cache(store).get(entry.doc_id)
        return FileContent(entry, "", len(text.encode()), text)
    if not digest:
        return FileContent(entry, "", None, None)
    if not is_text_file(entry.path):
        try:
            size = await asyncio.to_thread(blob_size, doc_id=entry.doc_id, hash=digest)
        except (BlobMissing, FileNotFoundError, OSError):
            return FileContent(entry, digest, None, None)
        return FileContent(entry, digest, size, None)
    kept = _blob_texts.get((entry.doc_id, digest))
    if kept is not None:
        return FileContent(entry, digest, kept[0], kept[1])
    try:
        data = await asyncio.to_thread(blob_read, doc_id=entry.doc_id, hash=digest)
    except BlobMissing:
        return FileContent(entry, digest, None, None)
    try:
        decoded: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        decoded = None
    _keep(entry.doc_id, digest, len(data), decoded)
    return FileContent(entry, digest, len(data), decoded)


# Blobs never change under their hash, so their texts are kept for grep, which reads every text file on
# every call; bounded by total size, the oldest dropped first.
_blob_texts: dict[tuple[str, str], tuple[int, str | None]] = {}
BLOB_TEXTS_MAX_BYTES = 64 * 1024 * 1024
_blob_texts_bytes = 0


def _keep(doc_id: str, digest: str, size: int, text: str | None) -> None:
    global _blob_texts_bytes
    if size > BLOB_TEXTS_MAX_BYTES // 8:
        return
    while _blob_texts and _blob_texts_bytes + size > BLOB_TEXTS_MAX_BYTES:
        oldest = next(iter(_blob_texts))  # dicts keep insertion order
        _blob_texts_bytes -= _blob_texts.pop(oldest)[0]
    _blob_texts[(doc_id, digest)] = (size, text)
    _blob_texts_bytes += size


def newest_pending_replacement(*, doc_id: str, base_hash: str) -> Suggestion | None:
    """The newest pending replacement proposed on exactly this content (older ones went stale)."""
    return (
        Suggestion.objects.filter(
            doc_id=doc_id, kind=Suggestion.Kind.REPLACE, status=Suggestion.Status.PENDING, base_hash=base_hash
        )
        .order_by("-created", "-pk")
        .first()
    )


def pending_replacements(*, doc_id: str) -> list[Suggestion]:
    return list(
        Suggestion.objects.filter(
            doc_id=doc_id, kind=Suggestion.Kind.REPLACE, status=Suggestion.Status.PENDING
        ).order_by("created", "pk")
    )


async def file_view(store: DocStore, content: FileContent) -> str | None:
    """What readers see of a text file: its newest pending replacement accepted, else its text."""
    if content.text is None:
        return None
    pending = await store.db(
        newest_pending_replacement, doc_id=content.entry.doc_id, base_hash=sha256_text(content.text)
    )
    return pending.new_text if pending is not None else content.text


def binary_refusal(entry: DocEntry) -> SuggestionError:
    return SuggestionError(
        f"Error: {entry.user_path} is a binary file ({entry.type}); it cannot be edited as text. "
        "Only markdown notes and text files (JSON, canvas, HTML, CSV, ...) can be changed."
    )


def check_json(path: str, before: str, after: str) -> None:
    """A JSON file or canvas that parses must still parse after the change; one already broken may be
    repaired or changed freely (refusing would leave it broken for good)."""
    if extension(path) not in JSON_EXTENSIONS:
        return
    try:
        json.loads(before)
    except ValueError:
        return
    try:
        json.loads(after)
    except ValueError as exc:
        raise SuggestionError(
            f"Error: the change would make {path} invalid JSON ({exc}). Nothing was suggested; "
            "fix the edit so the file stays valid JSON."
        ) from None


@dataclass
class FileOutcome:
    suggestion: Suggestion | None
    occurrences: list[int]
    diff: str
    view_after: str
    superseded: list[str] = field(default_factory=list)


async def suggestion_propose_file_change(
    *,
    store: DocStore,
    entry: DocEntry,
    proposer: Proposer,
    tool: str,
    specs: Sequence[EditSpec] = (),
    replacement: str | None = None,
    comment: str | None = None,
    dry_run: bool = False,
) -> FileOutcome:
    """Edits (or a whole new content) of a text file, as one pending `replace` suggestion; the file does
    not change. Refused, nothing recorded, for a binary file, an edit that does not apply, no change,
    or JSON the change would break."""
    content = await file_content(store, entry)
    if content.text is None:
        if content.size is None and content.hash == "" and is_text_file(entry.path):
            raise SuggestionError(f"Error: {entry.user_path} has no content stored yet; try again later.")
        raise binary_refusal(entry)
    current = content.text
    base_hash = sha256_text(current)
    pending = await store.db(newest_pending_replacement, doc_id=entry.doc_id, base_hash=base_hash)
    view = pending.new_text if pending is not None else current
    if replacement is not None:
        new, occurrences = replacement, list[int]()
        if new == view:
            raise SuggestionError("No changes to make: the content is exactly the file's current text.")
    else:
        new, occurrences = apply_edit_specs(view, specs, path=entry.user_path, markup=False)
    check_json(entry.user_path, view, new)
    diff = unified_diff(current, new, path=entry.user_path)
    if dry_run:
        return FileOutcome(None, occurrences, diff, new)
    row = await store.db(
        _new_row, entry=entry, proposer=proposer, tool=tool, kind=Suggestion.Kind.REPLACE, comment=comment
    )
    row.old_text, row.new_text, row.base_hash = current, new, base_hash
    superseded = [pending.uid] if pending is not None else []
    await store.db(_save_suggestion, row, superseded)
    return FileOutcome(row, occurrences, diff, new, superseded)


async def file_replacement_apply(store: DocStore, entry: DocEntry, suggestion: Suggestion) -> None:
    """Carry out an accepted replacement: only if the file is still what it was proposed on.

    The check and the change run in one synchronous stretch on the event loop (the new blob is stored
    first: content-addressed, harmless if unused), so no client's change can slip in between.
    """
    new = suggestion.new_text
    folder_room = await store.get(entry.folder_doc_id)
    if folder_room is None:
        raise StaleSuggestion("the document no longer exists")
    if not _live_hash(store, entry) and stored_as_text(entry.path):
        room = await store.get(entry.doc_id)
        if room is None:
            raise StaleSuggestion("the document no longer exists")
        if sha256_text(room_text(room)) != suggestion.base_hash:
            raise StaleSuggestion(STALE_CHANGED)
        with room.transact():
            replace_text(room.doc, new)
        await room.flushed()
        return
    digest = await asyncio.to_thread(blob_put, doc_id=entry.doc_id, data=new.encode("utf-8"))
    # No await from the check to the write.
    if not _listed(folder_room.doc, entry.path):
        raise StaleSuggestion("the document no longer exists")
    if _live_hash(store, entry) != suggestion.base_hash:
        raise StaleSuggestion(STALE_CHANGED)
    meta = folderdoc.entry_meta(folder_room.doc, path=entry.path)
    meta.update(hash=digest, mimetype=meta.get("mimetype") or mimetype(entry.path))
    meta["synctime"] = int(time.time() * 1000)
    with folder_room.transact():
        folderdoc.put_entry(folder_room.doc, path=entry.path, meta=meta)
    await folder_room.flushed()
    await mirror_folder(store, folder_id=entry.folder_id, room=folder_room)
