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


async def test_the_line_is_a_plain_record_through_the_loggers_filters_and_handlers(
        tmp_path: Path, clock: FakeClock) -> None:
    """The record is made without a walk up the stack (it names ``log_turn`` as its source) and goes
    through the logger as ``Logger.log`` would send it: its filters, then the handlers up the tree."""
    talk = reply("talk", response="hi")
    agent = Agent("Talker", flows=[Flow("talk", start=talk, nodes=[talk], on=[on_message(repeat="always")])])
    seen: list[logging.LogRecord] = []
    dropped: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    def drop_second(record: logging.LogRecord) -> bool:
        if len(dropped) == 0 and len(seen) == 1:
            dropped.append(record.getMessage())
            return False
        return True

    parent, turns = logging.getLogger("tether"), logging.getLogger("tether.turn")
    handler, level = Keep(), parent.level
    parent.addHandler(handler)
    parent.setLevel(logging.INFO)
    turns.addFilter(drop_second)
    try:
        async with Runtime([agent], store=SQLiteStore(tmp_path / "t.db"), clock=clock) as runtime:
            first = await runtime.run("Talker", "hello")
            await runtime.run("Talker", "again", session_id=first.session)  # its line is filtered out
            await runtime.run("Talker", "and again", session_id=first.session)
            parent.setLevel(logging.WARNING)  # a turn that succeeds logs at INFO: nothing is made
            await runtime.run("Talker", "quiet", session_id=first.session)
    finally:
        parent.removeHandler(handler)
        parent.setLevel(level)
        turns.removeFilter(drop_second)
    assert len(seen) == 2 and len(dropped) == 1 and "input=message" in dropped[0]
    record = seen[0]
    assert record.name == "tether.turn" and record.levelno == logging.INFO and record.levelname == "INFO"
    assert record.msg == "turn %s" and record.getMessage().startswith(f"turn agent=Talker session={first.session} ")
    assert record.funcName == "log_turn" and Path(record.pathname).name == "turn_log.py"
    assert record.turn["session"] == first.session  # type: ignore[attr-defined]
    assert logging.Formatter("%(levelname)s:     %(name)s %(message)s").format(record).startswith(
        "INFO:     tether.turn turn agent=Talker ")
