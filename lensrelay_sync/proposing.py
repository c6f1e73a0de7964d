"""A `suggest` token's saves become its suggestions instead of live edits.

The note as the save leaves it (the save carried onto the server's current text, as for a live edit) is
read as if every pending suggestion were accepted, and that text goes to the server's `write` tool, which
plans word-level suggestions against the note's current text and writes them into it as CriticMarkup,
under the token's name, as an assistant's `write` does. The file then follows the server's text, with the
new marks. What the tool refuses is said, and the file is put back.
"""

from __future__ import annotations

from lensrelay_sync.server import Server, ServerError
from lensrelay_sync.textmerge import apply_ops, rebase
from suggestions.markup.accepted_view import build_accepted_view


def proposed_text(*, base: str, saved: str, current: str) -> str | None:
    """The note's text, every suggestion accepted, that the save ``base`` → ``saved`` asks for; None when
    the save changes nothing a suggestion can say (such as only the markup of pending suggestions)."""
    merged = apply_ops(current, rebase(base, saved, current))
    wanted = build_accepted_view(merged).text
    return None if wanted == build_accepted_view(current).text else wanted


def propose(server: Server, *, file_path: str, content: str) -> str | None:
    """Ask for ``content`` as suggestions on the note at ``file_path`` (blocking); the refusal, if any."""
    try:
        read = server.tool("read", {"file_path": file_path})  # the tool asks for a read of the note first
        if read.is_error:
            return read.text
        answer = server.tool("write", {"file_path": file_path, "content": content})
    except ServerError as exc:
        return str(exc)
    return answer.text if answer.is_error else None
