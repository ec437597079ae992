"""A PostgreSQL outage under ``tether serve --workers 2`` fails turns, never sessions: clients keep
sending (and resending, with the same message id, what failed) while the database is stopped and
started again; afterwards no session is aborted, no acknowledged message is lost or answered
twice, and ``/readyz`` answered 503 while the database was down. The server is a throwaway one
of the test's own (stopping the shared one would fail other tests)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest
from serve_process import tether_serve
from throwaway_postgres import throwaway_postgres

APP = """\
import asyncio
from pathlib import Path

from tether import Agent, Flow, action, end, on_message, reply

SLOW = Path(__file__).with_name("slow")  # while it exists, a turn thinks for 3 s (across the outage)


@action("count")
async def count(state, ctx):
    ctx.set(n=int(ctx.data.get("n", 0)) + 1)


@action("think")
async def think(state, ctx):
    await asyncio.sleep(3 if SLOW.exists() else 0.05)


flow = Flow("count", nodes=[count, think, reply("say", response=lambda state: f"n={state['n']}",
                                                 next=end("answered"))],
            on=[on_message(repeat="always")])
agent = Agent("Counter", flows=[flow], idle="silent")
"""
SESSIONS = 6
MESSAGES = 10  # per session
BUDGET = 150.0  # seconds: a guard against a hang, not a timing assertion
HEADERS = {"Authorization": "Bearer k1"}
OUTAGE = 2.0  # seconds the database stays down (shorter than the pools' 10 s wait for a connection)


class Client(threading.Thread):
    """Sends MESSAGES messages to one session, one after the other; a message that fails (or
    whose answer is lost) is sent again with the same id until it is answered."""

    def __init__(self, base: str, session: str, deadline: float, halfway: threading.Event) -> None:
        super().__init__(daemon=True)
        self.base, self.session, self.deadline, self.halfway = base, session, deadline, halfway
        self.acknowledged: list[tuple[str, str]] = []  # (text, the reply the server acknowledged it with)
        self.failures: list[str] = []  # the codes (or errors) of the attempts that failed

    def run(self) -> None:
        with httpx.Client(base_url=self.base, headers=HEADERS, timeout=30) as client:
            for i in range(MESSAGES):
                text = f"{self.session[:8]} message {i}"
                while time.monotonic() < self.deadline:
                    try:
                        answer = client.post(f"/v1/agents/Counter/sessions/{self.session}/messages",
                                             json={"text": text, "id": f"m{i}"})
                    except httpx.HTTPError as exc:
                        self.failures.append(type(exc).__name__)
                    else:
                        if answer.status_code == 200:
                            self.acknowledged.append((text, answer.json()["message"]))
                            break
                        self.failures.append(str(answer.json().get("code")))
                    time.sleep(0.2)
                if i == MESSAGES // 3:
                    self.halfway.set()


@pytest.mark.slow
def test_a_postgres_outage_fails_turns_never_sessions(tmp_path: Path) -> None:
    app = tmp_path / "counter.py"
    app.write_text(APP)
    with throwaway_postgres() as postgres, \
            tether_serve([str(app), "--store", postgres.url, "--workers", "2"], cwd=tmp_path,
                         env={"TETHER_API_KEYS": "acme:k1"}, workers=2) as served:
        deadline = time.monotonic() + BUDGET
        with httpx.Client(base_url=served.base, headers=HEADERS, timeout=30) as client:
            sessions = [client.post("/v1/agents/Counter/sessions").json()["session"] for _ in range(SESSIONS)]
            halfway = [threading.Event() for _ in sessions]
            clients = [Client(served.base, sid, deadline, mark) for sid, mark in zip(sessions, halfway, strict=True)]
            for one in clients:
                one.start()
            for mark in halfway:
                assert mark.wait(timeout=BUDGET)
            ready_while_down: list[int | str] = []
            slow = tmp_path / "slow"
            slow.touch()  # the turns that start now are still running when the database comes back
            time.sleep(0.5)
            postgres.stop()  # mid-traffic: every client has messages still to send
            try:
                down = time.monotonic()
                while time.monotonic() - down < OUTAGE:  # a probe gives up after 3 s, as an orchestrator's does
                    try:
                        ready_while_down.append(client.get("/readyz", timeout=3).status_code)
                    except httpx.TimeoutException:
                        ready_while_down.append("no answer")
                    time.sleep(0.2)
            finally:
                postgres.start()
                slow.unlink()
            for one in clients:
                one.join(timeout=max(1.0, deadline - time.monotonic()))
            assert all(not one.is_alive() for one in clients), "clients still sending after the budget"
            while client.get("/readyz").status_code != 200 and time.monotonic() < deadline:
                time.sleep(0.2)  # the workers' pools reconnect
            assert client.get("/readyz").status_code == 200
            failed = [code for one in clients for code in one.failures]
            assert "SESSION_STORE_ERROR" in failed  # the outage was felt by the traffic, not only by /readyz
            for one in clients:
                assert len(one.acknowledged) == MESSAGES, (one.session, one.failures)
                state = client.get(f"/v1/agents/Counter/sessions/{one.session}").json()
                assert state["status"] == "running", state  # 0 sessions aborted
                messages = client.get(f"/v1/agents/Counter/sessions/{one.session}/transcript").json()["messages"]
                said = [(m["role"], m["text"]) for m in messages]
                expected = [(role, text) for sent, reply in one.acknowledged
                            for role, text in (("user", sent), ("assistant", reply))]
                assert said == expected  # 0 acknowledged messages lost, none recorded twice
                assert [reply for _, reply in one.acknowledged] == [f"n={i}" for i in range(1, MESSAGES + 1)]
            assert ready_while_down and set(ready_while_down) == {503}  # not ready, and saying so at once
