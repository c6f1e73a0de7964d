"""The unauthenticated /ready says ready or not ready, and nothing about why."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError
from django.test import AsyncClient

from lensrelay.sync import ysweet

pytestmark = pytest.mark.django_db(transaction=True)

SECRET_DETAIL = 'connection to server at "db.internal" (10.0.0.7), port 5432 failed: role "lens_admin"'


class BrokenConnection:
    def cursor(self) -> Any:
        raise OperationalError(SECRET_DETAIL)


async def test_ready_when_the_database_answers() -> None:
    response = await AsyncClient().get("/ready")
    assert (response.status_code, response.json()) == (200, {"ok": True})


async def test_not_ready_reveals_nothing(monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    monkeypatch.setattr(ysweet, "connection", BrokenConnection())
    response = await AsyncClient().get("/ready")
    assert (response.status_code, response.json()) == (503, {"ok": False})
    assert b"db.internal" not in response.content and b"lens_admin" not in response.content
    assert SECRET_DETAIL in caplog.text  # the operator still finds the reason in the log
