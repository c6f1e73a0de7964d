"""The derive process's backlog for /metrics (`derive_backlog`): update-log rows beyond its cursor."""

from __future__ import annotations

from typing import Any

import pytest

from lensrelay.docstore.derived import cursor_save, derive_backlog
from lensrelay.models import YUpdate
from lensrelay.observability.scrape import scrape_gauges

pytestmark = pytest.mark.django_db(transaction=True)


def test_rows_beyond_the_cursor_are_the_backlog(settings: Any) -> None:
    settings.LENSRELAY_DERIVED_WORK = "process"
    start = YUpdate.objects.order_by("-id").values_list("id", flat=True).first() or 0
    cursor_save(last_update_id=start)
    assert derive_backlog() == 0
    rows = [YUpdate.objects.create(doc_id=f"doc-{n}", data=b"\x00\x00") for n in range(5)]
    assert derive_backlog() == 5
    cursor_save(last_update_id=rows[2].id)
    assert derive_backlog() == 2
    cursor_save(last_update_id=rows[-1].id)
    assert derive_backlog() == 0


def test_before_the_first_pass_every_row_is_behind(settings: Any) -> None:
    settings.LENSRELAY_DERIVED_WORK = "process"
    YUpdate.objects.create(doc_id="doc", data=b"\x00\x00")
    assert derive_backlog() == YUpdate.objects.count() >= 1


def test_without_a_derive_process_there_is_no_backlog_to_report(settings: Any) -> None:
    settings.LENSRELAY_DERIVED_WORK = "inline"
    YUpdate.objects.create(doc_id="doc", data=b"\x00\x00")
    assert derive_backlog() is None
    assert "lensrelay_derive_backlog_rows" in {gauge.name for gauge in scrape_gauges()}
