"""The launcher (`python -m lensrelay.server.serve`) really runs the sync path's warm-up once its loop
turns."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from .liveserver import lensrelay_server

pytestmark = pytest.mark.e2e


def test_a_served_process_warms_up_the_sync_path(tmp_path: Path) -> None:
    with lensrelay_server(tmp_path, LOG_LEVEL="INFO") as server:
        deadline = time.monotonic() + 60
        while "sync path warmed up" not in server.log_tail(200) and time.monotonic() < deadline:
            time.sleep(0.1)
        log = server.log_tail(200)
    assert "sync path warmed up in" in log, log
    assert "warming up the sync path failed" not in log, log
