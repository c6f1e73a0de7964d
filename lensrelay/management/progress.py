"""A progress bar on stderr for long imports and exports: redrawn in place on a terminal, a line every
few seconds otherwise (logs), silent for short runs."""

from __future__ import annotations

import time
from typing import TextIO

_WIDTH = 30


class ProgressBar:
    def __init__(self, stream: TextIO, *, min_total: int = 200, every_seconds: float = 5.0) -> None:
        self.stream = stream
        self.min_total = min_total
        self.every = every_seconds
        self.tty = stream.isatty()
        self.last_draw = 0.0
        self.open_line = False

    def __call__(self, phase: str, done: int, total: int) -> None:
        if total < self.min_total:
            return
        now = time.monotonic()
        final = done >= total
        if not final and now - self.last_draw < (0.1 if self.tty else self.every):
            return
        self.last_draw = now
        filled = _WIDTH * done // max(total, 1)
        line = f"{phase:<12} [{'#' * filled}{'.' * (_WIDTH - filled)}] {done}/{total}"
        if self.tty:
            self.stream.write("\r" + line + ("\n" if final else ""))
            self.open_line = not final
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.open_line:
            self.stream.write("\n")
            self.open_line = False
