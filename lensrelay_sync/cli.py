"""The command: `lensrelay-sync PATH --url URL --token TOKEN [--folder NAME] [--once]`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

from lensrelay_sync.link import Closed
from lensrelay_sync.mirror import Mirror
from lensrelay_sync.server import Server, ServerError
from lensrelay_sync.state import StateMismatch

logger = logging.getLogger("lensrelay_sync")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="lensrelay-sync",
        description="Mirror a Lens Relay folder into a directory and back, live (Ctrl-C stops).",
    )
    p.add_argument("path", type=Path, help="the directory (created when missing)")
    p.add_argument(
        "--url",
        default=os.environ.get("LENSRELAY_URL", "http://127.0.0.1:8000"),
        help="the server (default $LENSRELAY_URL or http://127.0.0.1:8000)",
    )
    p.add_argument(
        "--token",
        default=os.environ.get("LENSRELAY_TOKEN"),
        help="an API token (default $LENSRELAY_TOKEN, which keeps it out of the process list)",
    )
    p.add_argument("--folder", help="the folder to mirror (may be left out when the token sees only one)")
    p.add_argument("--once", action="store_true", help="reconcile once, then exit")
    p.add_argument("--interval", type=float, default=0.2, help="seconds between scans of the directory")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("-q", "--quiet", action="store_true", help="say only warnings and errors")
    return p


async def run(args: argparse.Namespace) -> int:
    server = Server(args.url, args.token)
    folder = await server.folder(args.folder)
    writable = await server.may_write(folder)
    suggests = not writable and await server.may_suggest()
    root = args.path
    root.mkdir(parents=True, exist_ok=True)
    mirror = Mirror(
        root=root, server=server, folder=folder, writable=writable, suggests=suggests, interval=args.interval
    )
    if writable:
        mode = "two-way"
    elif suggests:
        mode = "suggesting (the token may only suggest: a saved note becomes its suggestions)"
    else:
        mode = "read-only (the token may only read: local changes are not sent)"
    logger.info("mirroring %r from %s into %s, %s", folder.name, server.url, mirror.root, mode)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await mirror.run(stop, once=args.once)
    finally:
        await mirror.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    level = logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO
    logging.basicConfig(level=level, format="lensrelay-sync: %(message)s", stream=sys.stderr)
    logging.getLogger("websockets").setLevel(logging.WARNING)
    if not args.token:
        print("lensrelay-sync: give a token with --token or $LENSRELAY_TOKEN", file=sys.stderr)
        return 2
    try:
        return asyncio.run(run(args))
    except (ServerError, StateMismatch, Closed, TimeoutError, FileNotFoundError) as exc:
        print(f"lensrelay-sync: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
