"""``tether serve --workers N``: N processes on one listening socket, each taking connections only
while it holds no more of them than any other worker, so the connections spread evenly.

uvicorn's own workers accept on a socket they share, and the kernel hands a new connection to
whichever worker is waiting in ``accept`` first: under load the worker that is least busy at that
instant takes most keep-alive connections (16 connections landed 858 : 89 requests on two
workers). A socket per worker (``SO_REUSEPORT``) spreads them by a hash of each connection's
addresses and ports instead, which is even only on average: 16 connections often land 11 : 5, and
the few long-lived connections of a load balancer in front can all hash to one worker.

Here the parent binds and listens, and starts the workers (``spawn``: each builds its app from
the environment ``tether serve`` set, as uvicorn's workers do) with the socket and a small shared
array: each worker's number of open connections (-1 while it is not accepting). A worker runs its
own accept loop on the socket (uvicorn serves each connection it accepts exactly as its own
listener would) and, while it holds more connections than another worker that accepts, leaves
the next connection to that one; so that no worker waits on another that cannot accept (its loop
busy, or dead), it takes a connection anyway once one has waited for two of its checks
(:data:`CHECK` seconds apart). A connection stays with the worker that accepted it. A ``SIGTERM``
or ``SIGINT`` to the parent is passed on to the workers, which shut down gracefully; a worker
that dies on its own is started again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable, MutableSequence
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import uvicorn

__all__ = ["CHECK", "available", "balanced_turn", "run_workers"]

CHECK = 0.02
"""Seconds between a waiting worker's checks of the other workers' counts (and of a connection
left waiting on the socket)."""

_RESTART_PAUSE = 1.0  # seconds before a dead worker is started again (a worker that cannot start does not spin)

log = logging.getLogger("uvicorn.error")


def available() -> bool:
    """True where the workers can share a listening socket and a shared array (not Windows)."""
    return sys.platform != "win32"


def balanced_turn(counts: MutableSequence[int], index: int, mine: int) -> bool:
    """Whether worker ``index``, holding ``mine`` connections, takes the next one: no accepting
    worker (count >= 0) holds fewer. Publishes ``mine`` as its count."""
    counts[index] = mine
    return all(count < 0 or mine <= count for i, count in enumerate(counts) if i != index)


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def _server_class() -> Callable[[uvicorn.Config, socket.socket, MutableSequence[int], int], uvicorn.Server]:
    import uvicorn

    from tether.server.stream import close_streams

    class BalancedServer(uvicorn.Server):
        """A uvicorn server accepting on a shared socket only in its turn (see the module)."""

        def __init__(self, config: uvicorn.Config, sock: socket.socket, counts: MutableSequence[int],
                     index: int) -> None:
            super().__init__(config)
            self.sock, self.counts, self.index = sock, counts, index
            self._accepting: asyncio.Task[None] | None = None

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            close_streams()  # open event streams would hold the shutdown (see close_streams)
            super().handle_exit(sig, frame)

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=[])  # the lifespan and the rest, with no listener of its own
            if self.should_exit:
                return
            config, state, app_state = self.config, self.server_state, self.lifespan.state

            def create_protocol() -> asyncio.Protocol:  # as uvicorn's own listener makes them
                return config.http_protocol_class(config=config, server_state=state,  # type: ignore[call-arg]
                                                  app_state=app_state)

            self._accepting = asyncio.get_running_loop().create_task(self._accept(create_protocol))

        async def _accept(self, create_protocol: Callable[[], asyncio.Protocol]) -> None:
            loop = asyncio.get_running_loop()
            waiting = select.poll()
            waiting.register(self.sock, select.POLLIN)
            waited = 0
            while True:
                if not balanced_turn(self.counts, self.index, len(self.server_state.connections)):
                    pending = bool(waiting.poll(0))  # a connection waits on the socket
                    waited = waited + 1 if pending else 0
                    if waited < 2:  # another worker holds fewer: it takes the next connection
                        await asyncio.sleep(CHECK)
                        continue
                waited = 0
                try:
                    conn, _ = await loop.sock_accept(self.sock)
                except OSError as exc:  # out of file descriptors, say: the connection waits, we retry
                    log.warning("accepting a connection failed: %s", exc)
                    await asyncio.sleep(CHECK)
                    continue
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                try:
                    await loop.connect_accepted_socket(create_protocol, conn)
                except OSError:  # the client left already
                    conn.close()

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            self.counts[self.index] = -1
            if self._accepting is not None:
                self._accepting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._accepting
            await super().shutdown(sockets)

    return BalancedServer


def _worker(sock: socket.socket, counts: MutableSequence[int], index: int) -> None:
    """One worker process: the app, on the shared socket, accepting in its turn."""
    import uvicorn

    from tether.cli._protocol import http_protocol

    config = uvicorn.Config("tether.cli._serve:worker_app", factory=True, lifespan="on", log_level="info",
                            access_log=False, http=http_protocol())
    _server_class()(config, sock, counts, index).run()


def run_workers(host: str, port: int, workers: int) -> None:
    """Serve on ``host:port`` with ``workers`` processes sharing one listening socket, until the
    parent is told to stop (``SIGTERM``, ``SIGINT``)."""
    import uvicorn

    sock = _bind(host, port)
    port = sock.getsockname()[1]
    uvicorn.Config("tether.cli._serve:worker_app", log_level="info")  # uvicorn's log format, as the workers have
    address = f"[{host}]" if ":" in host else host
    log.info("Started parent process [%d]: %d workers on one socket, each taking its share of the connections",
             os.getpid(), workers)
    log.info("Uvicorn running on http://%s:%d (Press CTRL+C to quit)", address, port)
    spawn = multiprocessing.get_context("spawn")
    counts = spawn.RawArray("i", [-1] * workers)
    stopping = False

    def start(index: int) -> multiprocessing.process.BaseProcess:
        counts[index] = -1  # not accepting until it says how many it holds
        process = spawn.Process(target=_worker, args=(sock, counts, index), name="tether-serve-worker")
        process.start()
        return process

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    processes = [start(i) for i in range(workers)]
    try:
        while not stopping:
            for i, process in enumerate(processes):
                if not process.is_alive() and not stopping:
                    counts[i] = -1  # its connections died with it
                    time.sleep(_RESTART_PAUSE)
                    if not stopping:
                        processes[i] = start(i)
            time.sleep(0.2)
    finally:
        for process in processes:
            if process.is_alive() and process.pid is not None:
                process.terminate()  # SIGTERM: uvicorn finishes the requests in flight, then the lifespan
        for process in processes:
            process.join()
        sock.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
