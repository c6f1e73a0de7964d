"""``./scripts/serve`` installs only when what it installs changed: run in a copy of the checkout whose
``.venv/bin/python`` records how it was called (pip, migrate, the server) instead of doing it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

FAKE_PYTHON = """#!/usr/bin/env bash
# Records every call; runs real Python only for the stamp's one-liner.
if [ "$1" = "-c" ]; then exec {python} "$@"; fi
echo "$*" >> "$(dirname "$0")/../../calls.log"
if [ "$1 $2" = "-m pip" ] && [ -f "$(dirname "$0")/../../pip-fails" ]; then exit 1; fi
exit 0
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "serve", tmp_path / "scripts" / "serve")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON.format(python=sys.executable))
    python.chmod(0o755)
    return tmp_path


def serve(checkout: Path, **env: str) -> tuple[str, list[str]]:
    calls = checkout / "calls.log"
    calls.unlink(missing_ok=True)
    clean = {k: v for k, v in os.environ.items() if k != "LENSRELAY_SKIP_INSTALL"}
    done = subprocess.run(
        [str(checkout / "scripts" / "serve")], env=clean | env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 or env.get("EXPECT_FAILURE"), done.stderr
    return done.stdout, calls.read_text().splitlines() if calls.exists() else []


def pip_calls(calls: list[str]) -> list[str]:
    return [call for call in calls if call.startswith("-m pip")]


def test_a_restart_with_nothing_changed_does_not_run_pip_and_serves(checkout: Path) -> None:
    output, calls = serve(checkout)
    assert "Installing Lens Relay" in output and pip_calls(calls) == [
        "-m pip install -q --upgrade pip",
        "-m pip install -q -e .",
    ]
    output, calls = serve(checkout)
    assert "not running pip" in output and pip_calls(calls) == []
    # and it still serves, migrating and loading the demo first (in the server's process)
    assert calls == ["-m lensrelay.server.serve --prepare -b 127.0.0.1 -p 8000"]


def test_a_changed_pyproject_reinstalls(checkout: Path) -> None:
    serve(checkout)
    with (checkout / "pyproject.toml").open("a") as project:
        project.write("\n# a dependency changed\n")
    output, calls = serve(checkout)
    assert "Installing Lens Relay" in output and len(pip_calls(calls)) == 2
    assert pip_calls(serve(checkout)[1]) == []


def test_a_failed_install_is_tried_again_next_time(checkout: Path) -> None:
    (checkout / "pip-fails").touch()
    serve(checkout, EXPECT_FAILURE="1")
    assert not (checkout / ".venv" / ".lensrelay-serve-installed").exists()
    (checkout / "pip-fails").unlink()
    assert len(pip_calls(serve(checkout)[1])) == 2


def test_skip_install_never_installs(checkout: Path) -> None:
    output, calls = serve(checkout, LENSRELAY_SKIP_INSTALL="1")
    assert pip_calls(calls) == [] and "Installing" not in output
