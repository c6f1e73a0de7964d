"""New files that are not notes (HTML, JSON, canvas), proposed by assistants and created on accept.

No CriticMarkup can go inside such a file, so unlike a new note (a document holding one `{++…++}`) the
file does not exist while its suggestion is pending: the `create` row carries the path and the content
(``new_text``) and no doc id. Accepting creates it (HTML as a live text document, JSON and canvases as
blobs, with Relay's type for the extension); rejecting leaves nothing. JSON must parse.
"""

from __future__ import annotations

import json

from lensrelay.docstore import folderdoc
from lensrelay.docstore.store import DocStore
from lensrelay.files.kinds import extension, file_kind, stored_as_text
from lensrelay.models import Folder
from lensrelay.text.vaultpath import InvalidPath
from lensrelay.vault.documents import blob_file_create, document_create, folder_paths
from suggestions.errors import SuggestionError
from suggestions.lifecycle.filetext import JSON_EXTENSIONS
from suggestions.lifecycle.planning import refuse_delimiters
from suggestions.lifecycle.proposing import Proposer, _save_suggestion
from suggestions.models import Suggestion

CREATABLE_EXTENSIONS = frozenset({"html", "htm"}) | JSON_EXTENSIONS


def refuse_invalid_json(path: str, content: str) -> None:
    """A new JSON file or canvas must parse; the refusal names the parser's position."""
    if extension(path) not in JSON_EXTENSIONS:
        return
    try:
        json.loads(content)
    except ValueError as exc:
        raise SuggestionError(
            f"Error: {path} would not be valid JSON ({exc}). Nothing was suggested; write valid JSON."
        ) from None


async def suggestion_propose_file_create(
    *,
    store: DocStore,
    folder_id: int,
    relative_path: str,
    content: str,
    proposer: Proposer,
    comment: str | None = None,
) -> Suggestion:
    """A pending `create` suggestion for a new HTML, JSON or canvas file; nothing is created yet.

    Raises SuggestionError for another extension or invalid JSON, FileExistsError when the path is
    taken, InvalidPath when it breaks the path rules (the same checks run again on accept)."""
    if extension(relative_path) not in CREATABLE_EXTENSIONS:
        raise SuggestionError(
            f"Error: write cannot create {relative_path}: only notes, HTML, JSON and canvases."
        )
    if comment:
        refuse_delimiters(comment, which="comment")
    folder = await store.db(Folder.objects.get, pk=folder_id)
    user_path = f"{folder.name}{relative_path}"
    refuse_invalid_json(user_path, content)
    folder_room = await store.get(folder.doc_id)
    if folder_room is None:
        raise SuggestionError(f"Error: Folder not found: {folder.name}.")
    if relative_path in folderdoc.entries(folder_room.doc):
        raise FileExistsError(f"{user_path} already exists")
    folder_paths(folder_room).check(relative_path, type=file_kind(relative_path))
    row = Suggestion(
        kind=Suggestion.Kind.CREATE,
        folder_id=folder.pk,
        doc_id="",
        path=user_path,
        token_id=proposer.token_id,
        author=proposer.author,
        session_id=proposer.session_id,
        client_name=proposer.client_name,
        tool="write",
        comment=comment or "",
        new_text=content,
    )
    await store.db(_save_suggestion, row, [])
    return row


def creates_a_file(suggestion: Suggestion) -> bool:
    """Whether the suggestion is a new file that exists only once accepted."""
    return suggestion.kind == Suggestion.Kind.CREATE and not suggestion.doc_id


async def file_create_apply(store: DocStore, suggestion: Suggestion) -> str:
    """Create the accepted file; returns its doc id (recorded on the row). Raises SuggestionError when
    the path was taken or its folder is gone meanwhile (the suggestion stays pending)."""
    folder_id = suggestion.folder_id
    folder = await store.db(Folder.objects.filter(pk=folder_id).first) if folder_id is not None else None
    if folder is None:
        raise SuggestionError("the folder no longer exists")
    relative = suggestion.path[len(folder.name) :]
    try:
        if stored_as_text(relative):
            document = await document_create(
                store=store, folder=folder, path=relative, text=suggestion.new_text, type=file_kind(relative)
            )
            return document.doc_id
        return await blob_file_create(
            store=store, folder=folder, path=relative, data=suggestion.new_text.encode("utf-8")
        )
    except (FileExistsError, InvalidPath) as exc:
        raise SuggestionError(str(exc)) from exc
