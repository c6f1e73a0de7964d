"""Run the folder sync client (`python -m lensrelay_sync`, what the `lensrelay-sync` command runs) as its own
process against a live server, and save files on disk the way editors do."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from .liveserver import REPO_ROOT


class SyncProcess:
    """One running `lensrelay-sync`; its stderr is kept (``said``) for the messages it gives people."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(
        cls, path: Path, *, url: str, token: str, folder: str | None = None, extra: tuple[str, ...] = ()
    ) -> SyncProcess:
        argv = [sys.executable, "-m", "lensrelay_sync", str(path), "--url", url, *extra]
        if folder is not None:
            argv += ["--folder", folder]
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=str(REPO_ROOT),
            env={**os.environ, "LENSRELAY_TOKEN": token, "PYTHONUNBUFFERED": "1"},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(process)

    async def _read(self) -> None:
        assert self.process.stderr is not None
        async for raw in self.process.stderr:
            self.lines.append(raw.decode(errors="replace").rstrip("\n"))

    @property
    def said(self) -> str:
        return "\n".join(self.lines)

    async def wait_said(self, fragment: str, *, timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        while fragment not in self.said:
            if time.monotonic() > deadline:
                raise AssertionError(f"lensrelay-sync never said {fragment!r}; it said:\n{self.said}")
            if self.process.returncode is not None:
                await self._reader
                if fragment in self.said:
                    break
                raise AssertionError(f"lensrelay-sync exited ({self.process.returncode}):\n{self.said}")
            await asyncio.sleep(0.05)
        return self.said

    async def wait(self, timeout: float = 30.0) -> int:
        code = await asyncio.wait_for(self.process.wait(), timeout)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._reader, 5)
        return code

    async def stop(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), 10)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._reader, 5)


def editor_save(path: Path, text: str) -> None:
    """Save as Obsidian and VS Code do: write a temporary file beside the note, then rename it over."""
    temp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)


async def wait_file(
    path: Path, done: Callable[[str | None], bool], *, timeout: float = 10.0, what: str = "file"
) -> str | None:
    """Poll a file's text (None while missing) until ``done``; fail with the last text."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            text: str | None = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = None
        if done(text):
            return text
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} ({path}) not reached within {timeout} s; last text: {text!r}")
        await asyncio.sleep(0.02)
