"""Every stored passage vector of this process in one NumPy matrix; a query is one matrix product.

Brute force is exact and fast enough at 10,000 notes (tens of thousands of passages, a few milliseconds
per query). The matrix follows the database: before a query a cheap signature (count and highest id of the
passages) is compared, and only rows that appeared or disappeared are read or dropped, whichever process
wrote them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Iterator
from dataclasses import replace

import numpy as np
from django.conf import settings
from threadpoolctl import threadpool_limits

from lensrelay.docstore.store import DocStore
from lensrelay.semantic.passages import PassageMatch
from lensrelay.semantic.vectors import StoredPassage, passage_ids, passages_signature, stored_passages

LOAD_CHUNK = 2000
FIRST_CANDIDATES = 512

# On a machine shared with sync and requests, BLAS threads spinning for one matrix-vector product cost
# far more than they gain (measured: 27 ms with them, 7 ms without, for 40,000 passages under load).
threadpool_limits(limits=max(1, settings.LENSRELAY_SEMANTIC_THREADS), user_api="blas")


class VectorMatrix:
    def __init__(self, store: DocStore) -> None:
        self.store = store
        self._lock = asyncio.Lock()
        self._reset("")

    def _reset(self, model: str) -> None:
        self.model = model
        self._checked = 0.0
        self._signature: tuple[int, int] | None = None
        self._ids = np.zeros(0, dtype=np.int64)
        self._docs = np.zeros(0, dtype=np.int64)  # a code per row, into _doc_ids
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._meta: list[StoredPassage] = []
        self._doc_codes: dict[str, int] = {}

    @property
    def nbytes(self) -> int:
        return int(self._matrix.nbytes + self._ids.nbytes + self._docs.nbytes)

    def __len__(self) -> int:
        return len(self._meta)

    def mark_stale(self) -> None:
        """This process changed stored passages: the next query looks at the database at once."""
        self._checked = 0.0

    async def refresh(self, model: str) -> None:
        """Bring the matrix in step with the stored passages of `model`.

        Other processes' changes are looked for at most every LENSRELAY_POLL_SECONDS, so a stream of
        queries costs the database one small query per interval; this process's own changes at once.
        """
        async with self._lock:
            if model != self.model:
                self._reset(model)
            now = time.monotonic()
            if now - self._checked < self.store.poll_seconds:
                return
            self._checked = now
            signature = await self.store.db(passages_signature, model=model)
            if signature == self._signature:
                return
            current = np.asarray(await self.store.db(passage_ids, model=model), dtype=np.int64)
            keep = np.isin(self._ids, current)
            missing = np.setdiff1d(current, self._ids[keep], assume_unique=True)
            added: list[StoredPassage] = []
            for start in range(0, len(missing), LOAD_CHUNK):
                chunk = missing[start : start + LOAD_CHUNK].tolist()
                added += await self.store.db(stored_passages, ids=chunk)
            self._apply(keep, added)
            self._signature = signature

    def _apply(self, keep: np.ndarray, added: list[StoredPassage]) -> None:
        new = np.array([np.frombuffer(row.vector, dtype=np.float32) for row in added], dtype=np.float32)
        # The matrix holds the vectors; the row descriptions need not hold a second copy.
        meta = [row for row, kept in zip(self._meta, keep.tolist(), strict=True) if kept]
        meta += [replace(row, vector=b"") for row in added]
        kept_rows = self._matrix[keep] if len(self._meta) else None
        if kept_rows is not None and len(new):
            matrix = np.vstack([kept_rows, new])
        else:
            matrix = new if kept_rows is None else kept_rows
        self._meta = meta
        self._matrix = matrix.reshape(len(meta), -1) if len(meta) else np.zeros((0, 0), dtype=np.float32)
        self._ids = np.array([row.id for row in meta], dtype=np.int64)
        self._doc_codes = {}
        self._docs = np.array(
            [self._doc_codes.setdefault(row.doc_id, len(self._doc_codes)) for row in meta], dtype=np.int64
        )

    def best_per_document(self, query: np.ndarray, allowed: Collection[str]) -> Iterator[PassageMatch]:
        """Documents among `allowed`, best first, each with its best passage. Rows of other documents
        are masked out before ranking, so nothing about them reaches the caller."""
        codes = [code for doc_id in allowed if (code := self._doc_codes.get(doc_id)) is not None]
        if not codes or not len(self._meta) or query.shape[0] != self._matrix.shape[1]:
            return
        # One product over the whole matrix: cheaper than first copying out the allowed rows.
        scores = self._matrix @ query
        if len(codes) == len(self._doc_codes):
            rows = np.arange(len(self._meta))
        else:
            rows = np.flatnonzero(np.isin(self._docs, np.asarray(codes, dtype=np.int64)))
            scores = scores[rows]
        seen: set[str] = set()
        for index in _best_first(scores):
            row = self._meta[rows[index]]
            if row.doc_id in seen:
                continue
            seen.add(row.doc_id)
            yield PassageMatch(
                doc_id=row.doc_id,
                score=float(scores[index]),
                start_line=row.start_line,
                end_line=row.end_line,
                heading=row.heading,
            )


def _best_first(scores: np.ndarray) -> Iterator[int]:
    """Indices by descending score. Most queries need only the first few: those come from a partial
    sort; the full sort happens only for a caller that reads past them (filters that reject many)."""
    if len(scores) > FIRST_CANDIDATES:
        top = np.argpartition(-scores, FIRST_CANDIDATES - 1)[:FIRST_CANDIDATES]
        top = top[np.argsort(-scores[top], kind="stable")]
        yield from top.tolist()
        done = set(top.tolist())
        yield from (index for index in np.argsort(-scores, kind="stable").tolist() if index not in done)
    else:
        yield from np.argsort(-scores, kind="stable").tolist()


def vector_matrix(store: DocStore) -> VectorMatrix:
    return store.attached(VectorMatrix)
