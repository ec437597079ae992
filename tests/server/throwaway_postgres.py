"""A PostgreSQL server of the test's own (``initdb`` in a temporary folder, on a free port), which a
test may stop and start without disturbing the shared one other tests use."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def _bindir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
    return Path(versions[-1]) if versions else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Postgres:
    """A running throwaway server: ``url``, and ``stop()``/``start()`` for an outage."""

    def __init__(self, bindir: Path, folder: Path, as_user: list[str]) -> None:
        self.bindir = bindir
        self.data = folder / "data"
        self.folder = folder
        self.port = _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as = as_user

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run([*self._as, str(self.bindir / tool), *args], capture_output=True, text=True,
                              timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed: {done.stdout}{done.stderr}")

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.folder / "log"), "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def stop_now(self) -> None:
        """Stop it, whatever state it is in (the cleanup: never raises)."""
        with contextlib.suppress(Exception):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[Postgres]:
    """A new PostgreSQL server, stopped and deleted afterwards (skips when there is none to run:
    no PostgreSQL binaries, or running as root with no ``postgres`` user to run them as)."""
    bindir = _bindir()
    if bindir is None or not (bindir / "initdb").exists():
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) to run a throwaway server")
    as_user: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="tether-pg-"))
    if os.geteuid() == 0:  # initdb refuses root: run the server as the postgres user
        runuser = shutil.which("runuser")
        try:
            import pwd

            owner = pwd.getpwnam("postgres")
        except KeyError:
            owner = None
        if runuser is None or owner is None:
            shutil.rmtree(folder, ignore_errors=True)
            pytest.skip("running as root, with no postgres user to run a throwaway PostgreSQL server as")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        as_user = [runuser, "-u", "postgres", "--"]
    server = Postgres(bindir, folder, as_user)
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.stop_now()
        shutil.rmtree(folder, ignore_errors=True)
