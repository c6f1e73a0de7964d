"""The admin half of issue 23's heavy-request corpus, shared by the loop-lag test and its benchmark: the
review page of a 1 MB note full of suggestions, a version of that note diffed to now, and Accept all of
500 suggestions on one note (the editor's button). The MCP half (a 3 MB edit, a 100-edit ``multi_edit``,
a grep over 10,000 notes) lives in the test.

:func:`write_notes` writes the notes into a vault directory; :data:`SETUP` (run with ``manage.py shell``
once the vault is imported into ``HEAVY_FOLDER``) adds a superuser, records a version of the review note,
proposes through the real service the 500 suggestions and a 50-edit ``multi_edit`` of the review note (its
diff to the version), and prints the ids the requests need. :class:`Admin` signs in and makes the requests
as a browser's forms do.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

HEAVY_FOLDER = "Heavy"
REVIEW_PATH = "Review.md"
MANY_PATH = "Many.md"
REVIEW_BYTES = 1024 * 1024
REVIEW_MARKS = 500
MANY_SUGGESTIONS = 500
VERSION_EDITS = 50
PASSWORD = "correct horse battery staple"
ADMIN = "heavy-admin"
_MARKER = "HEAVY-SETUP "
TIMEOUT = 120.0


def review_note(size: int = REVIEW_BYTES, marks: int = REVIEW_MARKS) -> str:
    """About ``size`` bytes of Markdown: paragraphs with wikilinks and emphasis, and ``marks`` tracked
    changes (CriticMarkup with suggestion ids, as an assistant's edits leave them) spread evenly."""
    line_count = size // 64
    every = max(1, line_count // marks)
    lines = ["# Review", ""]
    for n in range(line_count):
        if n % every == 0 and n // every < marks:
            meta = json.dumps({"author": "claude", "timestamp": 1_795_000_000_000, "id": f"r{n:06d}"})
            meta = meta.replace(" ", "") + "@@"
            lines.append(f"Line {n} has {{--{meta}an old--}}{{++{meta}a new++}} phrase, row{n} here.")
        elif n % 5 == 4:
            lines.append("")
        else:
            lines.append(f"Line {n} is plain text with [[Many]] and *emphasis*, row{n} here.")
    return "\n".join(lines) + "\n"


def many_note(count: int = MANY_SUGGESTIONS) -> str:
    return "# Many\n\n" + "".join(f"Line {n}: word{n} stays as it is.\n" for n in range(count))


def write_notes(vault: Path) -> None:
    (vault / REVIEW_PATH).write_text(review_note(), encoding="utf-8")
    (vault / MANY_PATH).write_text(many_note(), encoding="utf-8")


SETUP = """
import json
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from lensrelay.docstore.store import store_session
from lensrelay.history.recording import version_record_stored
from lensrelay.models import Document
from lensrelay.vault.paths import path_index
from suggestions.lifecycle.proposing import EditSpec, Proposer, suggestion_propose_edits

User.objects.create_superuser({admin!r}, password={password!r})
folder = {folder!r}
review = Document.objects.get(folder__name=folder, path="/" + {review!r})
many = Document.objects.get(folder__name=folder, path="/" + {many!r})
version = version_record_stored(doc_id=review.doc_id)
proposer = Proposer(author="claude")

async def propose():
    async with store_session() as store:
        index = path_index(store)
        await index.ensure()
        entry = index.entry_at(folder + "/" + {many!r})
        for n in range({suggestions}):
            await suggestion_propose_edits(
                store=store, entry=entry, proposer=proposer, tool="edit",
                specs=[EditSpec(f"word{{n}} stays", f"word{{n}} goes")],
            )
        if {edits}:
            entry = index.entry_at(folder + "/" + {review!r})
            specs = [EditSpec(f"row{{n}} here", f"row{{n}} there") for n in range(1, 16000, 16000 // {edits})]
            await suggestion_propose_edits(
                store=store, entry=entry, proposer=proposer, tool="multi_edit", specs=specs
            )

async_to_sync(propose)()
print({marker!r} + json.dumps({{
    "review": review.doc_id, "review_pk": review.pk, "version": version.pk, "many": many.doc_id,
}}))
"""


def setup_script(*, version_edits: int = VERSION_EDITS) -> str:
    """The set-up; ``version_edits`` 0 leaves the review note as its version has it (no diff to show)."""
    return SETUP.format(
        admin=ADMIN,
        password=PASSWORD,
        folder=HEAVY_FOLDER,
        review=REVIEW_PATH,
        many=MANY_PATH,
        suggestions=MANY_SUGGESTIONS,
        edits=version_edits,
        marker=_MARKER,
    )


def setup_result(printed: str) -> dict[str, Any]:
    line = next(line for line in printed.splitlines() if line.startswith(_MARKER))
    parsed: dict[str, Any] = json.loads(line[len(_MARKER) :])
    return parsed


@dataclass(frozen=True)
class Admin:
    """A signed-in superuser's cookies; every request gets its own client."""

    base_url: str
    cookies: dict[str, str]
    timeout: float = TIMEOUT

    @classmethod
    async def sign_in(cls, base_url: str, *, timeout: float = TIMEOUT) -> Admin:
        async with httpx.AsyncClient(base_url=base_url, timeout=TIMEOUT) as http:
            await http.get("/admin/login/")
            response = await http.post(
                "/admin/login/?next=/admin/",
                data={
                    "username": ADMIN,
                    "password": PASSWORD,
                    "csrfmiddlewaretoken": http.cookies["csrftoken"],
                },
            )
            assert response.status_code == 302, response.text[:500]
            return cls(base_url, dict(http.cookies), timeout)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base_url, cookies=self.cookies, timeout=self.timeout)

    async def review_page(self, doc_id: str) -> str:
        """The review page of a document; its HTML."""
        async with self.client() as http:
            response = await http.get(f"/admin/suggestions/suggestion/document/{doc_id}/review/")
        assert response.status_code == 200, response.text[:500]
        return response.text

    async def version_diff(self, pk: int, version: int) -> str:
        """One version of a document with its diff to now; the HTML."""
        async with self.client() as http:
            response = await http.get(f"/admin/lensrelay/document/{pk}/versions/{version}/")
        assert response.status_code == 200, response.text[:500]
        return response.text

    async def accept_all(self, doc_id: str) -> dict[str, Any]:
        """The editor's Accept all (the page confirmed first); its JSON answer."""
        async with self.client() as http:
            response = await http.post(
                f"/admin/suggestions/suggestion/document/{doc_id}/edit/decide-all/",
                data={"decision": "accept", "csrfmiddlewaretoken": self.cookies["csrftoken"]},
            )
        assert response.status_code in (200, 409), response.text[:500]
        answer: dict[str, Any] = response.json()
        return answer


def marks_shown(page: str) -> int:
    """How many suggestion badges a review page shows."""
    return len(re.findall(r'<sup class="sg-badge"', page))
