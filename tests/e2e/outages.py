"""Services the scaled-out tests can cut and restore: a private redis-server and a TCP proxy.

Both listen on 127.0.0.1 only, on free ports, so they never touch the shared Redis or PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import threading
from pathlib import Path

import pytest

from .liveserver import HOST, LiveServer, free_port


def private_redis(data_dir: Path) -> LiveServer:
    """A redis-server of our own, without persistence: a restart comes back empty. Not started."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is required for the Redis outage tests (apt-get install redis-server).")
    port = free_port()
    return LiveServer(
        lambda _port: [binary, "--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no"],
        {},
        None,
        data_dir=data_dir,
        cwd=data_dir,
        port=port,
        name="redis-server",
    )


class TcpProxy:
    """Forwards 127.0.0.1:port to a target; `cut()` drops every connection and refuses new ones until
    `restore()`, as a database that stops answering does."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-proxy", daemon=True)
        self._thread.start()
        self.restore()

    def _run(self, coro: object) -> object:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)  # type: ignore[arg-type]

    def restore(self) -> None:
        async def listen() -> None:
            self._server = await asyncio.start_server(self._pipe, HOST, self.port, reuse_address=True)

        self._run(listen())

    def cut(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
                self._server = None
            for writer in list(self._writers):
                writer.transport.abort()
            self._writers.clear()

        self._run(close())

    def close(self) -> None:
        self.cut()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    async def _pipe(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.target)
        except OSError:
            client_writer.transport.abort()
            return
        self._writers.update({client_writer, server_writer})

        async def copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.IncompleteReadError):
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            writer.transport.abort()

        await asyncio.gather(copy(client_reader, server_writer), copy(server_reader, client_writer))
        self._writers.difference_update({client_writer, server_writer})
