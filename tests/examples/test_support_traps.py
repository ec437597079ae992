"""examples/support.py without traps (issue 15): each conversation a newcomer fell into, now safe.

No model unless a test scripts one; the example's bundled order table is real SQLite.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from example_modules import load_example
from tether import Message, Repair, TurnResult
from tether.engine.core.session import Session
from tether.models.types import ModelRequest
from tether.testing import FakeClock, FunctionModel, ScriptedModel, SequentialIds, StrictModel

SAME_ORDER = "Is this about the same order, {}? Please answer yes or no."


@pytest.fixture
def support() -> ModuleType:
    return load_example("support", as_name="example_support_traps")


class Chat:
    def __init__(self, support: ModuleType, model: ScriptedModel | FunctionModel | StrictModel | None = None) -> None:
        self.clock = FakeClock()
        agent = support.agent if model is None else support.agent.with_model(model)
        self.agent = agent.with_clock(self.clock, SequentialIds("s"))
        self.session: Session | None = None
        self.said: list[str] = []

    async def say(self, text: str) -> TurnResult:
        self.clock.advance("30s")
        result = await self.agent.turn(self.session, Message(text))
        self.session = result.session
        self.said.extend(m.text for m in result.messages)
        return result

    def asking(self) -> list[str]:
        assert self.session is not None
        return [f"{r.flow}/{r.node}" for r in self.session.runs if r.status == "asking"]

    def refunds_opened(self) -> int:
        return sum(1 for text in self.said if text.startswith("I've opened refund request"))


async def _order_known(chat: Chat, number: str) -> None:
    await chat.say("where is my order")
    status = await chat.say(number)
    assert status.text.startswith(f"Order {number} is")


async def test_a_new_flow_confirms_the_order_number_of_an_earlier_one(support: ModuleType) -> None:
    chat = Chat(support)
    await _order_known(chat, "A-1002")
    asked = await chat.say("I need to change my delivery address")
    assert asked.text == SAME_ORDER.format("A-1002") and chat.asking() == ["address/address_order"]
    kept = await chat.say("yes")
    assert kept.text == "What's the new delivery address?"
    assert chat.session is not None and chat.session.data["order_number"] == "A-1002"


async def test_a_no_forgets_the_reused_value_and_asks_for_it(support: ModuleType) -> None:
    chat = Chat(support)
    await _order_known(chat, "A-1001")
    await chat.say("I want a refund")
    asked = await chat.say("no")
    assert asked.text == "Which order is the refund for? Order numbers look like A-1001."
    # "A-1002" is the order now: it never becomes an address or a reason
    reason = await chat.say("A-1002")
    assert reason.text == "In a few words, what went wrong?"
    assert chat.session is not None and chat.session.data["order_number"] == "A-1002"


async def test_a_new_value_in_the_answer_or_the_opening_message_needs_no_confirmation(support: ModuleType) -> None:
    chat = Chat(support)
    await _order_known(chat, "A-1001")
    await chat.say("I want a refund")
    corrected = await chat.say("no, it's A-1003")
    assert corrected.text == "In a few words, what went wrong?"
    assert chat.session is not None and chat.session.data["order_number"] == "A-1003"
    other = Chat(support)
    await _order_known(other, "A-1001")
    named = await other.say("I want a refund for A-1003")  # the order is named: nothing to confirm
    assert named.text == "In a few words, what went wrong?"
    refunded = Chat(support)
    cancelled = await refunded.say("I want a refund for A-1004")  # cancelled, so refunded already
    assert cancelled.text == "Order A-1004 was cancelled and refunded in full already." and refunded.asking() == []


async def test_an_unclear_answer_asks_again_then_counts_as_a_no(support: ModuleType) -> None:
    chat = Chat(support)
    await _order_known(chat, "A-1001")
    await chat.say("I want a refund")
    again = await chat.say("hmm, maybe")
    assert again.text == SAME_ORDER.format("A-1001")
    await chat.say("not sure, yes maybe")  # a yes and a no: still unclear
    fresh = await chat.say("dunno")
    assert fresh.text == "Which order is the refund for? Order numbers look like A-1001."


async def test_a_refund_is_opened_only_after_a_yes(support: ModuleType) -> None:
    chat = Chat(support)
    await chat.say("I want a refund for A-1003")
    confirm = await chat.say("it arrived broken")
    assert confirm.text == "Open a refund request for order A-1003 (it arrived broken)? Please answer yes or no."
    assert chat.refunds_opened() == 0
    kept = await chat.say("no")
    assert kept.text == "OK, I haven't opened a refund for A-1003." and chat.refunds_opened() == 0
    await chat.say("refund please")
    await chat.say("yes")  # the same order A-1003
    reason = await chat.say("the colour is wrong")
    assert "(the colour is wrong)?" in reason.text  # the earlier reason and answer were cleared, not reused
    opened = await chat.say("yes")
    assert opened.text.startswith("I've opened refund request R-") and chat.refunds_opened() == 1


async def test_keywords_switch_flows_mid_form_with_no_model(support: ModuleType) -> None:
    chat = Chat(support)
    await chat.say("I need to change my delivery address")
    await chat.say("A-1002")
    assert chat.asking() == ["address/new_address"]
    switched = await chat.say("actually never mind, I want a refund instead")
    # not a new address: the address change is cancelled, the refund flow takes over (and confirms
    # the order the address flow used)
    assert switched.text == "OK, I've cancelled that.\n\n" + SAME_ORDER.format("A-1002")
    assert chat.asking() == ["refund/refund_order"] and [e.reason for e in switched.ended] == ["cancelled"]
    assert chat.session is not None and "new_address" not in chat.session.data
    await chat.say("yes")
    asked = await chat.say("wait, where is my order actually?")  # typed mid-form: not a refund reason
    assert asked.text == SAME_ORDER.format("A-1002") and chat.asking() == ["orders/ask_order"]
    assert "refund_reason" not in chat.session.data
    assert all(r.llm_calls == 0 for r in (switched, asked))


async def test_developer_texts_never_reach_the_customer(support: ModuleType) -> None:
    chat = Chat(support)
    await chat.say("hi")
    for text in ("blah", "hmm"):
        await chat.say(text)
    escalated = await chat.say("what")  # the menu gives up after three turns: a person takes over
    texts = [m.text for m in escalated.messages]
    assert texts == [Repair().handoff] and escalated.status == "handoff"  # told, not a silent hand-off
    assert not any("TETHER_MODEL" in text for text in chat.said)


async def test_after_a_handoff_the_bot_stays_quiet(support: ModuleType) -> None:
    chat = Chat(support)
    handed = await chat.say("can I talk to a person?")
    assert handed.status == "handoff" and handed.text.startswith("I'm connecting you with a person")
    assert chat.session is not None and chat.session.status == "handed_off"
    for text in ("hello?", "where is my order A-1001", "I want a refund"):
        quiet = await chat.say(text)
        assert quiet.messages == [] and [o.code for o in quiet.outcomes] == ["handed-off"]
        assert [(line.role, line.text) for line in quiet.new_transcript] == [("user", text)]  # kept for the human
    assert chat.session.status == "handed_off"


async def test_a_whole_message_resolver_never_overrides_the_models_null(support: ModuleType) -> None:
    model = ScriptedModel(
        understand=[{"flows": {"orders": 0, "address": 0, "refund": 95, "human": 0},
                     "fields": {"order_number": "A-1003"}},
                    # mid-form question: the model reads no reason, and says the message asks something
                    {"flows": {"orders": 10, "address": 0, "refund": 30, "human": 0},
                     "collect": {"c1": {"refund_reason": None}}, "asks": True},
                    {"flows": {"orders": 0, "address": 0, "refund": 50, "human": 0},
                     "collect": {"c1": {"refund_reason": "it arrived broken"}}, "asks": False}],
        speak=[{"message": "Refunds usually take 3-5 business days."}])
    chat = Chat(support, model)
    await chat.say("I want a refund for order A-1003")
    answered = await chat.say("how long do refunds take, by the way?")
    assert [m.text for m in answered.messages] == ["Refunds usually take 3-5 business days.",
                                                  "In a few words, what went wrong?"]
    assert chat.session is not None and "refund_reason" not in chat.session.data
    confirm = await chat.say("it arrived broken")
    assert confirm.text == "Open a refund request for order A-1003 (it arrived broken)? Please answer yes or no."
    assert model.unused() == {}


async def test_the_models_reading_of_a_free_text_answer_stands_over_the_whole_message(support: ModuleType) -> None:
    model = StrictModel()
    model.means("change the delivery address of A-1002", flows={"address": 90}, values={"order_number": "A-1002"})
    model.means("9 Kings Road, Oxford, like I said", values={"new_address": "9 Kings Road, Oxford"})
    chat = Chat(support, model)
    await chat.say("change the delivery address of A-1002")
    confirm = await chat.say("9 Kings Road, Oxford, like I said")  # the words around the address are not kept
    assert confirm.text == "Change the delivery address of A-1002 to 9 Kings Road, Oxford? Please answer yes or no."


async def test_at_the_same_order_question_the_model_may_read_another_order(support: ModuleType) -> None:
    model = StrictModel()
    model.means("where is A-1003?", flows={"orders": 90}, values={"order_number": "A-1003"})
    model.means("I want to change an address", flows={"address": 90})
    model.means("no, it's for order 1002", values={"order_number": "A-1002"})  # no letter: only a model reads it
    chat = Chat(support, model)
    await chat.say("where is A-1003?")
    asked = await chat.say("I want to change an address")
    assert asked.text == "Is this about the same order, A-1003? Please answer yes or no."
    moved = await chat.say("no, it's for order 1002")
    assert moved.text == "What's the new delivery address?" and model.unsaid() == []
    assert chat.session is not None and chat.session.data["order_number"] == "A-1002"


def _reading(request: ModelRequest) -> Any:
    """A model that reads what a customer's message plainly says, for every call kind support makes."""
    text = next(m.content for m in reversed(request.messages) if m.role == "user")
    question = text.rstrip().endswith("?")
    if request.call == "speak":
        return {"message": "Refunds go back to your card within 3-5 business days."}
    assert request.call == "understand" and request.response_format is not None
    said = {"refund_reason": None if question or "refund" in text else text,
            "confirm_refund": text if text in ("yes", "no") else None}
    reply: dict[str, Any] = {}
    for section, part in request.response_format.schema["properties"].items():
        keys = list(part.get("properties", {}))
        if section == "flows":
            reply[section] = {k: 90 if k in text else 0 for k in keys}
        elif section == "asks":
            reply[section] = question
        elif section == "collect":
            reply[section] = {c: {n: said.get(n) for n in part["properties"][c]["properties"]} for c in keys}
        else:
            reply[section] = {k: None for k in keys}
    return reply


async def test_the_reason_of_a_finished_refund_is_not_a_fact_of_the_next_one(support: ModuleType) -> None:
    model = FunctionModel(_reading)
    chat = Chat(support, model)
    await chat.say("I want a refund for order A-1003")
    await chat.say("it arrived broken")
    opened = await chat.say("yes")
    assert opened.text.startswith("I've opened refund request")
    await chat.say("one more refund please")
    await chat.say("yes")  # the same order
    answered = await chat.say("how long does a refund take?")
    assert answered.text.endswith("In a few words, what went wrong?")
    speak = [c.request for c in model.calls if c.call == "speak"][-1]
    assert "- order_number: A-1003" in speak.instructions  # confirmed for this refund: a fact of the task
    text = speak.system + speak.instructions
    assert "it arrived broken" not in text and "confirm_refund" not in text  # the finished refund's answers


async def test_a_flow_the_menu_chains_into_starts_clean(support: ModuleType) -> None:
    chat = Chat(support)
    for text in ("hi", "address", "A-1002", "5 Elm Street, Springfield", "yes"):
        done = await chat.say(text)
    assert done.text == "Done: order A-1002 will go to 5 Elm Street, Springfield."
    await chat.say("thanks")
    chained = await chat.say("address")  # the menu's topic: start_flow("address") applies clear_on_start too
    assert [e.reason for e in chained.ended] == ["flow"] and chat.asking() == ["address/address_order"]
    await chat.say("yes")  # the same order
    again = await chat.say("9 Oak Road, Springfield")
    # the earlier "yes" was cleared: this change is confirmed on its own
    assert again.text == "Change the delivery address of A-1002 to 9 Oak Road, Springfield? Please answer yes or no."


async def test_a_reason_given_in_the_opening_message_is_not_asked_for_again(support: ModuleType) -> None:
    model = StrictModel()
    opening = "I want a refund for order A-1002, it arrived broken"
    model.means(opening, flows={"refund": 95},
                values={"order_number": "A-1002", "refund_reason": "it arrived broken"})
    chat = Chat(support, model)
    asked = await chat.say(opening)
    assert asked.text == "Open a refund request for order A-1002 (it arrived broken)? Please answer yes or no."
    assert model.unsaid() == []  # the request could carry the reason
