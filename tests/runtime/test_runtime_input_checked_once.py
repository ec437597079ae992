"""An input is checked once on its way in: by the runtime before any session I/O (a hosted turn
does not check it again), by the turn itself when a caller runs it directly."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from runtime_helpers import SpyStore, counter_agent, msg

from tether import Message
from tether.engine.core import input_checks
from tether.engine.core.input_checks import check_input
from tether.runtime import Runtime
from tether.testing import FakeClock, SequentialIds


@pytest.fixture
def text_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ``where`` of every text ``check_input`` checks, in order."""
    seen: list[str] = []
    original = input_checks.check_text

    def counting(text: str, where: str, limit: int | None = None) -> None:
        seen.append(where)
        original(text, where, limit)

    monkeypatch.setattr(input_checks, "check_text", counting)
    return seen


async def test_a_hosted_turn_checks_its_message_once(make_runtime: Callable[..., Runtime],
                                                      text_checks: list[str]) -> None:
    runtime = make_runtime(counter_agent())
    first = await runtime.run("Counter", msg())
    assert first.success and text_checks.count("message.text") == 1
    again = await runtime.run("Counter", msg(), session_id=first.session)
    assert again.success and again.message == "n=2" and text_checks.count("message.text") == 2


async def test_a_direct_turn_checks_a_raw_input_and_takes_a_checked_one_as_it_is(text_checks: list[str]) -> None:
    agent = counter_agent().with_clock(FakeClock(), SequentialIds("s"))
    first = await agent.turn(None, Message("hi", id="m-1"))
    assert first.text == "n=1" and text_checks == ["message.text", "message.id"]
    checked = check_input(Message("again", id="m-2"))
    assert len(text_checks) == 4
    second = await agent.turn(first.session, checked)
    assert second.text == "n=2" and len(text_checks) == 4  # not checked a second time


async def test_a_bad_signal_is_refused_before_any_io(make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime(counter_agent())
    first = await runtime.run("Counter", msg())
    spy.calls.clear()
    refused = await runtime.signal(first.session, "paid", {"note": "bad\x00"})
    assert not refused.success and refused.code == "invalid-input" and "signal.payload" in refused.message
    assert spy.calls == []  # not even the load that finds the session's agent
