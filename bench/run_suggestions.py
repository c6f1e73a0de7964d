"""Suggestion round trips as the people in the document see them, with 50 clients connected to it.

``bench/node/review.mjs`` connects C y-websocket clients (one Node process, one clock) to a note with one line
per step (~5.8 KB for 100), then makes N sequential steps, each timed at the clients from the request to the
moment each client's ``Y.Text`` holds what it should:

1. **edit**: an assistant's ``edit`` over ``POST /mcp`` (one session, the note read first) replacing one
   word, until the clients see the CriticMarkup (``{--old--}{++new++}`` with its metadata);
2. **accept**: an editor's Accept in the admin (signed in, CSRF token, ``POST .../decide/``, what the
   Accept button sends; finding the suggestion in the changelist first is not timed), until the clients
   hold exactly the settled text.

The floor, in the same run: the same changes made by one more y-websocket client writing them itself
(markup as two inserts around the word, accept as two deletes), on our server and on
``@y/websocket-server`` 0.1.1 — what it costs a change of this size to reach the same 50 clients at all.

Afterwards every suggestion row must be ``accepted`` and the stored document must hold the settled text.

    .venv/bin/python -m bench.run_suggestions [--clients 50] [--edits 100]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import harness
from bench.run_grep import progress, server_env
from tests.e2e.liveserver import LiveServer
from tests.e2e.relay import read_text

FOLDER = "Bench"
REVIEWED = "Review.md"
DIRECT = "Direct.md"
EDITOR, PASSWORD = "bench-editor", "bench-password-not-secret"

_SETUP_SCRIPT = """
from django.contrib.auth.models import Permission, User
perms = Permission.objects.filter(
    content_type__app_label="suggestions", codename__in=["view_suggestion", "review_suggestion"]
)
user = User.objects.create_user({username!r}, password={password!r}, is_staff=True)
user.user_permissions.set(perms)
print("ok")
"""

_COUNT_SCRIPT = """
from collections import Counter
from suggestions.models import Suggestion
print(dict(Counter(Suggestion.objects.values_list("status", flat=True))))
"""


def note_text(words: int) -> str:
    """A note whose every line holds one word that occurs nowhere else (``alpha0007``), ~55 bytes a line."""
    lines = [f"Line {i:02d}: the quick alpha{i:04d} fox jumps over the lazy dog." for i in range(words)]
    return "# Review\n\n" + "\n".join(lines) + "\n"


def edits(count: int) -> list[dict[str, str]]:
    return [{"old": f"alpha{i:04d}", "new": f"omega{i:04d}"} for i in range(count)]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=50, help="y-websocket clients on the document")
    parser.add_argument("--edits", type=int, default=100, help="sequential edit + accept steps")
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for our server; may be repeated",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    harness.add_source_arguments(parser)
    return parser.parse_args(argv)


def summarize(steps: list[dict[str, Any]], phase: str, key: str) -> tuple[float, float, float]:
    values = sorted(step[phase][key] for step in steps)
    return (
        harness.median(values),
        values[min(len(values) - 1, max(0, -(-99 * len(values) // 100) - 1))],
        values[-1],
    )


def run_driver(args: argparse.Namespace, spec: dict[str, Any]) -> list[dict[str, Any]]:
    base = {"clients": args.clients, "text": note_text(args.edits), "edits": edits(args.edits)}
    result = harness.run_driver("review.mjs", {**base, **spec}, timeout=170.0)
    steps: list[dict[str, Any]] = result["steps"]
    return steps


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    harness.require_node_packages()
    workdir = Path(tempfile.mkdtemp(prefix="lensrelay-bench-review-"))
    started = time.monotonic()
    source, source_text = harness.resolve_source(args, workdir)
    harness.print_header("Suggestions: edit and accept round trips seen by live clients", source=source_text)

    text = note_text(args.edits)
    vault = workdir / "vault"
    vault.mkdir()
    for name in (REVIEWED, DIRECT):
        (vault / name).write_text(text)
    relay = harness.relay_server(workdir, source=source, **server_env(args))
    reference: LiveServer | None = None
    failures: list[str] = []
    results: dict[str, list[dict[str, Any]]] = {}
    try:
        harness.manage(relay, "migrate", "--noinput")
        relay.setup = []
        harness.import_vault(relay, vault, folder=FOLDER)
        harness.manage(relay, "shell", "-c", _SETUP_SCRIPT.format(username=EDITOR, password=PASSWORD))
        assistant = harness.create_token(relay, role="suggest")
        writer_token = harness.create_token(relay, role="edit")
        relay.start()
        reference = harness.start_reference(workdir)
        doc_ids = harness.document_ids(relay, token=writer_token, folder=FOLDER)

        progress(f"our server: MCP edit + admin accept, {args.clients} clients, {args.edits} steps")
        results["mcp"] = run_driver(
            args,
            {
                "mode": "mcp",
                "target": harness.relay_target(relay, doc_ids[f"{FOLDER}/{REVIEWED}"], writer_token),
                "mcp": {
                    "url": f"{relay.http_url}/mcp",
                    "token": assistant,
                    "filePath": f"{FOLDER}/{REVIEWED}",
                },
                "admin": {"base": relay.http_url, "username": EDITOR, "password": PASSWORD},
            },
        )
        progress("our server: the same changes written by a y-websocket client")
        results["direct-ours"] = run_driver(
            args,
            {
                "mode": "direct",
                "target": harness.relay_target(relay, doc_ids[f"{FOLDER}/{DIRECT}"], writer_token),
            },
        )
        progress("reference server: the same changes written by a y-websocket client")
        results["direct-reference"] = run_driver(
            args, {"mode": "direct", "target": harness.reference_target(reference, "review"), "fill": True}
        )

        statuses = json.loads(
            harness.manage(relay, "shell", "-c", _COUNT_SCRIPT).strip().splitlines()[-1].replace("'", '"')
        )
        if statuses != {"accepted": args.edits}:
            failures.append(f"suggestion rows: {statuses}, expected {args.edits} accepted")
        expected = text
        for edit in edits(args.edits):
            expected = expected.replace(edit["old"], edit["new"])
        stored = read_text(
            harness.http_get(
                f"{relay.http_url}/d/{doc_ids[f'{FOLDER}/{REVIEWED}']}/as-update", token=writer_token
            )
        )
        if stored != expected:
            failures.append("the stored document does not hold the settled text")
    finally:
        relay.kill()
        if reference is not None:
            reference.kill()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    print(
        f"One note of {len(text.encode())} bytes, {args.clients} y-websocket clients connected to it "
        f"(one Node process), {args.edits} sequential steps, each one word replaced; times in ms from the "
        f'request to the moment the client\'s text is right. "observer": the first client connected; '
        f'"all {args.clients}": the last of them. Server environment: {", ".join(args.env) or "defaults"}.\n'
    )
    rows: list[list[object]] = []
    labels = {
        "mcp": ("ours", "MCP `edit`", "admin Accept (`POST …/decide/`)"),
        "direct-ours": ("ours", "client writes the markup", "client removes the markers"),
        "direct-reference": (
            "@y/websocket-server",
            "client writes the markup",
            "client removes the markers",
        ),
    }
    floor = {
        phase: summarize(results["direct-reference"], phase, "observer") for phase in ("markup", "settle")
    }
    for key, (server, edit_how, accept_how) in labels.items():
        for phase, how in (("markup", edit_how), ("settle", accept_how)):
            obs50, obs99, obs_max = summarize(results[key], phase, "observer")
            all50, all99, _ = summarize(results[key], phase, "all")
            response = f"{summarize(results[key], phase, 'response')[0]:.1f}" if key == "mcp" else "-"
            rows.append(
                [
                    "edit → markup seen" if phase == "markup" else "accept → settled text seen",
                    server,
                    how,
                    f"{obs50:.1f}",
                    f"{obs99:.1f}",
                    f"{obs_max:.0f}",
                    f"{all50:.1f}",
                    f"{all99:.1f}",
                    response,
                    f"{harness.ratio(obs50, floor[phase][0])} / {harness.ratio(obs99, floor[phase][1])}",
                ]
            )
    print(
        harness.table(
            [
                "step",
                "server",
                "how",
                "observer p50",
                "observer p99",
                "observer max",
                f"all {args.clients} p50",
                f"all {args.clients} p99",
                "HTTP response p50",
                "vs reference p50 / p99",
            ],
            rows,
        )
    )
    print(
        f"\nChecks: every suggestion row accepted and the stored note equal to the settled text: "
        f"{'yes' if not failures else 'NO'}. Wall time {time.monotonic() - started:.0f} s; load average "
        f"at end {harness.load_average()}."
    )
    for failure in failures:
        print(f"- FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
