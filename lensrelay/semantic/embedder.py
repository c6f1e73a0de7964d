"""The embedding model: loaded once per process, run on its own threads, never on the event loop.

Background embedding and queries have one thread each, so a query never waits behind a batch of
passages. The model is read from a local directory with `local_files_only`: nothing is fetched from a
model hub at run time.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from django.conf import settings

from lensrelay.semantic.config import configured_model, model_directory

BATCH_SIZE = 32
QUERY_CACHE = 256

_background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lensrelay-embed")
_queries = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lensrelay-embed-query")
_lock = threading.Lock()
_models: dict[str, Any] = {}
_query_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()


class ModelUnavailable(RuntimeError):
    """No model is configured, or the configured one cannot be loaded here."""


def _model(name: str) -> Any:
    with _lock:
        model = _models.get(name)
        if model is None:
            directory = model_directory(name)
            if directory is None:
                raise ModelUnavailable(f"the embedding model {name!r} cannot be loaded")
            import torch
            from sentence_transformers import SentenceTransformer

            torch.set_num_threads(max(1, settings.LENSRELAY_SEMANTIC_THREADS))
            model = _models[name] = SentenceTransformer(str(directory), device="cpu", local_files_only=True)
        return model


def encode(name: str, texts: Sequence[str]) -> np.ndarray:
    """Unit-length float32 vectors, one row per text (blocking: call it through an executor)."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    vectors = _model(name).encode(
        list(texts), batch_size=BATCH_SIZE, normalize_embeddings=True, show_progress_bar=False
    )
    return np.asarray(vectors, dtype=np.float32)


async def embed_passages(name: str, texts: Sequence[str]) -> np.ndarray:
    """Vectors for background work, computed on the background thread."""
    return await asyncio.get_running_loop().run_in_executor(_background, encode, name, list(texts))


async def embed_query(text: str) -> tuple[str, np.ndarray]:
    """(model name, vector) of a query; recent queries are remembered (hybrid search asks twice)."""
    name = configured_model()
    key = (name, text)
    cached = _query_vectors.get(key)
    if cached is None:
        vectors = await asyncio.get_running_loop().run_in_executor(_queries, encode, name, [text])
        cached = _query_vectors[key] = vectors[0]
        while len(_query_vectors) > QUERY_CACHE:
            _query_vectors.popitem(last=False)
    _query_vectors.move_to_end(key)
    return name, cached


async def warm_up() -> None:
    """Load the model now (it takes seconds), so the first query does not pay for it."""
    name = configured_model()
    await asyncio.get_running_loop().run_in_executor(_queries, _model, name)
