"""A message one collect step reads is read by the run's later collect steps' ``pattern``
resolvers too ("a refund for A-1003, it arrived broken" answers the order step and the reason
step), with no model; whole-message and yes/no resolvers answer only their own step's question."""

from __future__ import annotations

import pytest
from pydantic import BaseModel
from seed000_helpers import make_agent, say, the_run

from tether import Agent, Field, collect, end, enum_check, pattern, reply, whole_message
from tether.engine.core.events import CollectUpdate
from tether.flow.repair import asks_about

ORDER = pattern("order", r"\b([A-Z]-\d{4})\b")
REASON = pattern("reason", r"\b(arrived broken|never arrived|charged twice)\b")
FIELDS = {"order": Field("string"), "reason": Field("string"), "confirm": Field("string", enum=("yes", "no"))}


def agent_of(*nodes: object) -> Agent:
    return make_agent(*nodes, fields=FIELDS)  # type: ignore[arg-type]


def steps(*, reason_resolvers: list | None = None) -> tuple:  # type: ignore[type-arg]
    return (
        collect("order_step", fields=["order"], ask="Which order?", resolvers=[ORDER]),
        collect("reason_step", fields=["reason"], ask="What went wrong?",
                resolvers=reason_resolvers if reason_resolvers is not None else [REASON]),
        collect("confirm_step", fields=["confirm"], ask="Open it? yes or no",
                resolvers=[enum_check("confirm", ["yes", "no"])]),
        reply("done", response="Opened for ${order} (${reason}).", next=end("opened")),
    )


async def test_later_patterns_read_the_message_an_earlier_step_read() -> None:
    agent = agent_of(*steps())
    result = await say(agent, None, "refund for A-1003, it arrived broken")
    assert result.text == "Open it? yes or no" and the_run(result).node == "confirm_step"
    assert result.session.data["order"] == "A-1003" and result.session.data["reason"] == "arrived broken"
    assert result.llm_calls == 0
    update = next(e for e in result.events if isinstance(e, CollectUpdate) and e.node == "reason_step")
    assert update.sources == {"reason": "deterministic"} and update.collected == {"reason": "arrived broken"}
    assert (await say(agent, result.session, "yes")).text == "Opened for A-1003 (arrived broken)."


async def test_an_answer_to_an_earlier_question_is_read_too() -> None:
    agent = agent_of(*steps())
    asked = await say(agent, None, "I want a refund")
    assert asked.text == "Which order?"
    result = await say(agent, asked.session, "A-1003, I was charged twice")
    assert result.text == "Open it? yes or no" and result.session.data["reason"] == "charged twice"


async def test_yes_no_and_whole_message_resolvers_answer_only_their_own_question() -> None:
    # "yes" in the opening is not the confirmation, and the whole opening is not the reason
    agent = agent_of(*steps(reason_resolvers=[whole_message("reason", min_length=3)]))
    result = await say(agent, None, "yes, a refund for A-1003")
    assert result.text == "What went wrong?" and the_run(result).node == "reason_step"
    assert "reason" not in result.session.data and "confirm" not in result.session.data
    confirm = await say(agent, result.session, "the lid is cracked")
    assert confirm.text == "Open it? yes or no" and confirm.session.data["reason"] == "the lid is cracked"


async def test_a_value_the_message_does_not_hold_is_still_asked_for() -> None:
    agent = agent_of(*steps())
    result = await say(agent, None, "refund A-1003")
    assert result.text == "What went wrong?" and "reason" not in result.session.data


async def test_a_known_value_is_not_read_over() -> None:
    # the reason step's field is known already: a reason in the message leaves it as it was
    agent = agent_of(*steps())
    asked = await say(agent, None, "hello")
    assert asked.text == "Which order?"
    session = asked.session
    session.data["reason"] = "never arrived"
    result = await say(agent, session, "A-1003, it arrived broken")
    assert result.text == "Open it? yes or no" and result.session.data["reason"] == "never arrived"
    assert not any(isinstance(e, CollectUpdate) and e.node == "reason_step" for e in result.events)


class Reason(BaseModel):
    reason: str


async def test_a_schema_step_reads_it_into_its_own_fields() -> None:
    nodes = (
        collect("order_step", fields=["order"], ask="Which order?", resolvers=[ORDER]),
        collect("reason_step", schema=Reason, required=["reason"], ask=lambda missing, state: "Why?",
                resolvers=[REASON], on_complete=lambda data, state: end(f"reason {data['reason']}")),
    )
    result = await say(agent_of(*nodes), None, "A-1003 never arrived")
    assert [e.reason for e in result.ended] == ["reason never arrived"]


EARLY = pattern("reason", r"\b(arrived broken|never arrived|charged twice)\b", early=True)


async def test_an_early_pattern_reads_what_was_said_before_its_step_was_reached() -> None:
    agent = agent_of(*steps(reason_resolvers=[whole_message("reason", min_length=3), EARLY]))
    asked = await say(agent, None, "it arrived broken, I want my money back")
    assert asked.text == "Which order?"
    result = await say(agent, asked.session, "A-1003")
    assert result.text == "Open it? yes or no" and result.session.data["reason"] == "arrived broken"
    update = next(e for e in result.events if isinstance(e, CollectUpdate) and e.node == "reason_step")
    assert update.sources == {"reason": "deterministic"}
    # without early the pattern reads only the turn's own message: the reason is asked
    plain = agent_of(*steps(reason_resolvers=[whole_message("reason", min_length=3), REASON]))
    asked = await say(plain, None, "it arrived broken, I want my money back")
    assert (await say(plain, asked.session, "A-1003")).text == "What went wrong?"


async def test_an_early_pattern_takes_the_latest_value_and_asks_when_none_was_said() -> None:
    agent = agent_of(*steps(reason_resolvers=[whole_message("reason", min_length=3), EARLY]))
    first = await say(agent, None, "it never arrived")
    second = await say(agent, first.session, "sorry, no: I was charged twice")
    assert second.text == "Which order?"
    result = await say(agent, second.session, "A-1003")
    assert result.session.data["reason"] == "charged twice"
    asked = await say(agent, None, "A-1003")
    assert asked.text == "What went wrong?"
    assert (await say(agent, asked.session, "the lid is cracked")).session.data["reason"] == "the lid is cracked"


def test_early_is_part_of_a_patterns_description_only_when_set() -> None:
    assert "early" not in REASON.describe() and EARLY.describe()["early"] is True


@pytest.mark.parametrize(("said", "asks"), [("where is A-1001?", True), ("wait, where's A-1001?", True),
                                            ("has A-1001 shipped yet?", True), ("what's the status of A-1001?", True),
                                            ("when does it arrive?", True), ("oops, it's A-1002?", False),
                                            ("medium?", False), ("and olives too?", False),
                                            ("what about olives?", False), ("where is A-1001", False),
                                            ("does it come with olives? add them then", False),
                                            ("has to be medium?", False), ("did I say large? I meant medium", False),
                                            ("didn't I ask for mushrooms too?", False),
                                            ("make it medium, and what's the status?", False),
                                            ("does A-1002 work instead?", False), ("status?", True)])
def test_a_question_that_asks_about_something_is_told_from_one_that_proposes_a_value(said: str, asks: bool) -> None:
    assert asks_about(said) is asks
