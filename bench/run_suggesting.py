"""Suggesting mode's figures (issue 31): a keystroke in the 5,000-line note with 500 suggestions, typed by a
person who may only suggest, against the same keystroke typed live by an editor (the peer, unchecked).

- in the browser: the time CodeMirror takes per keystroke, the suggesting filter (plan and rule) included;
- through the server: a keystroke sent by a Node y-websocket client holding the person's session, until a
  second Node client sees it (the server tries it on its copy of the note and checks the rule first).

    .venv/bin/python -m bench.run_suggesting --keys 200 --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.run_editor import FOLDER, big_note, pct
from tests.e2e.browser import PASSWORD, BrowserThread, signed_in_context
from tests.e2e.relay import Relay, migrated_template, new_relay_server
from tests.e2e.yclient import YClient

SETUP = """
import json
from django.contrib.auth.models import Group, User
from django.core.management import call_command
call_command("import_vault", {vault!r}, folder={folder!r})
sam = User.objects.create_user("sam", password={password!r}, is_staff=True)
sam.groups.add(Group.objects.get(name="Suggesters"))
ed = User.objects.create_user("ed", password={password!r}, is_staff=True)
ed.groups.add(Group.objects.get(name="Editors"))
print("SAM " + json.dumps(sam.pk))
"""
ANCHOR = "Line 2501 is plain text"
KEYSTROKE_JS = """([n, anchor]) => {
    const view = window.lensEditor.view;
    const at0 = view.state.doc.toString().indexOf(anchor);
    view.dispatch({selection: {anchor: at0}});
    const times = [];
    for (let i = 0; i < n; i++) {
        const t = performance.now();
        const at = view.state.selection.main.head;
        view.dispatch(view.state.update({changes: {from: at, insert: "k"}, selection: {anchor: at + 1},
                                         userEvent: "input.type"}));
        view.dom.getBoundingClientRect();
        times.push(performance.now() - t);
    }
    return times;
}"""


def cookie_of(browser: BrowserThread, context: Any) -> str:
    return "; ".join(f"{c['name']}={c['value']}" for c in browser.call(context.cookies))


async def round_trips(
    relay: Relay, doc_id: str, cookie: str, keys: int, *, first: str, watcher: YClient
) -> list[float]:
    """Milliseconds from a keystroke sent until the watcher has it, ``keys`` times at one place."""
    typist = await YClient.spawn(label="typist")
    try:
        await typist.connect(
            relay.doc_url(doc_id), doc_id, headers={"Cookie": cookie, "Origin": relay.http_url}
        )
        await typist.wait_synced()
        text = await typist.text()
        at = text.index(ANCHOR)
        await typist.insert(at, first)
        expected = text[:at] + first + text[at:]
        await watcher.wait_text(equals=expected)
        began = at
        at += len(first) - (3 if first.endswith("++}") else 0)
        times = []
        for _ in range(keys):
            started = time.perf_counter()
            await typist.insert(at, "k")
            expected = expected[:at] + "k" + expected[at:]
            # The whole run typed so far and what follows it: found only once this keystroke arrived.
            await watcher.wait_text(contains=expected[max(0, began - 10) : at + 24])
            times.append((time.perf_counter() - started) * 1000)
            at += 1
        return times
    finally:
        await typist.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-suggesting-"))
    vault = work / "vault"
    vault.mkdir()
    (vault / "Big.md").write_text(big_note(marked=True), encoding="utf-8")
    template = migrated_template(work / "template")
    server = new_relay_server(work / "server", template=template)
    server.start()
    browser = BrowserThread()
    browser.start()
    runs: list[dict[str, Any]] = []
    try:
        relay = Relay(server, template.tokens)
        printed = relay.manage(
            "shell", "-c", SETUP.format(vault=str(vault), folder=FOLDER, password=PASSWORD)
        )
        sam_id = json.loads(next(x for x in printed.splitlines() if x.startswith("SAM "))[4:])
        doc_id = (await relay.document_paths(template.tokens["edit"], folder=FOLDER))[f"{FOLDER}/Big.md"]
        sam, ed = (signed_in_context(browser, relay.http_url, name) for name in ("sam", "ed"))
        watcher = await YClient.spawn(label="watcher")
        await watcher.connect(relay.doc_url(doc_id), doc_id, params={"token": template.tokens["edit"]})
        await watcher.wait_synced()
        for run in range(args.runs):
            meta = json.dumps(
                {"author": "sam", "timestamp": 1, "id": f"{run:016x}", "user": sam_id}, separators=(",", ":")
            )
            suggesting = await round_trips(
                relay, doc_id, cookie_of(browser, sam), args.keys, first=f"{{++{meta}@@k++}}", watcher=watcher
            )
            live = await round_trips(
                relay, doc_id, cookie_of(browser, ed), args.keys, first="k", watcher=watcher
            )

            def in_browser(context: Any) -> list[float]:
                page = context.new_page()
                page.goto(f"{relay.http_url}/admin/suggestions/suggestion/document/{doc_id}/edit/")
                page.wait_for_selector("#lr-editor[data-synced=true] .cm-line")
                times = list(page.evaluate(KEYSTROKE_JS, [args.keys, ANCHOR]))
                page.close()
                return times

            browser_suggesting = browser.call(lambda: in_browser(sam))
            browser_live = browser.call(lambda: in_browser(ed))
            figures = {
                name: {"p50": round(pct(values, 0.5), 2), "p99": round(pct(values, 0.99), 2)}
                for name, values in {
                    "server_suggesting_ms": suggesting,
                    "server_live_ms": live,
                    "browser_suggesting_ms": browser_suggesting,
                    "browser_live_ms": browser_live,
                }.items()
            }
            runs.append(figures)
            print(json.dumps({"run": run + 1, **figures}))
        await watcher.close()
        browser.call(lambda: (sam.close(), ed.close()))
    finally:
        browser.close()
        server.stop()
    for name in runs[0]:
        p99s = sorted(r[name]["p99"] for r in runs)
        p50s = sorted(r[name]["p50"] for r in runs)
        print(f"{name}: p50 median {p50s[len(p50s) // 2]} ms, p99 median {p99s[len(p99s) // 2]} ms")


if __name__ == "__main__":
    asyncio.run(main())
