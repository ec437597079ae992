"""One structured log line per turn (``tether.turn``): agent, session, input, flow/node, model
calls, tokens, milliseconds, outcome codes, and the failure of a failed request."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from runtime_helpers import waiting_agent

from tether import Agent, Flow, on_message, reply
from tether.runtime import Runtime
from tether.stores import SQLiteStore
from tether.testing import FakeClock, ScriptedModel


def _turns(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "tether.turn"]


async def test_each_turn_logs_one_line_with_its_fields(tmp_path: Path, clock: FakeClock,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="tether.turn")
    talk = reply("talk", instructions="Chat.")
    model = ScriptedModel(speak=["Hi there!"])
    agent = Agent("Talker", flows=[Flow("talk", start=talk, nodes=[talk], on=[on_message(repeat="always")])])
    async with Runtime([agent.with_model(model), waiting_agent()], store=SQLiteStore(tmp_path / "t.db"),
                       clock=clock) as runtime:
        said = await runtime.run("Talker", "hello")
        waited = await runtime.run("Waiter", "later please")
        clock.advance("61m")
        assert await runtime.fire_due_wakes() == 1
        missing = await runtime.run("Nobody", "hello")
    first, second, wake, failed = _turns(caplog)
    talked = first.turn  # type: ignore[attr-defined]
    assert talked["agent"] == "Talker" and talked["session"] == said.session and talked["input"] == "message"
    assert talked["model_calls"] == 1 and talked["success"] is True and talked["code"] is None
    assert talked["runs"] == ["talk:talk"] and isinstance(talked["ms"], int)
    assert first.getMessage().startswith(f"turn agent=Talker session={said.session} input=message runs=talk:talk")
    assert "model_calls=1" in first.getMessage() and "success=true" in first.getMessage()
    assert second.turn["runs"] == ["later:pause"]  # type: ignore[attr-defined]
    woke = wake.turn  # type: ignore[attr-defined]
    assert woke["session"] == waited.session and woke["input"].startswith("wake:")
    assert woke["ended"] == ["later:fired"] and woke["model_calls"] == 0
    assert failed.levelno == logging.WARNING and missing.code == "agent-not-registered"
    assert failed.turn["code"] == "agent-not-registered" and "Nobody" in failed.turn["error"]  # type: ignore[attr-defined]
    assert 'error="Agent ' in failed.getMessage()
