"""A turn of agent steps that dies mid-way continues from its last write: the same message again
gets the whole reply, the model is not asked again for what it answered, and a tool whose result
was written does not run twice."""

from __future__ import annotations

from typing import Any

import pytest

from tether import Agent, Flow, Message, agent, go, on_message, tool
from tether.engine.core.session import Session
from tether.testing import FakeClock, ScriptedModel, SequentialIds
from tether.testing import tool_calls as calls

charged: list[int] = []


@tool
def charge(amount: int) -> Any:
    """Charge the card."""
    charged.append(amount)
    return go("done").with_state({"charged": amount})


class Died(BaseException):
    """The worker died (nothing after this point happened)."""


def bot(model: ScriptedModel) -> Agent:
    pay = agent("pay", prompt="Take the payment.", tools=[charge])
    done = agent("done", prompt="Confirm the charge of ${charged}.")
    return Agent("Pay", flows=[Flow("pay", nodes=[pay, done], on=[on_message()])]).with_model(model).with_clock(
        FakeClock(), SequentialIds("s"))


@pytest.mark.parametrize("die_at", [1, 2, 3])
async def test_a_turn_that_died_after_a_write_continues_from_it(die_at: int) -> None:
    """Writes of the paying turn: 1 the tool's started record, 2 its result, 3 the move to
    ``done`` (then ``done`` speaks)."""
    charged.clear()
    model = ScriptedModel(agent=["How much?", calls(("charge", {"amount": 9})), "Charged 9. Thanks!"])
    pay = bot(model)
    first = await pay.turn(None, Message("hi", id="m1"))
    written: list[tuple[Session, list[Any]]] = []

    async def checkpoint(session: Session, transcript: Any, events: Any, journal: Any) -> int:
        written.append((session.model_copy(deep=True), list(journal)))  # valid during the call only
        if len(written) == die_at:
            raise Died
        return session.revision + 1

    with pytest.raises(Died):
        await pay.turn(first.session, Message("9 dollars", id="m2"), checkpoint=checkpoint)
    saved, journal = written[-1]
    assert saved.turn is not None  # the write carries the open-turn mark
    again = await pay.turn(saved, Message("9 dollars", id="m2"), journal=tuple(journal))
    assert again.text == "Charged 9. Thanks!" and charged == [9]
    assert model.unused() == {}  # the model answered each call once
    assert again.session is not None and again.session.runs[0].node == "done"
    memory = [(m["role"], m["content"]) for m in again.session.memory["pay"].messages]
    assert memory == [("user", "hi"), ("assistant", "How much?"), ("user", "9 dollars"),
                      ("assistant", ""), ("tool", "input validated")]
