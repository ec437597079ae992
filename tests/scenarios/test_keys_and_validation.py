"""Deterministic keys (replaying an input mints the same keys) and agent-level validation."""

from __future__ import annotations

import pytest
from harness import Conversation

from tether import NEXT, Agent, Field, Flow, FlowDefinitionError, Message, on_message, reply, router, wait
from tether.engine.core.session import Session


async def test_replaying_an_input_mints_the_same_keys() -> None:
    flow = Flow("f", "f", nodes=[reply("hi", response="Hello!", next=NEXT), wait("w", timer="1h"),
                                 reply("bye", response="Bye.", next=NEXT)], on=[on_message(repeat="always")])
    convo = Conversation(Agent("Ava", flows=[flow]))
    first = await convo.say("hello", id="in-1")
    session = Session.model_validate_json(first.session.model_dump_json())
    session.inputs.remove("in-1")  # the host replays the same input after a lost save
    base = await convo.agent.turn(None, Message("hello", id="in-1"), session_id=session.id)
    assert [m.key for m in base.messages] == [m.key for m in first.messages] == ["f#in-1:hi:1"]
    assert [w.key for w in base.schedule] == [w.key for w in first.schedule]
    assert first.schedule[0].key == f"f#in-1:w:{int((convo.clock.now().timestamp() + 3600) * 1000)}"
    assert base.started[0].dedupe_key == first.started[0].dedupe_key == f"f:{session.id}:in-1"


def test_conditions_are_checked_when_the_agent_is_built() -> None:
    check = router("check", when={"equals": {"plan": "pro"}, "is_vip": True}, then="x", else_="x")
    with pytest.warns(DeprecationWarning, match='"email" in data'):  # the older form, still checked
        flow = Flow("f", "f", nodes=[check, reply("x", response="x", next=NEXT)], while_={"known": ["email"]})
    with pytest.raises(FlowDefinitionError) as caught:
        Agent("Ava", fields={"email": Field()}, flows=[flow])
    codes = {(i.code, i.node) for i in caught.value.issues}
    assert codes == {("unknown-field", "check"), ("unknown-condition", "check")}
    Agent("Ava", fields={"email": Field(), "plan": Field()}, flows=[flow],
          conditions={"is_vip": lambda ctx, arg: bool(arg)})
