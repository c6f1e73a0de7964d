"""Audit export: what an assistant proposed, who decided it, and the changes versions name it for, as
rows for CSV or JSON (the admin's export actions and `manage.py audit_export`)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet

from lensrelay.history.models import DocVersion
from lensrelay.models import Document
from suggestions.models import Suggestion

FIELDS = (
    "record",
    "at",
    "who",
    "token_id",
    "client_name",
    "session_id",
    "tool",
    "kind",
    "path",
    "doc_id",
    "status",
    "decided_at",
    "decided_by",
    "note",
    "suggestion",
)
FORMATS = ("csv", "json")


def _when(value: datetime | None) -> str:
    return value.isoformat() if value is not None else ""


def suggestion_records(suggestions: Iterable[Suggestion]) -> list[dict[str, Any]]:
    """One record per suggestion: who proposed it (token, client, session) and how it was decided."""
    return [
        {
            "record": "suggestion",
            "at": _when(s.created),
            "who": s.author,
            "token_id": s.token_id,
            "client_name": s.client_name,
            "session_id": s.session_id,
            "tool": s.tool,
            "kind": s.kind,
            "path": s.path,
            "doc_id": s.doc_id,
            "status": s.status,
            "decided_at": _when(s.decided_at),
            "decided_by": s.decided_by.get_username() if s.decided_by is not None else "",
            "note": s.note,
            "suggestion": s.uid,
        }
        for s in suggestions
    ]


def version_records(versions: Iterable[DocVersion]) -> list[dict[str, Any]]:
    """One record per version: the changes it folded in and who made them (docstore.acting's labels)."""
    rows = list(versions)
    paths = dict(Document.objects.filter(doc_id__in={v.doc_id for v in rows}).values_list("doc_id", "path"))
    return [
        {
            **dict.fromkeys(FIELDS, ""),
            "record": "change",
            "at": _when(v.created),
            "who": v.author,
            "token_id": None,
            "path": paths.get(v.doc_id, ""),
            "doc_id": v.doc_id,
        }
        for v in rows
    ]


def audit_records(
    *,
    token_id: int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    suggestions: QuerySet[Suggestion] | None = None,
) -> list[dict[str, Any]]:
    """Suggestions and changes, oldest first; with `token_id`, only that token's or grant's (its sessions
    included). `suggestions` narrows the suggestion records (the admin's selection) and leaves out changes.
    """
    chosen = suggestions if suggestions is not None else Suggestion.objects.all()
    versions = DocVersion.objects.none() if suggestions is not None else DocVersion.objects.all()
    if token_id is not None:
        chosen = chosen.filter(token_id=token_id)
        # Labels name "(token #N" or "(OAuth grant #N"; the trailing character keeps #1 from matching #12.
        label = Q()
        for kind in ("token", "OAuth grant"):
            for end in (")", " "):
                label |= Q(author__contains=f"({kind} #{token_id}{end}")
        versions = versions.filter(label)
    if since is not None:
        chosen = chosen.filter(created__gte=since)
        versions = versions.filter(created__gte=since)
    if until is not None:
        chosen = chosen.filter(created__lt=until)
        versions = versions.filter(created__lt=until)
    records = suggestion_records(chosen.select_related("decided_by").order_by("created", "id"))
    records += version_records(versions.defer("state").order_by("created", "id"))
    records.sort(key=lambda r: r["at"])
    return records


def audit_render(records: list[dict[str, Any]], *, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(records, ensure_ascii=False, indent=1)
    if fmt != "csv":
        raise ValueError(f"Unknown format {fmt!r}: use one of {', '.join(FORMATS)}.")
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS)
    writer.writeheader()
    for record in records:
        # A cell starting with = + - @ is a formula to spreadsheets: names and notes come from clients.
        writer.writerow({k: _inert(v) for k, v in record.items()})
    return out.getvalue()


def _inert(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
