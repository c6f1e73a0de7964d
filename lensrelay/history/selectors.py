"""Reading versions: a document's list (newest first), one version, its text."""

from __future__ import annotations

from typing import Any

from lensrelay.history.models import DocVersion
from lensrelay.history.recording import state_text


def versions_of(*, doc_id: str) -> list[DocVersion]:
    """The document's versions, newest first, without their states (a list never needs them)."""
    return list(DocVersion.objects.filter(doc_id=doc_id).defer("state").order_by("-created", "-id"))


def version_get(*, doc_id: str, version_id: str | int) -> DocVersion | None:
    """One version of the document; None for an id that is not a number or not of this document."""
    try:
        pk = int(version_id)
    except (TypeError, ValueError):
        return None
    return DocVersion.objects.filter(doc_id=doc_id, pk=pk).first()


def version_text(version: DocVersion) -> str:
    return state_text(bytes(version.state))


def version_summary(version: DocVersion, *, latest: bool) -> dict[str, Any]:
    """The shape clients get (`GET /d/<id>/versions`), as lens-relay answers it."""
    return {
        "versionId": str(version.pk),
        "createdAt": version.created.isoformat(),
        "isLatest": latest,
        "size": version.size,
        "author": version.author,
    }


def versions_summaries(*, doc_id: str) -> list[dict[str, Any]]:
    versions = versions_of(doc_id=doc_id)
    return [version_summary(v, latest=index == 0) for index, v in enumerate(versions)]
