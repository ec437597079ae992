"""``tether serve`` as a real subprocess on a free 127.0.0.1 port (uvicorn picks it: port 0)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from serve_process import TETHER, app_file, tether_serve
from store_backends import require_postgres


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """A running ``tether serve`` with one key; yields its base URL and the lines it printed."""
    with tether_serve([str(app_file(tmp_path)), "--db", str(tmp_path / "s.db")], cwd=tmp_path,
                      env={"TETHER_API_KEYS": "acme:k1"}) as served:
        yield served.base, served.lines


def test_tether_serve_answers_over_a_real_socket(server: tuple[str, list[str]]) -> None:
    base, printed = server
    assert any("1 API key(s) configured" in line for line in printed)
    with httpx.Client(base_url=base, headers={"Authorization": "Bearer k1"}) as client:
        assert client.get("/readyz").json()["status"] == "ready"
        assert client.get("/v1/agents", headers={"Authorization": "Bearer nope"}).status_code == 401
        sid = client.post("/v1/agents/Echo/sessions").json()["session"]
        answer = client.post(f"/v1/agents/Echo/sessions/{sid}/messages", json={"text": "over tcp"})
        assert answer.json()["message"] == "reply 1: over tcp"


def test_tether_serve_without_keys_refuses_a_public_address(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TETHER_API_KEYS"}
    done = subprocess.run([str(TETHER), "serve", str(app_file(tmp_path)), "--host", "0.0.0.0"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "refusing to bind 0.0.0.0 with no API keys" in done.stderr


@pytest.mark.postgres
@pytest.mark.parametrize("workers", ["1", "2"])
def test_tether_serve_on_a_database_that_does_not_exist_says_so_in_one_line(tmp_path: Path, workers: str) -> None:
    url = require_postgres()
    missing = f"tether_missing_{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    done = subprocess.run([str(TETHER), "serve", str(app_file(tmp_path)), "--db", f"{url.rsplit('/', 1)[0]}/{missing}",
                           "--port", "0", "--workers", workers], capture_output=True, text=True, cwd=tmp_path,
                          timeout=60)
    assert done.returncode == 1, done.stderr
    assert time.monotonic() - started < 8  # no retry of what cannot mend (10 s before)
    banner, *rest = done.stderr.splitlines()
    assert banner.startswith("tether serve: agents Echo; store postgresql://") and len(rest) == 1, done.stderr
    assert rest[0].startswith("error: cannot serve: store open failed: cannot connect to the database: "
                              "connection to server at ")
    assert rest[0].endswith(f'failed: FATAL: database "{missing}" does not exist')


def test_workers_share_one_socket_and_one_store(tmp_path: Path) -> None:
    with tether_serve([str(app_file(tmp_path)), "--store", str(tmp_path / "w.db"), "--workers", "2"],
                      cwd=tmp_path, env={"TETHER_API_KEYS": "acme:k1"}, workers=2) as served:
        assert any("2 worker(s); HTTP on " in line for line in served.lines)  # and what parses it
        with httpx.Client(base_url=served.base, headers={"Authorization": "Bearer k1"}) as client:
            sid = client.post("/v1/agents/Echo/sessions").json()["session"]
            said = [client.post(f"/v1/agents/Echo/sessions/{sid}/messages", json={"text": f"m{i}"},
                                headers={"Connection": "close"}).json()["message"] for i in range(4)]
            # each request on a new connection, so either worker may take it: the session is the store's
            assert [text.split(": ")[1] for text in said] == ["m0", "m1", "m2", "m3"]
            transcript = client.get(f"/v1/agents/Echo/sessions/{sid}/transcript").json()["messages"]
            assert [m["text"] for m in transcript if m["role"] == "user"] == ["m0", "m1", "m2", "m3"]


def test_each_worker_takes_its_share_of_the_connections(tmp_path: Path) -> None:
    """The workers share one listening socket and each takes a new connection only while it holds
    no more than the other: 16 keep-alive connections opened one after another land 8 : 8 (give
    or take one a worker left to the other when it was slow to accept), where a hash of each
    connection (a socket per worker, SO_REUSEPORT) often lands 11 : 5 and workers that merely
    share a socket leave it to whichever accepts first."""
    if not sys.platform.startswith("linux"):
        pytest.skip("reads the listening sockets from /proc/net/tcp")
    with tether_serve([str(app_file(tmp_path, "pid_agent()")), "--db", str(tmp_path / "w.db"), "--workers", "2"],
                      cwd=tmp_path, env={"TETHER_API_KEYS": "acme:k1"}, workers=2) as served:
        port = int(served.base.rsplit(":", 1)[1])
        assert _listening_sockets(port) == 1
        clients = [httpx.Client(base_url=served.base, headers={"Authorization": "Bearer k1"}) for _ in range(16)]
        try:
            pids = Counter()
            for client in clients:  # each client holds its own connection open to the end
                pids[client.post("/v1/agents/Pid/messages", json={"text": "who"}).json()["message"]] += 1
            for client in clients:  # the same connection keeps its worker
                assert client.post("/v1/agents/Pid/messages", json={"text": "again"}).json()["message"] in pids
        finally:
            for client in clients:
                client.close()
    assert len(pids) == 2 and min(pids.values()) >= 7, pids
    assert str(os.getpid()) not in pids


def test_a_dead_worker_leaves_the_connections_to_the_others(tmp_path: Path) -> None:
    """A worker killed with connections open: new connections are taken by the live worker (the
    dead one's count no longer holds them back), and a new worker is started in its place."""
    with tether_serve([str(app_file(tmp_path, "pid_agent()")), "--db", str(tmp_path / "w.db"), "--workers", "2"],
                      cwd=tmp_path, env={"TETHER_API_KEYS": "acme:k1"}, workers=2) as served:
        headers = {"Authorization": "Bearer k1"}
        held = [httpx.Client(base_url=served.base, headers=headers) for _ in range(4)]
        try:
            pids = {client.post("/v1/agents/Pid/messages", json={"text": "who"}).json()["message"] for client in held}
            assert len(pids) == 2
            victim = min(pids)
            os.kill(int(victim), signal.SIGKILL)
            for _ in range(6):  # each on a new connection, all answered (none waits on the dead worker)
                with httpx.Client(base_url=served.base, headers=headers, timeout=30) as fresh:
                    said = fresh.post("/v1/agents/Pid/messages", json={"text": "still there?"}).json()["message"]
                    assert said != victim
        finally:
            for client in held:
                client.close()


def _listening_sockets(port: int) -> int:
    """How many TCP sockets listen on ``port`` (``/proc/net/tcp``: state 0A is LISTEN)."""
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return sum(1 for row in rows if int(row.split()[1].split(":")[1], 16) == port and row.split()[3] == "0A")


@pytest.mark.parametrize("workers", [1, 2])
def test_the_objects_made_at_start_up_are_left_out_of_garbage_collection(tmp_path: Path, workers: int) -> None:
    """``tether serve`` freezes what start-up made (``gc.freeze``) in every process that serves,
    so the collections while serving do not walk the modules, the app and its agents again."""
    args = [str(app_file(tmp_path, "frozen_agent()")), "--db", str(tmp_path / "f.db"), "--workers", str(workers)]
    with tether_serve(args, cwd=tmp_path, workers=workers) as served, httpx.Client(base_url=served.base) as client:
        frozen = client.post("/v1/agents/Frozen/messages", json={"text": "how many?"}).json()["message"]
    assert int(frozen) > 10_000


def test_workers_refuse_a_memory_store(tmp_path: Path) -> None:
    done = subprocess.run([str(TETHER), "serve", str(app_file(tmp_path)), "--store", "memory:", "--workers", "2"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "--workers needs a store the processes share" in done.stderr


@pytest.fixture(scope="session")
def _dropping() -> Iterator[list[threading.Thread]]:
    """Databases being dropped: awaited when the session ends (a DROP DATABASE waits for a
    checkpoint, seconds the tests after it need not wait)."""
    threads: list[threading.Thread] = []
    yield threads
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive(), "a test database was still being dropped after 120 s"


@pytest.fixture
def fresh_database(_dropping: list[threading.Thread]) -> Iterator[str]:
    """The URL of a new PostgreSQL database, dropped afterwards."""
    import psycopg

    url = require_postgres()
    name = f"tether_wakes_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    try:
        yield url.rsplit("/", 1)[0] + "/" + name
    finally:
        _dropping.append(threading.Thread(target=drop, name=f"drop {name}"))
        _dropping[-1].start()


@pytest.mark.postgres
@pytest.mark.slow
def test_two_servers_on_postgres_fire_each_wake_once(tmp_path: Path, fresh_database: str) -> None:
    args = [str(app_file(tmp_path, "waker_agent()")), "--store", fresh_database]
    env = {"TETHER_API_KEYS": "acme:k1"}
    with tether_serve(args, cwd=tmp_path, env=env) as one, tether_serve(args, cwd=tmp_path, env=env) as two:
        sessions = []
        for i in range(12):  # the sessions are started on both servers; either scheduler may fire any wake
            with httpx.Client(base_url=(one, two)[i % 2].base, headers={"Authorization": "Bearer k1"}) as client:
                sid = client.post("/v1/agents/Waker/sessions").json()["session"]
                said = client.post(f"/v1/agents/Waker/sessions/{sid}/messages", json={"text": "nap"}).json()
                if said["message"] == "ok":  # (a turn slower than the timer wakes on its own, with no wake)
                    sessions.append(sid)
        assert len(sessions) >= 6
        with httpx.Client(base_url=one.base, headers={"Authorization": "Bearer k1"}) as client:
            def said(sid: str) -> list[str]:
                messages = client.get(f"/v1/agents/Waker/sessions/{sid}/transcript").json()["messages"]
                return [m["text"] for m in messages if m["role"] == "assistant"]

            deadline = time.monotonic() + 120  # a guard against a hang, not a timing assertion
            while not all(said(sid) == ["ok", "woke"] for sid in sessions) and time.monotonic() < deadline:
                time.sleep(0.5)
            assert [said(sid) for sid in sessions] == [["ok", "woke"]] * len(sessions)
    fired = Counter(re.search(r"session=(\S+)", line).group(1)  # type: ignore[union-attr]
                    for line in one.lines + two.lines if "tether.turn" in line and "input=wake:" in line)
    assert fired == Counter({sid: 1 for sid in sessions})


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_ends_open_event_streams_so_the_server_exits(tmp_path: Path, workers: int) -> None:
    with tether_serve([str(app_file(tmp_path)), "--db", str(tmp_path / "s.db"), "--workers", str(workers)],
                      cwd=tmp_path, env={"TETHER_API_KEYS": "acme:k1"}, workers=workers) as served:
        headers = {"Authorization": "Bearer k1"}
        sid = httpx.post(f"{served.base}/v1/agents/Echo/sessions", headers=headers).json()["session"]
        ended = threading.Event()

        def watch() -> None:  # an inspector tab, or a client following the session
            with httpx.stream("GET", f"{served.base}/v1/agents/Echo/sessions/{sid}/stream", headers=headers,
                              timeout=120) as stream:
                for _ in stream.iter_lines():
                    pass
            ended.set()

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        time.sleep(1.0)  # the stream is open
        started = time.monotonic()
        served.process.send_signal(signal.SIGTERM)
        served.process.wait(timeout=30)
        assert time.monotonic() - started < 10 and ended.wait(5)  # uvicorn no longer waits on the stream
