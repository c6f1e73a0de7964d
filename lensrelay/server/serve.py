"""Run Lens Relay under daphne with the settings' frame limit:
`python -m lensrelay.server.serve [--prepare] [daphne options]` (``--prepare``: migrate and load the demo
first, as ./scripts/serve does).

Plain daphne reads no Django setting for its WebSocket limits and drops any message over 1 MiB by cutting the
TCP connection: y-websocket then reconnects and resends the same update forever. Here daphne's limit is
LENSRELAY_MAX_FRAME_BYTES, and a message over it is closed with 4413 and a reason, which stops the client.
HTTP requests skip Twisted's form parsing (daphne never uses it) and report a lost connection straight to
the handler (`lensrelay.server.disconnect`). A socket the application closes gets its reason too (daphne
sends the code alone), so a client can say why: "document purged", "unknown document".
Its Prometheus metrics go to a directory settled before anything imports prometheus_client
(`lensrelay.server.metricsdir`), shared by the workers given the same one. daphne's classes as run here are
in `lensrelay.server.daphne_server`.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from pprint import pformat
from typing import Any

APPLICATION = "lensrelay.asgi:application"
# Migrate and load the demo before serving, in this process: what ./scripts/serve does on every start,
# without paying for Django's start-up three times.
PREPARE = "--prepare"


def main(argv: Sequence[str] | None = None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lensrelay.settings")
    from lensrelay.server.metricsdir import prepare_metrics_dir

    metrics_dir = prepare_metrics_dir()
    try:
        _serve(argv)
    finally:
        metrics_dir.finish()


def _serve(argv: Sequence[str] | None) -> None:
    import django

    from lensrelay.server.loopkind import loop_policy_tune

    loop_policy_tune()  # before anything imports daphne's server module, which makes the reactor's loop
    django.setup()
    from daphne.cli import CommandLineInterface

    args = list(sys.argv[1:] if argv is None else argv)
    if PREPARE in args:
        args.remove(PREPARE)
        _prepare()
    if any(arg.startswith(("--websocket-max-message-size", "--websocket-max-frame-size")) for arg in args):
        sys.exit(
            "lensrelay.server.serve: the WebSocket limits come from LENSRELAY_MAX_FRAME_BYTES;"
            " set that instead."
        )
    from lensrelay.server.beside import start_derive_beside
    from lensrelay.server.collector import collector_tune
    from lensrelay.server.switching import switch_interval_tune

    cli = CommandLineInterface()
    cli.server_class = _limited_server_class()
    importlib.import_module(APPLICATION.split(":")[0])
    collector_tune()
    switch_interval_tune()
    # Backlinks, search rows and vectors are made there, off this process's live path.
    beside = start_derive_beside()
    try:
        cli.run([*args, APPLICATION])
    finally:
        if beside is not None:
            beside.stop()


def _prepare() -> None:
    from django.core.management import call_command
    from django.db import connections

    call_command("migrate", interactive=False)
    call_command("demo")
    connections.close_all()  # the server's threads open their own


def _limited_server_class() -> type:
    """daphne's server class as the launcher runs it (lensrelay.server.daphne_server), with autobahn's
    per-connection debug line made lazy."""
    from lensrelay.server.daphne_server import LimitedServer

    _lazy_handshake_log()
    return LimitedServer


class LazyPformat:
    """`pprint.pformat(value)`, computed only if a log line is actually formatted."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __str__(self) -> str:
        return pformat(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def _lazy_handshake_log() -> None:
    # autobahn's `_connectionMade` pretty-prints its ~30 options for a debug line on every connection,
    # logged or not: ~0.25 ms of every WebSocket connect, before the handshake is answered. Twisted's
    # logger formats its fields only for an observer that wants the event, so a lazy value costs nothing
    # when debug logging is off and gives the same text when it is on.
    # Timings.__str__ is the module's one other use that must return the text itself.
    from autobahn.websocket import protocol

    if protocol.pformat is pformat:
        setattr(protocol.Timings, "__str__", _timings_text)  # noqa: B010  (mypy: no method assignment)
        setattr(protocol, "pformat", LazyPformat)  # noqa: B010


def _timings_text(timings: Any) -> str:
    return pformat(timings._timings)


if __name__ == "__main__":
    main()
