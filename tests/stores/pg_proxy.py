"""A TCP proxy to the test PostgreSQL server, in the test's event loop, that a test turns into an
outage: ``refuse`` (every new connection is reset at once: a database that is down), ``cut``
(every open connection is reset), ``hang`` (nothing is forwarded and no connection is made or
closed: a server that stopped answering; this host's kernel still acknowledges every byte, so
TCP keepalives cannot tell) and ``up``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

Mode = Literal["up", "refuse", "hang"]


class PgProxy:
    """Forwards 127.0.0.1:``port`` to the server of ``target`` (a ``postgresql://`` URL)."""

    def __init__(self, target: str) -> None:
        self.target = target
        parts = urlsplit(target)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self.mode: Mode = "up"
        self.port = 0
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Future[None]] = set()
        self._closed = False

    @property
    def url(self) -> str:
        """``target`` with the proxy's address in place of the server's."""
        parts = urlsplit(self.target)
        user = parts.netloc.rpartition("@")[0]
        return urlunsplit(parts._replace(netloc=f"{user + '@' if user else ''}127.0.0.1:{self.port}"))

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def cut(self) -> None:
        """Reset every open connection (both sides)."""
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()

    async def close(self) -> None:
        self._closed = True
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        tasks = [task for task in self._tasks if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _hanging(self) -> bool:
        return self.mode == "hang" and not self._closed

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode == "refuse" or self._closed:
            writer.transport.abort()
            return
        this = asyncio.current_task()
        assert this is not None
        self._tasks.add(this)
        try:
            await self._serve(reader, writer)
        finally:
            self._tasks.discard(this)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)
        while self._hanging():
            await asyncio.sleep(0.02)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            writer.transport.abort()
            return
        self._open.add(up_writer)
        pumps = [asyncio.ensure_future(self._pump(reader, up_writer)),
                 asyncio.ensure_future(self._pump(up_reader, writer))]
        self._tasks.update(pumps)
        await asyncio.gather(*pumps, return_exceptions=True)
        self._tasks.difference_update(pumps)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                while self._hanging():
                    await asyncio.sleep(0.02)
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._open.discard(writer)
            with contextlib.suppress(Exception):
                writer.transport.abort()


@contextlib.asynccontextmanager
async def pg_proxy(target: str) -> AsyncIterator[PgProxy]:
    """A started ``PgProxy`` to ``target``, closed afterwards."""
    proxy = PgProxy(target)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()
