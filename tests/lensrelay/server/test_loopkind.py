"""The launcher's event loop: uvloop's under Twisted's reactor unless LENSRELAY_UVLOOP is off, set before
daphne's server module makes the loop, and the standard loop where uvloop cannot be imported."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from lensrelay.server.loopkind import loop_policy_tune

# A fresh interpreter: the policy and daphne's loop are process-wide and made once.
PROBE = """
import django
from lensrelay.server.loopkind import loop_policy_tune
kind = loop_policy_tune()
django.setup()
import daphne.server
from twisted.internet import reactor
print(kind, type(daphne.server.twisted_loop).__module__, type(reactor._asyncioEventloop).__module__)
"""


def probe(**env: str) -> list[str]:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "lensrelay.settings", **env}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=environment, check=True
    )
    return out.stdout.split()


def test_the_reactor_runs_on_uvloop_by_default_and_on_asyncio_when_turned_off() -> None:
    assert probe() == ["uvloop", "uvloop", "uvloop"]
    assert probe(LENSRELAY_UVLOOP="false") == ["asyncio", "asyncio.unix_events", "asyncio.unix_events"]


def test_without_uvloop_the_standard_loop_runs(tmp_path: object) -> None:
    # A `uvloop` that cannot be imported, first on the path.
    hidden = os.path.join(str(tmp_path), "uvloop")
    os.makedirs(hidden)
    with open(os.path.join(hidden, "__init__.py"), "w") as module:
        module.write("raise ImportError('no uvloop here')\n")
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    assert probe(PYTHONPATH=path)[0] == "asyncio"


def test_too_late_once_daphnes_server_made_its_loop() -> None:
    import daphne.server  # noqa: F401  (this process's test settings import it anyway)

    with override_settings(LENSRELAY_UVLOOP=True), pytest.raises(ImproperlyConfigured):
        loop_policy_tune()
    with override_settings(LENSRELAY_UVLOOP=False):
        assert loop_policy_tune() == "asyncio"
