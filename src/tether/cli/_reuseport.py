"""``tether serve --workers N`` with a listening socket per worker (``SO_REUSEPORT``), where the OS has it.

uvicorn's own workers accept on one socket they inherit from the parent, and the kernel hands a
new connection to whichever worker is waiting in ``accept`` first: under load the worker that is
least busy at that instant takes most keep-alive connections, and the other one idles (16
connections landed 858 : 89 requests on two workers). With ``SO_REUSEPORT`` each worker binds a
socket of its own to the same address, and the kernel spreads the connections over the sockets
by a hash of each connection's addresses and ports, so every worker gets its share.

The parent binds the address first (with the option, without listening: that reserves it and
picks the port for ``--port 0``), starts the workers (``spawn``: each builds its app from the
environment ``tether serve`` set, as uvicorn's workers do), and waits for them. A ``SIGTERM`` or
``SIGINT`` to the parent is passed on to the workers, which shut down gracefully; a worker that
dies on its own is started again. Where the option is missing (not Linux), ``tether serve`` uses
uvicorn's workers.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import sys
import time
from types import FrameType

__all__ = ["available", "run_workers"]

_RESTART_PAUSE = 1.0  # seconds before a dead worker is started again (a worker that cannot start does not spin)


def available() -> bool:
    """True when each worker can listen on a socket of its own (Linux's ``SO_REUSEPORT``)."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def _worker(host: str, port: int) -> None:
    """One worker process: its own listening socket on the shared address, and the app on it."""
    import uvicorn

    sock = _bind(host, port)
    sock.listen(2048)
    config = uvicorn.Config("tether.cli._serve:worker_app", factory=True, host=host, port=port, lifespan="on",
                            log_level="info", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


def run_workers(host: str, port: int, workers: int) -> None:
    """Serve on ``host:port`` with ``workers`` processes, each listening on its own socket, until
    the parent is told to stop (``SIGTERM``, ``SIGINT``)."""
    import uvicorn

    reserved = _bind(host, port)
    port = reserved.getsockname()[1]
    uvicorn.Config("tether.cli._serve:worker_app", log_level="info")  # uvicorn's log format, as the workers have
    address = f"[{host}]" if ":" in host else host
    log = logging.getLogger("uvicorn.error")
    log.info("Started parent process [%d]: %d workers, each listening on its own socket (SO_REUSEPORT)",
             os.getpid(), workers)
    log.info("Uvicorn running on http://%s:%d (Press CTRL+C to quit)", address, port)
    spawn = multiprocessing.get_context("spawn")
    stopping = False

    def start() -> multiprocessing.process.BaseProcess:
        process = spawn.Process(target=_worker, args=(host, port), name="tether-serve-worker")
        process.start()
        return process

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    processes = [start() for _ in range(workers)]
    try:
        while not stopping:
            for i, process in enumerate(processes):
                if not process.is_alive() and not stopping:
                    time.sleep(_RESTART_PAUSE)
                    if not stopping:
                        processes[i] = start()
            time.sleep(0.2)
    finally:
        for process in processes:
            if process.is_alive() and process.pid is not None:
                process.terminate()  # SIGTERM: uvicorn finishes the requests in flight, then the lifespan
        for process in processes:
            process.join()
        reserved.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
