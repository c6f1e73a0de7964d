"""Tasks: from a person's decision to the task's completion seen by `tasks/get`, and heard on a listen stream.

An assistant (the official MCP SDK client in protocol 2026-07-28, declaring the Tasks extension:
``tests/e2e/tasks_client.py``) makes N `edit` calls answered with tasks, one per line of one note. Then, for
each task in turn, it polls `tasks/get` every ``--poll-ms`` (50) while a reviewer decides the suggestion in
the admin (signed in, CSRF token, ``POST …/decide/``, what the Accept and Reject buttons send; accept and
reject alternate). Timed: from the moment the decide POST was answered (the decision is committed then) to the
first `tasks/get` answer that says `completed`; and the same from the moment the POST was sent. The status is
read from the suggestion's row at each `tasks/get`, so the figure is one poll interval at most plus a
`tasks/get`'s own time (given for reference: its p50 while the task was working). Beside the polling, a
`subscriptions/listen` stream named every task (`taskIds`) before the first decision: timed too, from the
POST sent to the `notifications/tasks` saying `completed`.

Afterwards every task must be completed with the decision it was given.

    .venv/bin/python -m bench.run_tasks [--tasks 20] [--poll-ms 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import harness
from bench.run_grep import progress
from tests.e2e.browser import PASSWORD
from tests.e2e.tasks_client import TaskListener, call_as_task, get_task, listen_tasks, tasks_client
from tests.e2e.test_undo_http import Staff

FOLDER = "Bench"
NOTE = "Tasks.md"
EDITOR = "rita"
_SETUP_SCRIPT = """
from django.contrib.auth.models import Permission, User
review = Permission.objects.filter(codename__in=["view_suggestion", "review_suggestion"])
User.objects.create_user({username!r}, password={password!r}, is_staff=True).user_permissions.set(review)
"""
_PKS_SCRIPT = """
import json
from suggestions.models import Suggestion
print(json.dumps(dict(Suggestion.objects.values_list("uid", "pk"))))
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=20, help="tasks to decide, one after another")
    parser.add_argument("--poll-ms", type=float, default=50.0, help="the assistant's tasks/get interval")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    return parser.parse_args(argv)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def measure(args: argparse.Namespace, relay: Any, token: str) -> dict[str, Any]:
    path = f"{FOLDER}/{NOTE}"
    pks: dict[str, int] = {}
    created: list[tuple[str, str]] = []  # (task id, suggestion uid)
    async with tasks_client(relay.http_url, token) as assistant:
        await assistant.call_tool("read", {"file_path": path})
        for i in range(args.tasks):
            task = await call_as_task(
                assistant,
                "edit",
                {"file_path": path, "old_string": f"line {i:03d}", "new_string": f"row {i:03d}"},
            )
            uid = (task.status_message or "").split("(suggestion ", 1)[1].split(",", 1)[0]
            created.append((task.task_id, uid))
        pks = json.loads(harness.manage(relay, "shell", "-c", _PKS_SCRIPT).strip().splitlines()[-1])
        rita = await Staff.sign_in(relay.http_url, EDITOR)
        async with listen_tasks(relay.http_url, token, [task_id for task_id, _ in created]) as listener:
            return await _decide_each(args, assistant, listener, rita, created, pks)


async def _decide_each(
    args: argparse.Namespace,
    assistant: Any,
    listener: TaskListener,
    rita: Any,
    created: list[tuple[str, str]],
    pks: dict[str, int],
) -> dict[str, Any]:
    interval = args.poll_ms / 1000
    heard: dict[str, float] = {}

    async def hear() -> None:
        while True:
            message = await listener.next(timeout=3600)
            params = message.get("params", {})
            if message.get("method") == "notifications/tasks" and params.get("status") == "completed":
                heard.setdefault(params["taskId"], time.perf_counter())

    hearing = asyncio.create_task(hear())
    try:
        since_answer: list[float] = []
        since_sent: list[float] = []
        pushed: list[float] = []
        get_ms: list[float] = []
        failures: list[str] = []
        for i, (task_id, uid) in enumerate(created):
            decision = "accept" if i % 2 == 0 else "reject"
            marks: dict[str, float] = {}

            async def poll(task_id: str = task_id) -> tuple[float, Any]:
                while True:
                    sent = time.perf_counter()
                    task = await get_task(assistant, task_id)
                    now = time.perf_counter()
                    if task.status != "working":
                        return now, task
                    get_ms.append((now - sent) * 1000)
                    await asyncio.sleep(interval)

            poller = asyncio.create_task(poll())
            await asyncio.sleep(interval * 2)  # polling steadily before the decision
            marks["sent"] = time.perf_counter()
            response = await rita.post(
                f"/admin/suggestions/suggestion/{pks[uid]}/decide/", {"decision": decision}
            )
            marks["answered"] = time.perf_counter()
            seen, task = await poller
            if response.status_code != 302:
                failures.append(f"decide {uid}: HTTP {response.status_code}")
            wanted = "accepted" if decision == "accept" else "rejected"
            got = (task.result or {}).get("structuredContent", {}).get("decision")
            if task.status != "completed" or got != wanted:
                failures.append(f"task of {uid}: {task.status} {got}, expected completed {wanted}")
            # 0 when a poll saw it before the POST's answer came back
            since_answer.append(max(0.0, seen - marks["answered"]) * 1000)
            since_sent.append((seen - marks["sent"]) * 1000)
            for _ in range(1000):  # the notification, at most 10 s after the decision
                if task_id in heard:
                    break
                await asyncio.sleep(0.01)
            if task_id in heard:
                pushed.append((heard[task_id] - marks["sent"]) * 1000)
            else:
                failures.append(f"task of {uid}: no notifications/tasks within 10 s")
    finally:
        hearing.cancel()
    return {
        "since_answer": since_answer,
        "since_sent": since_sent,
        "pushed": pushed,
        "get_ms": get_ms,
        "failures": failures,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="lensrelay-bench-tasks-"))
    started = time.monotonic()
    harness.print_header(
        "Tasks: a person's decision to the task's completion seen by tasks/get", source="working tree"
    )
    vault = workdir / "vault"
    vault.mkdir()
    (vault / NOTE).write_text("".join(f"This is line {i:03d} of the note.\n" for i in range(args.tasks)))
    relay = harness.relay_server(workdir)
    try:
        harness.manage(relay, "migrate", "--noinput")
        relay.setup = []
        harness.import_vault(relay, vault, folder=FOLDER)
        harness.manage(relay, "shell", "-c", _SETUP_SCRIPT.format(username=EDITOR, password=PASSWORD))
        token = harness.create_token(relay, role="suggest")
        relay.start()
        progress(f"{args.tasks} edit tasks, tasks/get every {args.poll_ms:.0f} ms, decided one after another")
        result = asyncio.run(measure(args, relay, token))
    finally:
        relay.kill()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    rows = []
    for label, key in (
        ("decide POST answered → completed seen", "since_answer"),
        ("decide POST sent → completed seen", "since_sent"),
        ("decide POST sent → notifications/tasks heard", "pushed"),
        ("tasks/get round trip (while working)", "get_ms"),
    ):
        values = result[key]
        rows.append([label, len(values), percentile(values, 0.5), percentile(values, 0.9), max(values)])
    print(
        f"{args.tasks} `edit` tasks on one note, decided one after another in the admin (accept and reject "
        f"alternating) while the assistant polls `tasks/get` every {args.poll_ms:.0f} ms; times in ms.\n"
    )
    print(harness.table(["interval", "n", "p50", "p90", "max"], rows))
    failures = result["failures"]
    print(
        f"\nChecks: every task completed with its decision: {'yes' if not failures else 'NO'}. Wall time "
        f"{time.monotonic() - started:.0f} s; load average at end {harness.load_average()}."
    )
    for failure in failures:
        print(f"- FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
