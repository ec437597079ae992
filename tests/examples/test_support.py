"""The support example holds a useful conversation with no model, and routes with one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from tether import Message, TurnResult, Wake
from tether.apps import load_app
from tether.engine.core.session import Session
from tether.testing import FakeClock, ScriptedModel, SequentialIds

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def support(example: Callable[[str], ModuleType]) -> ModuleType:
    return example("support")


def twin(support: ModuleType, form: str) -> ModuleType:
    """The support example as Python (``py``) or as its flow-file twin (``yaml``)."""
    if form == "yaml":
        return SimpleNamespace(agent=load_app(str(EXAMPLES / "support.yaml")).agent())  # type: ignore[return-value]
    return support


class Chat:
    def __init__(self, support: ModuleType, model: ScriptedModel | None = None) -> None:
        self.clock = FakeClock()
        agent = support.agent if model is None else support.agent.with_model(model)
        self.agent = agent.with_clock(self.clock, SequentialIds("s"))
        self.session: Session | None = None

    async def say(self, text: str) -> TurnResult:
        self.clock.advance("30s")
        result = await self.agent.turn(self.session, Message(text))
        self.session = result.session
        return result

    async def says(self, first: str, *more: str) -> TurnResult:
        """Say each text in turn; the last turn's result."""
        result = await self.say(first)
        for text in more:
            result = await self.say(text)
        return result

    def asking(self) -> list[str]:
        assert self.session is not None
        return [f"{r.flow}/{r.node}" for r in self.session.runs if r.status == "asking"]


async def test_order_status_with_no_model(support: ModuleType) -> None:
    chat = Chat(support)
    hello = await chat.say("hi")
    assert hello.text.startswith("Hi, I'm Sam from Acme support.") and chat.asking() == ["menu/topic"]
    asked = await chat.say("I want to check my order")
    assert asked.text == "What's your order number? Order numbers look like A-1001."
    assert chat.asking() == ["orders/ask_order"]
    answered = await chat.say("it's a-1001")
    assert answered.text == "Order A-1001 is shipped: it left our warehouse on Monday and should arrive by Thursday."
    assert answered.status == "ended" and all(r.llm_calls == 0 for r in (hello, asked, answered))


async def test_unknown_order_is_asked_again(support: ModuleType) -> None:
    chat = Chat(support)
    await chat.say("order status please")
    result = await chat.say("A-9999")
    assert result.text == ("I couldn't find an order A-9999.\n\n"
                           "What's your order number? Order numbers look like A-1001.")
    assert chat.asking() == ["orders/ask_order"]


async def test_change_of_address_needs_an_explicit_yes(support: ModuleType) -> None:
    chat = Chat(support)
    await chat.says("I need to change my address", "A-1002")
    confirm = await chat.say("5 Main Street, Springfield")
    assert confirm.text == ("Change the delivery address of A-1002 to 5 Main Street, Springfield? "
                            "Please answer yes or no.")
    again = await chat.say("hmm")
    assert again.text == confirm.text
    done = await chat.say("yes")
    assert done.text == "Done: order A-1002 will go to 5 Main Street, Springfield."
    row = support.DB.execute("SELECT address FROM orders WHERE number = 'A-1002'").fetchone()
    assert row == ("5 Main Street, Springfield",)


async def test_refund_and_handoff(support: ModuleType) -> None:
    chat = Chat(support)
    await chat.says("I want a refund", "A-1003")
    confirm = await chat.say("it arrived broken")
    assert confirm.text == "Open a refund request for order A-1003 (it arrived broken)? Please answer yes or no."
    opened = await chat.say("yes")
    assert opened.text.startswith("I've opened refund request R-") and "order A-1003" in opened.text
    person = await chat.say("can I talk to a person?")
    assert person.status == "handoff" and person.handoff is not None and person.handoff.agent == "human"


async def test_silence_arms_a_still_there_nudge(support: ModuleType) -> None:
    chat = Chat(support)
    first = await chat.say("hi")
    (wake,) = first.schedule
    assert wake.key.startswith("silence:still_there:")
    chat.clock.advance("10m")
    nudged = await chat.agent.turn(chat.session, Wake(wake.key))
    assert nudged.text == "Are you still there? Just reply whenever you're ready."


async def test_with_a_model_one_understand_call_routes_and_extracts(support: ModuleType) -> None:
    model = ScriptedModel(understand=[{"flows": {"orders": 92, "address": 5, "refund": 0, "human": 0},
                                       "fields": {"order_number": "A-1004"}}])
    chat = Chat(support, model)
    result = await chat.say("where's my order A-1004?")
    assert result.text == "Order A-1004 is cancelled: it was cancelled at your request and refunded in full."
    assert result.llm_calls == 1 and model.unused() == {}


async def test_the_menu_hands_the_message_to_the_flow_it_chains_into(support: ModuleType) -> None:
    chat = Chat(support)
    await chat.say("hello")
    result = await chat.say("I'd like to know about my order A-1002")  # no flow's phrase: the menu's topic
    # the chained orders run inherits the floor and reads the order number from the same message
    assert result.text == "Order A-1002 is processing: it is being packed and will ship within 2 business days."
    assert [e.reason for e in result.ended] == ["flow", "answered"] and result.llm_calls == 0


@pytest.mark.parametrize("form", ["py", "yaml"])
@pytest.mark.parametrize("typed", ["a1002", "A 1002", "my order is a-1002"])
async def test_an_order_number_is_read_however_it_is_typed(support: ModuleType, form: str, typed: str) -> None:
    # "a1002" was asked for again until the customer was handed to a person
    chat = Chat(twin(support, form))
    await chat.say("where is my order")
    result = await chat.say(typed)
    assert result.text == "Order A-1002 is processing: it is being packed and will ship within 2 business days."
    await chat.say("I need to change my delivery address")
    asked = await chat.say("no, a 1003")  # not the same order: the other one, however it is typed
    assert asked.text == "Order A-1003 is delivered, so its delivery address can't be changed any more."
    await chat.say("change my delivery address")
    asked = await chat.say("yes")  # the same order, A-1003 now
    assert asked.text == "Order A-1003 is delivered, so its delivery address can't be changed any more."
    await chat.say("I need to change my delivery address")
    asked = await chat.say("no, A 1002")
    assert asked.text == "What's the new delivery address?"
    confirm = await chat.say("5 Main Street, Springfield")
    assert confirm.text.startswith("Change the delivery address of A-1002 to 5 Main Street, Springfield?")


@pytest.mark.parametrize("form", ["py", "yaml"])
@pytest.mark.parametrize(("opening", "reason"), [
    ("I want a refund for A-1003, it arrived broken", "arrived broken"),
    ("refund A-1003 please, I was charged twice", "charged twice"),
    ("a 1003 never arrived, I want my money back", "never arrived"),
])
async def test_a_refund_reason_said_up_front_is_not_asked_for(support: ModuleType, form: str, opening: str,
                                                              reason: str) -> None:
    # the reason step asked "what went wrong?" though the opening had said it
    chat = Chat(twin(support, form))
    confirm = await chat.say(opening)
    assert confirm.text == f"Open a refund request for order A-1003 ({reason})? Please answer yes or no."
    assert chat.asking() == ["refund/refund_confirm"] and confirm.llm_calls == 0
    done = await chat.say("yes")
    assert done.text.startswith("I've opened refund request R-") and done.status == "ended"


@pytest.mark.parametrize("form", ["py", "yaml"])
async def test_an_address_said_up_front_is_read_back(support: ModuleType, form: str) -> None:
    chat = Chat(twin(support, form))
    confirm = await chat.say("please change the address of a1002 to 4 Elm Rd, Leeds for me")
    assert confirm.text == "Change the delivery address of A-1002 to 4 Elm Rd, Leeds? Please answer yes or no."
    assert chat.asking() == ["address/confirm"]
    # an answer to the question is still taken whole, as the customer wrote it
    chat = Chat(support)
    await chat.say("change the address of A-1002")
    confirm = await chat.say("Flat 2, 4 Elm Rd, Leeds")
    assert confirm.text == "Change the delivery address of A-1002 to Flat 2, 4 Elm Rd, Leeds? Please answer yes or no."


@pytest.mark.parametrize("form", ["py", "yaml"])
@pytest.mark.parametrize("said", ["it's 5 Main Street, Springfield", "my new address is 5 Main Street, Springfield",
                                  "send it to 5 Main Street, Springfield please"])
async def test_an_address_is_read_back_without_the_words_that_introduce_it(support: ModuleType, form: str,
                                                                          said: str) -> None:
    chat = Chat(twin(support, form))
    await chat.say("I want to change the address for order A-1002")
    confirm = await chat.say(said)
    assert confirm.text == ("Change the delivery address of A-1002 to 5 Main Street, Springfield? "
                            "Please answer yes or no.")


@pytest.mark.parametrize(("answer", "opened"), [("yep", True), ("sure, go ahead", True), ("perfect", True),
                                                ("nope", False), ("nah", False)])
async def test_a_confirmation_takes_the_ways_customers_say_yes_and_no(support: ModuleType, answer: str,
                                                                      opened: bool) -> None:
    # "yep" was asked again until the customer was handed to a person; "perfect" was thanked for
    chat = Chat(support)
    await chat.say("refund for A-1001, it never arrived")
    result = await chat.say(answer)
    assert result.text.startswith("I've opened refund request R-" if opened else "OK, I haven't opened a refund")
    assert result.status == "ended"


@pytest.mark.parametrize("form", ["py", "yaml"])
async def test_an_order_number_the_customer_does_not_know_is_explained_not_handed_off(support: ModuleType,
                                                                                    form: str) -> None:
    chat = Chat(twin(support, form))
    await chat.say("where is my order")
    told = await chat.say("I don't know it")
    assert told.text == ("You'll find it in your order confirmation email. If you can't find it, say \"talk to a "
                         "person\".\n\nWhat's your order number? Order numbers look like A-1001.")
    assert chat.asking() == ["orders/ask_order"] and told.status != "handoff" and told.handoff is None
    answered = await chat.say("a1002")
    assert answered.text.startswith("Order A-1002 is processing")


async def test_a_cancel_told_of_or_asked_about_is_not_a_cancel(support: ModuleType) -> None:
    chat = Chat(support)
    await chat.says("refund please", "A-1002")
    told = await chat.say("I tried to cancel it but was charged anyway")
    assert told.text == ("Open a refund request for order A-1002 (I tried to cancel it but was charged anyway)? "
                         "Please answer yes or no.")
    cancelled = await chat.say("please cancel this")
    assert cancelled.text == "OK, I've cancelled that." and chat.asking() == []


async def test_nothing_is_cancelled_at_the_opening_and_i_dont_know_with_an_answer_is_the_answer(
        support: ModuleType) -> None:
    chat = Chat(support)
    await chat.say("hi")
    opening = await chat.say("I want to cancel my order")
    assert "cancelled" not in opening.text  # nothing was under way: no "OK, I've cancelled that."
    chat = Chat(support)
    await chat.says("refund please", "A-1002")
    reason = await chat.say("I don't know, it just stopped working")
    assert reason.text.startswith("Open a refund request for order A-1002 (I don't know, it just stopped working)?")


async def test_a_new_task_after_a_finished_one_is_not_greeted_again(support: ModuleType) -> None:
    chat = Chat(support)
    first = await chat.say("where is my order A-1001?")
    assert first.text.startswith("Order A-1001 is shipped")
    again = await chat.say("ok")
    assert again.text == ("What would you like to do? I can check an order, change an address, start a refund, "
                          "or get you a person.")  # the greeting ("Hi, I'm Sam...") is said once


async def test_a_closing_is_not_taken_as_a_free_text_answer(support: ModuleType) -> None:
    chat = Chat(support)
    await chat.says("refund please", "A-1002")
    for closing in ("goodbye", "thanks, bye"):
        asked = await chat.say(closing)
        assert asked.text == "In a few words, what went wrong?", closing  # not "(goodbye)?"
    assert chat.session is not None and "refund_reason" not in chat.session.data


async def test_a_refund_is_opened_only_for_an_order_that_exists_and_was_not_refunded(support: ModuleType) -> None:
    chat = Chat(support)
    unknown = await chat.say("I want a refund for A-9999, it arrived broken")
    assert unknown.text == ("I couldn't find an order A-9999.\n\n"
                            "Which order is the refund for? Order numbers look like A-1001.")
    confirm = await chat.say("sorry, A-1002")  # the reason said with the unknown number is kept
    assert confirm.text == "Open a refund request for order A-1002 (arrived broken)? Please answer yes or no."
    shipped = Chat(support)
    refused = await shipped.say("change the address of A-1001 to 5 Main Street")
    assert refused.text == "Order A-1001 is shipped, so its delivery address can't be changed any more."
    assert refused.status == "ended"


@pytest.mark.parametrize("form", ["py", "yaml"])
async def test_a_bare_order_number_at_the_menu_is_an_order_question(support: ModuleType, form: str) -> None:
    # "and A-1002?" after an order check was greeted again and the number was lost
    chat = Chat(twin(support, form))
    await chat.say("where is my order A-1001?")
    follow_up = await chat.say("and A-1002?")
    assert follow_up.text == "Order A-1002 is processing: it is being packed and will ship within 2 business days."
    assert follow_up.llm_calls == 0


async def test_a_switch_to_another_task_drops_the_one_under_way(support: ModuleType) -> None:
    # "... instead" was a detour: the refund came back after the address change was done
    chat = Chat(support)
    await chat.says("refund", "A-1002")
    switched = await chat.say("actually, change the address instead")
    assert switched.text == "OK, I've cancelled that.\n\nIs this about the same order, A-1002? Please answer yes or no."
    await chat.says("yes", "5 Main Street")
    done = await chat.say("yes")
    assert done.text == "Done: order A-1002 will go to 5 Main Street."  # no "Now, back to where we were."
    assert chat.session is not None and chat.session.runs == [] and done.status == "ended"


async def test_a_correction_to_an_unknown_order_asks_again(support: ModuleType) -> None:
    # the corrected number was read again at each return to the order step, until the turn failed
    chat = Chat(support)
    await chat.say("refund for A-1003, it arrived broken")
    corrected = await chat.say("no, the order is A-9999")
    assert corrected.text == ("OK, I've changed the order to A-9999.\n\nI couldn't find an order A-9999.\n\n"
                              "Which order is the refund for? Order numbers look like A-1001.")
    confirm = await chat.say("A-1002")
    assert confirm.text == "Open a refund request for order A-1002 (arrived broken)? Please answer yes or no."


async def test_only_a_bare_order_number_at_the_menu_checks_it_and_a_denied_reason_is_none(
        support: ModuleType) -> None:
    chat = Chat(support)
    await chat.say("hi")
    unclear = await chat.say("update adress for a1001")  # a typo, not an order check
    assert not unclear.text.startswith("Order A-1001 is")
    chat = Chat(support)
    asked = await chat.say("refund for A-1003 - it isn't damaged, I just don't like the colour")
    assert asked.text == "In a few words, what went wrong?"  # not "(damaged)"
    kept = await chat.say("refund for A-1003, don't cancel it")
    assert "cancelled" not in kept.text


async def test_i_dont_know_in_a_refund_or_an_address_change_helps_instead_of_handing_off(support: ModuleType) -> None:
    chat = Chat(support)
    await chat.say("I need a refund")
    helped = await chat.say("I don't know")
    assert helped.text.startswith("You'll find it in your order confirmation email.") and chat.asking() == \
        ["refund/refund_order"]
    await chat.say("A-1002")
    reason = await chat.say("dont know")
    assert reason.text == ("A few words are enough, for example \"it arrived damaged\" or \"wrong size\".\n\n"
                           "In a few words, what went wrong?")
    later = Chat(support)
    await later.say("change the address of A-1002")
    done = await later.say("I don't know yet")
    assert done.text == "No problem: come back when you have the new address." and later.asking() == []


@pytest.mark.parametrize("said", ["human", "can I speak to someone", "operator please"])
async def test_the_ways_to_ask_for_a_person(support: ModuleType, said: str) -> None:
    chat = Chat(support)
    await chat.say("hi")
    result = await chat.say(said)
    assert result.text == "I'm connecting you with a person now. They'll see this conversation."


@pytest.mark.parametrize("form", ["py", "yaml"])
@pytest.mark.parametrize("said", ["Are you a bot? I want to talk to a human", "I need a human, are you even listening"])
async def test_a_question_about_the_agent_with_a_request_for_a_person_is_handed_off(support: ModuleType, form: str,
                                                                                    said: str) -> None:
    chat = Chat(twin(support, form))
    assert (await chat.say(said)).text == "I'm connecting you with a person now. They'll see this conversation."


@pytest.mark.parametrize("form", ["py", "yaml"])
async def test_an_old_address_said_with_is_is_not_the_new_one(support: ModuleType, form: str) -> None:
    chat = Chat(twin(support, form))
    asked = await chat.say("change address for A-1002, the current address is 78 High Street")
    assert asked.text == "What's the new delivery address?"
    chat = Chat(twin(support, form))
    await chat.say("change the address of A-1002 to 4 Elm Rd, Leeds")
    done = await chat.say("yes please, my flat is 3B on the second floor")
    assert done.text == "Done: order A-1002 will go to 4 Elm Rd, Leeds."


@pytest.mark.parametrize("form", ["py", "yaml"])
@pytest.mark.parametrize("said", ["no wait, keep the old one, forget Main Street, Springfield",
                                  "no wait, that's the wrong street number"])
async def test_a_refusal_that_explains_itself_changes_nothing(support: ModuleType, form: str, said: str) -> None:
    chat = Chat(twin(support, form))
    await chat.says("change address", "A-1002", "5 Main Street, Springfield")
    assert (await chat.say(said)).text == "OK, I left the address of A-1002 unchanged."


@pytest.mark.parametrize("form", ["py", "yaml"])
async def test_a_correction_asked_as_a_question_is_taken(support: ModuleType, form: str) -> None:
    chat = Chat(twin(support, form))
    await chat.says("refund", "A-1003")
    moved = await chat.say("oops, it's A-1002?")
    assert moved.text.startswith("OK, I've changed the order to A-1002.")


@pytest.mark.parametrize("form", ["py", "yaml"])
async def test_a_reason_said_before_the_order_number_is_not_asked_again(support: ModuleType, form: str) -> None:
    chat = Chat(twin(support, form))
    asked = await chat.say("my parcel arrived damaged, I want my money back")
    assert asked.text == "Which order is the refund for? Order numbers look like A-1001."
    confirm = await chat.say("A-1003")
    assert confirm.text == "Open a refund request for order A-1003 (arrived damaged)? Please answer yes or no."


async def test_a_hedged_i_dont_know_is_no_address_and_a_hedge_alone_is_asked_again(support: ModuleType) -> None:
    chat = Chat(support)
    await chat.says("change my delivery address", "A-1002")
    later = await chat.say("hmm not sure yet, I don't know")
    assert later.text == "No problem: come back when you have the new address."
    again = Chat(support)
    await again.says("change my delivery address", "A-1002")
    assert (await again.say("hmm let me check")).text == "What's the new delivery address?"
    told = await again.say("I told you, 22 Baker Street, Bristol")
    assert told.text == "Change the delivery address of A-1002 to 22 Baker Street, Bristol? Please answer yes or no."


@pytest.mark.parametrize("form", ["py", "yaml"])
@pytest.mark.parametrize("said", ["where is A-1002?", "status of A-1002", "What's the status of A-1002 please?"])
async def test_a_first_question_about_an_order_number_answers_it(support: ModuleType, form: str, said: str) -> None:
    answered = await Chat(twin(support, form)).say(said)
    assert answered.text == "Order A-1002 is processing: it is being packed and will ship within 2 business days."


@pytest.mark.parametrize("question", ["where is A-1001?", "wait, where's A-1001?", "what's the status of A-1001?",
                                      "has A-1001 shipped yet?"])
async def test_a_question_about_another_order_at_the_refund_confirmation_moves_nothing(
        support: ModuleType, question: str) -> None:
    chat = Chat(support)
    await chat.says("refund please", "A-1003", "it arrived broken")
    asked = await chat.say(question)  # with no model nothing answers it: the confirmation is asked again
    assert asked.text == "Open a refund request for order A-1003 (it arrived broken)? Please answer yes or no."
    assert chat.session is not None and chat.session.data["order_number"] == "A-1003"
    changed = Chat(support)
    await changed.says("refund please", "A-1003", "it arrived broken")
    assert (await changed.say("oops, it's A-1002?")).text.startswith("OK, I've changed the order to A-1002.")


@pytest.mark.parametrize("said", ["ok, no need to wait", "yes, no need to wait"])
async def test_no_need_to_wait_is_no_new_address(support: ModuleType, said: str) -> None:
    chat = Chat(support)
    await chat.says("change address A-1002", "5 Main St")
    asked = await chat.say(said)
    assert asked.text == "Change the delivery address of A-1002 to 5 Main St? Please answer yes or no."


async def test_a_reason_said_before_the_order_number_is_kept_across_a_restart(support: ModuleType, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # each turn on a new store and runtime over one SQLite file, started from another folder: what the
    # early reason reads comes back from the store, not from a process's memory
    from tether.runtime import Runtime
    from tether.stores import SQLiteStore

    monkeypatch.chdir(tmp_path)
    session, replies = None, []
    for said in ("my parcel arrived damaged, I want my money back", "A-1003"):
        store = SQLiteStore(tmp_path / "support.db")
        response = await Runtime(support.agent, store=store).run("Sam", session_id=session, message=Message(said))
        session = response.session
        replies.append(response.message)
        await store.close()
    assert replies[-1] == "Open a refund request for order A-1003 (arrived damaged)? Please answer yes or no."
