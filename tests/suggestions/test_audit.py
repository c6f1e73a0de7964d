"""Audit export: one assistant's suggestions and changes, decided by whom, as CSV and JSON from the admin
and `manage.py audit_export`; hostile names stay inert in spreadsheets; weaker staff get nothing."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from lensrelay.access.tokens import token_create
from lensrelay.history.models import DocVersion
from suggestions.audit import audit_records, audit_render
from suggestions.models import Suggestion

pytestmark = pytest.mark.django_db


@pytest.fixture
def history() -> dict[str, object]:
    one, _ = token_create(name="bot", role="suggest")
    for _ in range(10):
        token_create(name="filler", role="view")
    twelve, _ = token_create(name="other", role="suggest")
    assert twelve.pk >= one.pk + 10  # ids whose digits overlap: #1 must not match #1x
    ada = User.objects.create_user("ada", is_staff=True)
    old = timezone.now() - timedelta(days=3)
    mine = Suggestion.objects.create(
        doc_id="d1",
        path="Lens/A.md",
        token=one,
        author="bot",
        client_name="=cmd|' /C calc'!A0",
        session_id="s1",
        tool="edit",
        old_text="a",
        new_text="b",
        status="accepted",
        decided_at=timezone.now(),
        decided_by=ada,
        note="fine",
    )
    Suggestion.objects.create(
        doc_id="d1", path="Lens/A.md", token=one, author="bot", tool="edit", created=old
    )
    Suggestion.objects.create(doc_id="d2", path="Lens/B.md", token=twelve, author="other", tool="edit")
    for author in (f"claude via bot (token #{one.pk})", f"other (token #{twelve.pk})", "ada (staff)"):
        DocVersion.objects.create(
            doc_id="d1",
            upto_update_id=DocVersion.objects.count() + 1,
            state=b"",
            size=0,
            text_hash=author,
            author=author,
        )
    return {"one": one, "twelve": twelve, "mine": mine, "ada": ada}


def test_one_tokens_records_are_its_suggestions_and_the_changes_naming_it(history: dict[str, object]) -> None:
    one = history["one"]
    records = audit_records(token_id=one.pk)  # type: ignore[attr-defined]
    kinds = sorted((r["record"], r["who"]) for r in records)
    assert kinds == [
        ("change", f"claude via bot (token #{one.pk})"),  # type: ignore[attr-defined]
        ("suggestion", "bot"),
        ("suggestion", "bot"),
    ]
    decided = next(r for r in records if r["status"] == "accepted")
    assert decided["decided_by"] == "ada" and decided["note"] == "fine" and decided["session_id"] == "s1"
    recent = audit_records(token_id=one.pk, since=timezone.now() - timedelta(days=1))  # type: ignore[attr-defined]
    assert len([r for r in recent if r["record"] == "suggestion"]) == 1


def test_csv_keeps_client_names_inert_and_json_round_trips(history: dict[str, object]) -> None:
    records = audit_records(token_id=history["one"].pk)  # type: ignore[attr-defined]
    rows = list(csv.DictReader(io.StringIO(audit_render(records, fmt="csv"))))
    assert any(row["client_name"] == "'=cmd|' /C calc'!A0" for row in rows)
    assert json.loads(audit_render(records, fmt="json")) == records
    with pytest.raises(ValueError):
        audit_render(records, fmt="xml")


def test_the_command_exports_and_refuses_a_bad_date(history: dict[str, object]) -> None:
    out = io.StringIO()
    call_command("audit_export", "--format", "json", "--token", str(history["twelve"].pk), stdout=out)  # type: ignore[attr-defined]
    exported = json.loads(out.getvalue())
    assert {r["who"] for r in exported} == {"other", f"other (token #{history['twelve'].pk})"}  # type: ignore[attr-defined]
    with pytest.raises(CommandError, match="not a date"):
        call_command("audit_export", "--since", "yesterday-ish", stdout=io.StringIO())


def _staff(username: str, *codenames: str) -> Client:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def test_the_admin_exports_the_selection_to_staff_who_may_view_suggestions(
    history: dict[str, object],
) -> None:
    mine = history["mine"]
    data = {"action": "export_csv", "_selected_action": [mine.pk]}  # type: ignore[attr-defined]
    viewer = _staff("vera", "view_suggestion")
    answer = viewer.post("/admin/suggestions/suggestion/?status=all", data)
    assert answer.status_code == 200 and answer["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(answer.content.decode())))
    assert [r["suggestion"] for r in rows] == [mine.uid]  # type: ignore[attr-defined]
    as_json = viewer.post("/admin/suggestions/suggestion/?status=all", {**data, "action": "export_json"})
    assert json.loads(as_json.content)[0]["decided_by"] == "ada"
    # Staff without the view permission get no suggestion list and no export.
    weaker = _staff("walt")
    refused = weaker.post("/admin/suggestions/suggestion/?status=all", data)
    assert refused.status_code == 403 and b"suggestion" not in refused.content.lower().replace(b"403", b"")
