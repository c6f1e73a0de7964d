"""Several processes writing into one `PROMETHEUS_MULTIPROC_DIR`, as scaled-out workers do: a scrape adds
their counters, counts live gauges of running processes only, and drops those of a process that was
killed without saying so. Real processes: prometheus_client picks its file mode at import, from the
environment, so this test process (in-memory mode) cannot play one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from lensrelay.observability import scrape

ROOT = Path(__file__).resolve().parents[3]

WORKER = """
import os, sys, time
from lensrelay.observability import metrics
for _ in range(int(sys.argv[1])):
    metrics.update_received_websocket()
metrics.connection_opened()
metrics.room_loaded("content")
metrics.persisted(0.003)
metrics.mcp_tool_call_observe(tool="read", outcome="ok", seconds=0.02)
metrics.flush_live_counts()  # what a worker's event-loop monitor does every second
print("ready", flush=True)
if sys.argv[2] == "killed":
    os._exit(0)  # as SIGKILL: nothing on the way out
if sys.argv[2] == "ended":
    from lensrelay.observability.scrape import process_ended
    process_ended(os.getpid())
    sys.exit(0)
time.sleep(60)  # "running": until the test kills it
"""

SCRAPE = """
from lensrelay.observability.scrape import metrics_exposition, multiprocess_dir
assert multiprocess_dir() is not None
body, content_type = metrics_exposition(accept="")
print(body.decode())
"""


def run(script: str, *args: str, directory: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    result = subprocess.run(
        [sys.executable, "-c", script, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def test_a_scrape_answers_for_every_process_and_forgets_the_live_gauges_of_ended_ones(tmp_path: Path) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    running = subprocess.Popen(
        [sys.executable, "-c", WORKER, "5", "running"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert running.stdout is not None and running.stdout.readline().strip() == "ready"
        run(WORKER, "7", "killed", directory=tmp_path)
        run(WORKER, "11", "ended", directory=tmp_path)
        live_files = sorted(p.name for p in tmp_path.glob("gauge_livesum_*.db"))
        assert len(live_files) == 2  # the running one and the killed one; the ended one said so
        found = samples(run(SCRAPE, directory=tmp_path).stdout)
        # Counters and histograms of every process, ended or not, are added up.
        assert found[("lensrelay_updates_received_total", frozenset({("transport", "websocket")}))] == 23
        assert found[("lensrelay_persist_duration_seconds_count", frozenset())] == 3
        key = ("lensrelay_mcp_tool_calls_total", frozenset({("tool", "read"), ("outcome", "ok")}))
        assert found[key] == 3
        # Live gauges: the running process only; the killed one's file was removed by the scrape.
        assert found[("lensrelay_open_connections", frozenset())] == 1
        assert found[("lensrelay_rooms", frozenset({("kind", "content")}))] == 1
        assert [p.name for p in tmp_path.glob("gauge_livesum_*.db")] == [f"gauge_livesum_{running.pid}.db"]
    finally:
        running.kill()
        running.wait(10)
    # Once it is gone too, nothing is live (no process is left to report the gauge); the counts stay.
    found = samples(run(SCRAPE, directory=tmp_path).stdout)
    assert found.get(("lensrelay_open_connections", frozenset()), 0) == 0
    assert found[("lensrelay_updates_received_total", frozenset({("transport", "websocket")}))] == 23


def test_the_sweep_leaves_running_processes_and_other_files_alone(tmp_path: Path) -> None:
    mine = tmp_path / f"gauge_livesum_{os.getpid()}.db"
    parent = tmp_path / f"gauge_livemax_{os.getppid()}.db"
    counter = tmp_path / "counter_999999999.db"
    gone = tmp_path / "gauge_livesum_999999999.db"
    other = tmp_path / "notes.txt"
    for path in (mine, parent, counter, gone, other):
        path.write_bytes(b"")
    assert scrape.sweep_ended_processes(str(tmp_path)) == [999999999]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (mine, parent, counter, other)
    )


def test_this_test_process_exports_its_own_registry() -> None:
    # No directory when prometheus_client was imported: every process keeps its own numbers in memory.
    assert scrape.multiprocess_dir() is None
    body, content_type = scrape.metrics_exposition(accept="")
    assert content_type.startswith("text/plain")
    assert b"lensrelay_open_connections" in body and b"process_cpu_seconds_total" in body


def test_a_killed_process_is_noticed_even_before_its_files_are_read(tmp_path: Path) -> None:
    run(WORKER, "1", "killed", directory=tmp_path)
    assert len(list(tmp_path.glob("gauge_livesum_*.db"))) == 1
    found = samples(run(SCRAPE, directory=tmp_path).stdout)
    assert found.get(("lensrelay_open_connections", frozenset()), 0) == 0
    assert found.get(("lensrelay_rooms", frozenset({("kind", "content")})), 0) == 0
    assert found[("lensrelay_updates_received_total", frozenset({("transport", "websocket")}))] == 1
    assert not list(tmp_path.glob("gauge_livesum_*.db"))
