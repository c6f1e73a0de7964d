"""pycrdt is Rust: a panic inside it surfaces as pyo3's `PanicException`, a BaseException that plain
`except Exception` lets through and that silently ends whatever task it reaches. Background work catches
panics here and logs them; cancellation and interpreter exits still pass."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


def is_panic(exc: BaseException) -> bool:
    # pyo3_runtime is not importable: the class is recognised by name.
    return type(exc).__name__ == "PanicException"


@contextmanager
def failures_logged(logger: logging.Logger, what: str, *args: object) -> Iterator[None]:
    """Log (and swallow) an exception or a pycrdt panic raised by one unit of background work."""
    try:
        yield
    except Exception:
        logger.exception(what + " failed", *args)
    except BaseException as exc:
        if not is_panic(exc):
            raise
        logger.error(what + " failed with a pycrdt panic", *args, exc_info=exc)
