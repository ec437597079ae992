"""``ctx.count_model_calls``: model calls an action made without ``ctx.model`` join the turn's
``llm_calls``/``usage`` and the session's ``usage`` (``workflow_calls`` when a workflow made them);
bad counts are refused naming the node."""

from __future__ import annotations

from typing import Any

import pytest

from tether import Agent, Flow, Message, action, end, goto, on_message, reply
from tether.models.types import Usage
from tether.testing import FakeClock, SequentialIds


def counting_agent(*calls: tuple[Any, Any, bool]) -> Agent:
    @action("spend")
    async def spend(state: dict[str, Any], ctx: Any) -> Any:
        for count, usage, workflow in calls:
            ctx.count_model_calls(count, usage, workflow=workflow)
        return goto("done")

    done = reply("done", response="spent", next=end("done"))
    flow = Flow("spend", start=spend, nodes=[spend, done], on=[on_message(repeat="always")])
    return Agent("Spender", flows=[flow]).with_clock(FakeClock(), SequentialIds("s"))


async def test_counted_calls_join_the_turn_and_the_session() -> None:
    agent = counting_agent((2, Usage(prompt_tokens=30, completion_tokens=4), False),
                           (3, Usage(prompt_tokens=70, completion_tokens=6, cached_input_tokens=50), True))
    first = await agent.turn(None, Message("go"))
    assert (first.llm_calls, first.workflow_calls, first.agent_calls) == (5, 3, 0)
    assert first.usage == Usage(prompt_tokens=100, completion_tokens=10, cached_input_tokens=50)
    assert first.session is not None
    second = await agent.turn(first.session, Message("again"))
    assert second.session is not None
    usage = second.session.usage
    assert (usage.llm_calls, usage.workflow_calls, usage.prompt_tokens, usage.cached_input_tokens) == (10, 6, 200, 100)


@pytest.mark.parametrize(("calls", "usage", "error"), [
    (-1, None, "calls must be an int >= 0, got -1"),
    ("2", None, "calls must be an int >= 0, got '2'"),
    (True, None, "calls must be an int >= 0, got True"),
    (1, {"prompt_tokens": 3}, "usage must be a tether.models.Usage, got dict"),
])
async def test_a_bad_count_fails_the_action_and_counts_nothing(calls: Any, usage: Any, error: str) -> None:
    result = await counting_agent((calls, usage, False)).turn(None, Message("go"))
    assert result.session is not None and result.llm_calls == 0 and result.session.usage.llm_calls == 0
    [logged] = result.session.error
    assert logged.message.startswith("flow 'spend', node 'spend': ") and f"count_model_calls: {error}" in logged.message
