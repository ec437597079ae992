"""``tether sessions list|show|delete|prune`` against a db made by a chat run."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cli_helpers import SHIPPING, chat, tether

from tether.engine.core.session import LogEntry, Session, SessionUsage
from tether.models.types import ModelResponse, Usage
from tether.stores import SQLiteStore
from tether.testing import ScriptedModel
from tether.workflow_host import WorkflowRun


def _made_by_chat(tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "t.db"
    done = chat(SHIPPING, db, "hi", "I want to ship something")
    assert done.code == 0, done.err
    return db, done.session


def test_list_and_show(tmp_path: Path) -> None:
    db, session = _made_by_chat(tmp_path)
    listed = tether("sessions", "list", "--db", db, process=True)  # the real path
    assert listed.code == 0, listed.err
    assert "id" in listed.out and "saved" in listed.out
    row = next(line for line in listed.out.splitlines() if session in line)
    assert "Shippy" in row and "running" in row
    shown = tether("sessions", "show", session, "--db", db, process=True)
    assert shown.code == 0, shown.err
    assert f'"id": "{session}"' in shown.out and '"agent": "Shippy"' in shown.out
    assert "usage: 0 model call(s), 0 prompt + 0 completion tokens\nlog: 0 log, 0 warn, 0 error\n" in shown.out
    assert "transcript (4 message(s)):" in shown.out
    assert "assistant/verbatim: Which address should the shipment go to?" in shown.out
    missing = tether("sessions", "show", "nope", "--db", db)
    assert missing.code == 1 and missing.err.startswith("error: no session 'nope'")


def test_show_says_what_a_session_spent_and_how_much_it_logged(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    at = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

    async def made() -> None:
        store = SQLiteStore(db)
        usage = SessionUsage(llm_calls=7, agent_calls=2, workflow_calls=3, prompt_tokens=1200, completion_tokens=80,
                             cached_input_tokens=1024)
        warned = [LogEntry(at=at, level="warn", message=f"warned {i}") for i in range(2)]
        failed = [LogEntry(at=at, level="error", message="failed", code="node-failed")]
        await store.create(Session(id="s1", agent="Bot", created_at=at, usage=usage, warn=warned, error=failed))
        run = WorkflowRun({"schemaVersion": 2, "id": "wf", "version": "1", "name": "Workflow", "edges": [],
                           "nodes": [{"id": "a", "label": "A", "description": "a",
                                      "run": {"kind": "subprompt", "instruction": "say hi"}}]},
                          store=store, run_id="run-1", model=ScriptedModel(subprompt=[ModelResponse(
                              text="hi", usage=Usage(prompt_tokens=40, completion_tokens=2, reasoning_tokens=9))]))
        await run.drain()
        await store.close()

    asyncio.run(made())
    shown = tether("sessions", "show", "s1", "--db", db)
    assert shown.code == 0, shown.err
    assert ("usage: 7 model call(s) (2 by agent steps, 3 by workflow runs), 1200 prompt + 80 completion tokens "
            "(1024 cached input)\nlog: 0 log, 2 warn, 1 error\n") in shown.out
    workflow = tether("sessions", "show", "run-1", "--db", db)
    assert workflow.code == 0, workflow.err
    assert "usage: 1 model call(s), 40 prompt + 2 completion tokens (9 reasoning)\nlog: 0 log, 0 warn, 0 error" in (
        workflow.out)


def test_list_without_a_store(tmp_path: Path) -> None:
    done = tether("sessions", "list", "--db", tmp_path / "none.db")
    assert done.code == 0 and done.out.startswith("no sessions")
    assert not (tmp_path / "none.db").exists()


def test_delete(tmp_path: Path) -> None:
    db, session = _made_by_chat(tmp_path)
    unknown = tether("sessions", "delete", "nope", "--db", db, "--yes")
    assert unknown.code == 1 and unknown.err.startswith("error: no session 'nope'")
    declined = tether("sessions", "delete", session, "--db", db, stdin="n\n")
    assert declined.code == 1 and "not deleted" in declined.out
    assert session in tether("sessions", "list", "--db", db).out
    confirmed = tether("sessions", "delete", session, "--db", db, stdin="y\n", process=True)  # the real path
    assert confirmed.code == 0 and f"deleted session {session}" in confirmed.out
    assert tether("sessions", "list", "--db", db).out.startswith("no sessions")


def test_prune_deletes_only_old_ended_sessions(tmp_path: Path) -> None:
    db, running = _made_by_chat(tmp_path)
    _, ended = _made_by_chat(tmp_path)

    async def age(session_id: str, status: str) -> None:  # re-save 40 days in the past
        past = datetime.now(UTC) - timedelta(days=40)
        store = SQLiteStore(db, clock=lambda: past)
        doc = await store.load(session_id)
        assert doc is not None
        await store.save(doc.model_copy(update={"status": status}), doc.revision)
        await store.close()

    asyncio.run(age(ended, "completed"))
    young = tether("sessions", "prune", "--older-than", "41d", "--db", db)
    assert young.code == 0 and young.out.startswith("pruned 0 session(s)")
    asyncio.run(age(running, "running"))
    done = tether("sessions", "prune", "--older-than", "30d", "--db", db, process=True)  # the real path
    assert done.code == 0 and done.out.startswith("pruned 1 session(s)"), done.out + done.err
    listed = tether("sessions", "list", "--db", db).out
    assert running in listed and ended not in listed
    bad = tether("sessions", "prune", "--older-than", "soon", "--db", db)
    assert bad.code == 2 and bad.err.startswith("error: --older-than: not a duration")
