"""The launcher's metrics directory (lensrelay.server.metricsdir): a directory of its own per run unless
one is given, settled before prometheus_client is imported, cleaned on the way out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lensrelay.server.metricsdir import RUN_DIR_PREFIX, prepare_metrics_dir, remove_abandoned_run_dirs

ROOT = Path(__file__).resolve().parents[3]

# What the launcher does around daphne, without daphne: settle the directory, count, finish.
RUN = """
import json, os, sys
from lensrelay.server.metricsdir import prepare_metrics_dir
chosen = prepare_metrics_dir()
from lensrelay.observability import metrics
metrics.connection_opened()
metrics.update_received_websocket()
files = sorted(os.listdir(chosen.path))
chosen.finish()
left = sorted(os.listdir(chosen.path)) if chosen.path.exists() else None
print(json.dumps({"path": str(chosen.path), "owned": chosen.owned, "files": files, "left": left,
                  "env": os.environ["PROMETHEUS_MULTIPROC_DIR"], "pid": os.getpid()}))
"""


def run(tmp_path: Path, **env: str) -> dict[str, object]:
    full = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    full.update({"TMPDIR": str(tmp_path), **env})
    result = subprocess.run(
        [sys.executable, "-c", RUN], cwd=ROOT, env=full, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr[-2000:]
    answer: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return answer


def test_a_run_of_its_own_gets_a_directory_that_goes_with_it(tmp_path: Path) -> None:
    answer = run(tmp_path)
    path = Path(str(answer["path"]))
    assert answer["owned"] is True and answer["env"] == str(path)
    assert path.parent == tmp_path and path.name.startswith(f"{RUN_DIR_PREFIX}{answer['pid']}-")
    assert f"gauge_livesum_{answer['pid']}.db" in answer["files"]  # type: ignore[operator]
    assert answer["left"] is None and not path.exists()


def test_an_empty_setting_is_a_run_of_its_own_too(tmp_path: Path) -> None:
    # (prometheus_client would write its files into the working directory)
    answer = run(tmp_path, PROMETHEUS_MULTIPROC_DIR="  ")
    assert answer["owned"] is True and not Path(str(answer["path"])).exists()


def test_a_given_directory_is_shared_kept_and_only_the_live_gauges_leave(tmp_path: Path) -> None:
    shared = tmp_path / "shared" / "metrics"
    first = run(tmp_path, PROMETHEUS_MULTIPROC_DIR=str(shared))
    second = run(tmp_path, PROMETHEUS_MULTIPROC_DIR=str(shared))
    assert first["owned"] is False and first["path"] == str(shared) and shared.is_dir()
    # Each process's counters stay for the others to add up; its live gauges left with it.
    names = set(os.listdir(shared))
    assert {f"counter_{first['pid']}.db", f"counter_{second['pid']}.db"} <= names
    assert not any(name.startswith("gauge_live") for name in names)


def test_directories_of_runs_that_were_killed_are_removed(tmp_path: Path) -> None:
    dead = tmp_path / f"{RUN_DIR_PREFIX}999999999-abcd"
    alive = tmp_path / f"{RUN_DIR_PREFIX}{os.getpid()}-efgh"
    unrelated = tmp_path / f"{RUN_DIR_PREFIX}notapid"
    other = tmp_path / "something-else-999999999"
    for path in (dead, alive, unrelated, other):
        path.mkdir()
        (path / "counter_1.db").write_bytes(b"")
    assert remove_abandoned_run_dirs(tmp_path) == [dead]
    assert not dead.exists() and alive.exists() and unrelated.exists() and other.exists()
    # The launcher does it at every start of a run of its own.
    dead.mkdir()
    run(tmp_path)
    assert not dead.exists() and alive.exists()


def test_too_late_once_prometheus_client_is_imported() -> None:
    # This test process imported it long ago: choosing a directory now would change nothing.
    with pytest.raises(RuntimeError, match="before prometheus_client is imported"):
        prepare_metrics_dir()
