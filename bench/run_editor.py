"""The browser editor's figures (issue 20): MCP `edit` → tracked change visible in a browser, with a Node
y-websocket client watching the same document as the peer; a 5,000-line note with 500 suggestions opened
and typed in, with the same note without suggestions as the peer; the bundle's gzipped size; and
screenshots of the editor (suggestions, presence, file tree) for a person to look at.

    .venv/bin/python -m bench.run_editor --edits 40 --out bench/out/editor

Issue 32 (a keystroke in the big note): `--big-only` skips the MCP latency and the screenshots;
`--bundle FILE` (repeatable) serves that editor bundle instead of the working tree's, each in turn for
`--rounds` rounds, so a change is measured beside its baseline in one session, e.g. the committed one:

    git show HEAD:suggestions/static/suggestions/editor/editor.js > /tmp/editor-head.js
    .venv/bin/python -m bench.run_editor --big-only --keys 200 --rounds 3 \
        --bundle /tmp/editor-head.js --bundle suggestions/static/suggestions/editor/editor.js

Each round types `--keys` keys live (at offset 2000, as before) and in suggesting mode (the Suggesting toggle
on, at the start of line 2501, as bench.run_suggesting), the editor focused and that place in view first;
it reports per keystroke the synchronous part (dispatch + the layout it causes, as before: `key_*`) and the
whole frame's work (that, plus CodeMirror's measure pass, which otherwise runs in the next animation frame:
`frame_*`), and 40 Backspaces in suggesting mode at the end of a plain line (the deletion growing). Every
page types into the same note, so a later page finds what earlier ones typed (a few hundred characters).
EDITOR_PROFILE=1 adds the slowest keys and a CPU profile of 50 more (/tmp/editor-profile-*.cpuprofile).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gzip
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.e2e.browser import PASSWORD, BrowserThread, call, mcp_client, signed_in_context
from tests.e2e.relay import Relay, migrated_template, new_relay_server
from tests.e2e.yclient import YClient

FOLDER = "Bench"
LINES = 5000
SUGGESTIONS = 500
PROFILE = __import__("os").environ.get("EDITOR_PROFILE") == "1"
BUNDLE = Path(__file__).resolve().parent.parent / "suggestions/static/suggestions/editor/editor.js"

SETUP = """
import json
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from lensrelay.access.tokens import token_create
call_command("import_vault", {vault!r}, folder={folder!r})
_, raw = token_create(name="claude", role="suggest")
perms = [Permission.objects.get(codename=c) for c in ("view_suggestion", "review_suggestion", "edit_live")]
for name in ("ann", "bob"):
    User.objects.create_user(name, password={password!r}, is_staff=True).user_permissions.set(perms)
print("TOKEN " + json.dumps(raw))
"""


def big_note(*, marked: bool) -> str:
    lines = []
    every = LINES // SUGGESTIONS
    for i in range(LINES):
        if marked and i % every == 0:
            meta = json.dumps({"author": "claude", "timestamp": 1_795_000_000_000, "id": f"s{i:05d}"})
            meta = meta.replace(" ", "") + "@@"
            lines.append(f"Line {i} has {{--{meta}an old--}}{{++{meta}a new++}} phrase in it.")
        elif i % 5 == 4:
            lines.append(
                ""
            )  # paragraphs of four lines, as notes have (one 5,000-line paragraph: see history)
        else:
            lines.append(f"Line {i} is plain text with [[a link]] and *emphasis*.")
    return "# Big\n\n" + "\n".join(lines) + "\n"


# Per keystroke, in the page: [dispatch + layout, dispatch + layout + CodeMirror's measure pass] in ms.
TYPE_JS = """([n, at0, key]) => {
    const view = window.lensEditor.view;
    view.focus();
    view.dispatch({selection: {anchor: at0}, scrollIntoView: true});
    view.measure();
    const sync = [], frame = [];
    for (let i = 0; i < n; i++) {
        const t = performance.now();
        const at = view.state.selection.main.head;
        view.dispatch(view.state.update({changes: {from: at, insert: key}, selection: {anchor: at + 1},
                                         userEvent: "input.type"}));
        view.dom.getBoundingClientRect();  // force the layout a keystroke would cause
        sync.push(performance.now() - t);
        view.measure();  // what the next animation frame would do: read the DOM, adjust the viewport
        frame.push(performance.now() - t);
    }
    return [sync, frame];
}"""
SUGGESTING_ANCHOR = "Line 2501 is plain text"
# Per Backspace in suggesting mode (the plain text struck through, the deletion growing), in ms.
BACKSPACE_JS = """([n, at0]) => {
    const view = window.lensEditor.view;
    view.dispatch({selection: {anchor: at0}, scrollIntoView: true});
    view.measure();
    const frame = [];
    for (let i = 0; i < n; i++) {
        const t = performance.now();
        const at = view.state.selection.main.head;
        view.dispatch(view.state.update({changes: {from: at - 1, to: at}, selection: {anchor: at - 1},
                                         userEvent: "delete.backward"}));
        view.dom.getBoundingClientRect();
        view.measure();
        frame.push(performance.now() - t);
    }
    return frame;
}"""
BACKSPACES = 40  # within one line of the big note


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edits", type=int, default=40)
    parser.add_argument("--keys", type=int, default=60)
    parser.add_argument("--out", default="bench/out/editor")
    parser.add_argument(
        "--big-only", action="store_true", help="only the big note (no MCP latency, no screenshots)"
    )
    parser.add_argument(
        "--bundle", action="append", default=[], help="an editor.js to serve instead (repeatable)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="rounds of the big note, each bundle in turn")
    parser.add_argument(
        "--authors",
        default="",
        help="also type --keys live keys in the big note with the Authors view in each of these modes "
        "(comma-separated: off,gutter,inline), in turn",
    )
    parser.add_argument(
        "--preview",
        action="store_true",
        help="also type --keys live keys in the big note in live preview (issue 32), then turn it off",
    )
    args = parser.parse_args()
    bundles: list[Path | None] = [Path(b).resolve() for b in args.bundle] or [None]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-editor-"))
    vault = work / "vault"
    vault.mkdir()
    (vault / "Latency.md").write_text(
        "# Latency\n\n" + "".join(f"Sentence {i} says alpha.\n" for i in range(args.edits)), encoding="utf-8"
    )
    (vault / "Big.md").write_text(big_note(marked=True), encoding="utf-8")
    (vault / "Plain.md").write_text(big_note(marked=False), encoding="utf-8")
    (vault / "Notes").mkdir()
    (vault / "Notes" / "Ideas.md").write_text("# Ideas\n", encoding="utf-8")
    template = migrated_template(work / "template")
    server = new_relay_server(work / "server", template=template)
    server.start()
    browser = BrowserThread()
    browser.start()
    results: dict[str, Any] = {}
    try:
        relay = Relay(server, template.tokens)
        printed = relay.manage(
            "shell", "-c", SETUP.format(vault=str(vault), folder=FOLDER, password=PASSWORD)
        )
        token = json.loads(next(x for x in printed.splitlines() if x.startswith("TOKEN "))[6:])
        writer = template.tokens["edit"]
        paths = await relay.document_paths(writer, folder=FOLDER)
        base = f"{relay.http_url}/admin/suggestions/suggestion/document/"
        ann = signed_in_context(browser, relay.http_url, "ann")
        bob = signed_in_context(browser, relay.http_url, "bob")

        def open_page(context: Any, doc: str, bundle: Path | None = None) -> Any:
            page = context.new_page()
            page.set_viewport_size({"width": 1400, "height": 900})
            if bundle is not None:
                body = bundle.read_bytes()
                page.route(
                    lambda url: "/suggestions/editor/editor" in url and url.split("?")[0].endswith(".js"),
                    lambda route: route.fulfill(body=body, content_type="application/javascript"),
                )
            started = time.perf_counter()
            page.goto(f"{base}{paths[f'{FOLDER}/{doc}']}/edit/")
            page.wait_for_selector("#lr-editor[data-synced=true] .cm-line")
            page.wait_for_function("() => window.lensEditor.view.state.doc.length > 20")
            return page, time.perf_counter() - started

        async def latency_and_screenshots(results: dict[str, Any]) -> None:
            """1. MCP edit -> tracked change visible, browser and Node client alike; the screenshots."""
            latency_id = paths[f"{FOLDER}/Latency.md"]
            page_a, _ = browser.call(lambda: open_page(ann, "Latency.md"))
            page_b, _ = browser.call(lambda: open_page(bob, "Latency.md"))
            node = await YClient.spawn(label="node")
            await node.connect(relay.doc_url(latency_id), latency_id, params={"token": writer})
            await node.wait_synced()
            seen_browser: list[float] = []
            seen_node: list[float] = []
            async with mcp_client(relay.http_url, token) as client:
                await call(client, "read", {"file_path": f"{FOLDER}/Latency.md"})
                for i in range(args.edits):
                    marker = f"omega{i}x"
                    started = time.perf_counter()

                    def wait_browser(marker: str = marker) -> float:
                        page_a.wait_for_function(
                            "m => [...document.querySelectorAll('.lr-ins')]"
                            ".some(e => e.textContent.includes(m))",
                            arg=marker,
                            polling=5,
                        )
                        return time.perf_counter()

                    async def wait_node(marker: str = marker) -> float:
                        await node.wait_text(contains=marker)
                        return time.perf_counter()

                    edit = call(
                        client,
                        "edit",
                        {
                            "file_path": f"{FOLDER}/Latency.md",
                            "old_string": f"Sentence {i} says alpha.",
                            "new_string": f"Sentence {i} says {marker}.",
                        },
                    )
                    browser_done, node_done, _ = await asyncio.gather(
                        browser.run(wait_browser), wait_node(), edit
                    )
                    seen_browser.append((browser_done - started) * 1000)
                    seen_node.append((node_done - started) * 1000)
            await node.close()
            results["edit_to_browser_ms"] = {"p50": pct(seen_browser, 0.5), "p99": pct(seen_browser, 0.99)}
            results["edit_to_node_ms"] = {"p50": pct(seen_node, 0.5), "p99": pct(seen_node, 0.99)}

            # Screenshots: suggestions, presence (two people), the file tree.
            def shoot() -> None:
                page_b.bring_to_front()
                page_b.focus("#lr-editor .cm-content")
                page_b.evaluate("window.lensEditor.view.dispatch({selection: {anchor: 12, head: 40}})")
                page_a.bring_to_front()
                page_a.wait_for_function(
                    "() => document.querySelectorAll('#lr-presence .lr-person').length >= 2"
                )
                time.sleep(0.3)
                page_a.screenshot(path=str(out / "editor-suggestions-presence-tree.png"))
                page_a.hover(".lr-author")
                time.sleep(0.2)
                page_a.screenshot(
                    path=str(out / "editor-hover.png"), clip={"x": 0, "y": 0, "width": 1400, "height": 500}
                )

            browser.call(shoot)

        if not args.big_only:
            await latency_and_screenshots(results)

        # 2. The big note: open until interactive, then type (per keystroke, synchronous update).
        def big(doc: str, bundle: Path | None) -> dict[str, float]:
            page, opened = open_page(ann, doc, bundle)
            started = time.perf_counter()
            page.wait_for_function(f"() => window.lensEditor.view.state.doc.lines > {LINES}")
            if doc == "Big.md":
                page.wait_for_function("() => document.querySelectorAll('.lr-actions').length > 0")
            ready = time.perf_counter() - started
            page.focus("#lr-editor .cm-content")
            sync, frame = page.evaluate(TYPE_JS, [args.keys, 2000, "k"])
            figures = {
                "open_s": opened,
                "interactive_s": opened + ready,
                "key_p50_ms": pct(sync, 0.5),
                "key_p99_ms": pct(sync, 0.99),
                "frame_p50_ms": pct(frame, 0.5),
                "frame_p99_ms": pct(frame, 0.99),
            }
            if PROFILE:
                slow = sorted(range(len(frame)), key=lambda i: -frame[i])[:12]
                print(
                    doc,
                    "slowest keys (index, sync ms, frame ms):",
                    [(i, sync[i], frame[i]) for i in sorted(slow)],
                    file=sys.stderr,
                )
                profile_keys(page, doc)
            for mode in filter(None, args.authors.split(",")):
                page.select_option("#lr-authorship", mode)
                page.focus("#lr-editor .cm-content")
                sync, _ = page.evaluate(TYPE_JS, [args.keys, 2000, "a"])
                figures[f"authors_{mode}_key_p50_ms"] = pct(sync, 0.5)
                figures[f"authors_{mode}_key_p99_ms"] = pct(sync, 0.99)
            if args.preview:
                page.check("#lr-live-preview")
                page.focus("#lr-editor .cm-content")
                sync, _ = page.evaluate(TYPE_JS, [args.keys, 2000, "p"])
                figures["preview_key_p50_ms"] = pct(sync, 0.5)
                figures["preview_key_p99_ms"] = pct(sync, 0.99)
                page.uncheck("#lr-live-preview")
            figures["visible_marks"] = page.locator(".lr-ins").count()
            if PROFILE:
                print(
                    doc,
                    "viewport and visible insertions:",
                    page.evaluate("""() => {
                    const view = window.lensEditor.view;
                    return [view.viewport, view.visibleRanges,
                            [...document.querySelectorAll('.lr-ins')].map(e => view.posAtDOM(e))];
                }"""),
                    file=sys.stderr,
                )
            if doc == "Big.md":
                if not args.big_only:
                    page.screenshot(path=str(out / "editor-big.png"))
                # Suggesting mode: the toggle joins again with ?suggesting=1; type where run_suggesting types.
                page.click("#lr-suggesting")
                page.wait_for_function(
                    "() => document.getElementById('lr-connection').dataset.state === 'connected'"
                )
                page.wait_for_selector("#lr-editor[data-synced=true]")
                at = page.evaluate(
                    "a => window.lensEditor.view.state.doc.toString().indexOf(a)", SUGGESTING_ANCHOR
                )
                sync, frame = page.evaluate(TYPE_JS, [args.keys, at, "s"])
                if PROFILE:
                    slow = sorted(range(len(frame)), key=lambda i: -frame[i])[:12]
                    print(
                        doc,
                        "suggesting: slowest keys (index, sync ms, frame ms):",
                        [(i, sync[i], frame[i]) for i in sorted(slow)],
                        file=sys.stderr,
                    )
                    profile_keys(page, f"{doc}-suggesting")
                text = page.evaluate("() => window.lensEditor.view.state.doc.toString()")
                assert "s" * args.keys + "q" * 50 * PROFILE + "++}" + SUGGESTING_ANCHOR in text, (
                    "the keys did not become one suggestion"
                )
                # Backspaces from the end of a line of its own (each page another, in the same document).
                line = 2601 + 10 * next(pages)  # a plain line, as the next one
                end = page.evaluate(
                    "a => window.lensEditor.view.state.doc.toString().indexOf(a) - 1",
                    f"Line {line + 1} is plain",
                )
                deleting = page.evaluate(BACKSPACE_JS, [BACKSPACES, end])
                text = page.evaluate("() => window.lensEditor.view.state.doc.toString()")
                assert f"Line {line} is pl{{--" in text, "the Backspaces did not strike through"
                figures.update(
                    {
                        "suggesting_backspace_p50_ms": pct(deleting, 0.5),
                        "suggesting_backspace_max_ms": max(deleting),
                        "suggesting_key_p50_ms": pct(sync, 0.5),
                        "suggesting_key_p99_ms": pct(sync, 0.99),
                        "suggesting_frame_p50_ms": pct(frame, 0.5),
                        "suggesting_frame_p99_ms": pct(frame, 0.99),
                    }
                )
            page.close()
            return {k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}

        rounds: list[dict[str, Any]] = []
        pages = itertools.count()
        for round_no in range(args.rounds):
            for bundle in bundles:
                label = str(bundle) if bundle else "working tree"
                for doc, name in (("Big.md", "big_with_suggestions"), ("Plain.md", "big_plain")):
                    figures = browser.call(functools.partial(big, doc, bundle))
                    row = {"round": round_no + 1, "bundle": label, "note": name, **figures}
                    rounds.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
        results["big"] = rounds
        if len(bundles) == 1 and args.rounds == 1:
            results["big_with_suggestions"], results["big_plain"] = rounds[0], rounds[1]
        raw = BUNDLE.read_bytes()
        results["bundle_bytes"] = len(raw)
        results["bundle_gzip_bytes"] = len(gzip.compress(raw, 9))

        def close_contexts() -> None:
            ann.close()
            bob.close()

        browser.call(close_contexts)
    finally:
        browser.close()
        server.stop()
    print(json.dumps(results, indent=2))
    print(summary(rounds))
    if "edit_to_browser_ms" in results:
        ratio = results["edit_to_browser_ms"]["p50"] / max(results["edit_to_node_ms"]["p50"], 1e-9)
        print(f"edit -> browser p50 / node p50 = {ratio:.2f}x")


def summary(rounds: list[dict[str, Any]]) -> str:
    """One Markdown table: per bundle and note, each round's p50 / p99 and the open time."""
    lines = [
        "| bundle | note | round | open → interactive s | live key p50 / p99 ms | live frame p50 / p99 ms "
        "| suggesting key p50 / p99 ms | suggesting frame p50 / p99 ms | suggesting Backspace p50 / max ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rounds, key=lambda r: (r["bundle"], r["note"], r["round"])):

        def pair(a: str, b: str, r: dict[str, Any] = r) -> str:
            return f"{r[a]} / {r[b]}" if a in r else "—"

        lines.append(
            f"| {Path(r['bundle']).name} | {r['note']} | {r['round']} | {r['interactive_s']} "
            f"| {pair('key_p50_ms', 'key_p99_ms')} | {pair('frame_p50_ms', 'frame_p99_ms')} "
            f"| {pair('suggesting_key_p50_ms', 'suggesting_key_p99_ms')} "
            f"| {pair('suggesting_frame_p50_ms', 'suggesting_frame_p99_ms')} "
            f"| {pair('suggesting_backspace_p50_ms', 'suggesting_backspace_max_ms')} |"
        )
    return "\n".join(lines)


def profile_keys(page: Any, doc: str) -> None:
    """EDITOR_PROFILE=1: self time of the top functions over 20 more keystrokes (CDP Profiler)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 100})
    cdp.send("Profiler.start")
    page.evaluate("""() => { const view = window.lensEditor.view;
        for (let i = 0; i < 50; i++) { const at = view.state.selection.main.head;
          view.dispatch(view.state.update({changes: {from: at, insert: "q"}, selection: {anchor: at + 1},
                                           userEvent: "input.type"}));
          view.measure(); } }""")
    profile = cdp.send("Profiler.stop")["profile"]
    nodes = {n["id"]: n for n in profile["nodes"]}
    self_time: dict[str, int] = {}
    for sample in profile["samples"]:
        frame = nodes[sample]["callFrame"]
        key = f"{frame['functionName']}:{frame['lineNumber']}:{frame['columnNumber']}"
        self_time[key] = self_time.get(key, 0) + 1
    total = len(profile["samples"])
    print(doc, total, sorted(self_time.items(), key=lambda kv: -kv[1])[:25], file=sys.stderr)
    Path(f"/tmp/editor-profile-{doc}.cpuprofile").write_text(json.dumps(profile))


if __name__ == "__main__":
    asyncio.run(main())
