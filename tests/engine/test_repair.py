"""Conversation repair patterns in the turn: correction, cancel, chitchat, completed and continue
interrupted, each with no model and with a model that may only fill what a request offers."""

from __future__ import annotations

from typing import Any

import pytest

from tether import (
    Agent,
    Field,
    Flow,
    FlowDefinitionError,
    Message,
    Repair,
    Session,
    action,
    collect,
    decide,
    end,
    enum_check,
    goto,
    on_message,
    reply,
    router,
)
from tether.flow.repair import phrase_in, spoken_only
from tether.testing import ScriptedModel, StrictModel, understood

SIZES = ("small", "medium", "large")
PRICES = {"small": 8, "medium": 10, "large": 12}


def price(state: dict[str, Any], ctx: Any) -> Any:
    return goto("confirm", data={"price": PRICES[state["size"]]})


def order_flow(**options: Any) -> Flow:
    return Flow("order", "Order a pizza", nodes=[
        collect("choose", fields=["size"], ask="Small, medium or large?", resolvers=[enum_check("size", SIZES)],
                max_turns=2),
        action("price", price, targets=["confirm"]),
        collect("confirm", fields=["confirm"], ask="A ${size} pizza for ${price} EUR. Shall I? (yes/no)",
                resolvers=[enum_check("confirm", ["yes", "no"])], max_turns=2),
        router("confirmed", when="data.confirm == 'yes'", then="placed", else_="kept"),
        reply("placed", response="Your ${size} pizza is in the oven.", next=end("placed")),
        reply("kept", response="OK, nothing ordered.", next=end("kept")),
        # reached only by a cancel: a flow's own cancel step (on_cancel)
        *([reply("dropped", response="Order dropped, see you soon.", next=end("dropped"))]
          if options.get("on_cancel") else []),
    ], on=[on_message("pizza", repeat="always")], **options)


FIELDS = {"size": Field("enum", enum=SIZES), "confirm": Field("enum", enum=("yes", "no"), extract="asked")}


def pia(**options: Any) -> Agent:
    repair = options.pop("repair", None)
    return Agent("Pia", flows=[order_flow(**options)], fields=FIELDS, **({"repair": repair} if repair else {}))


class Chat:
    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.session: Session | None = None

    async def say(self, text: str) -> Any:
        result = await self.agent.turn(self.session, Message(text))
        self.session = result.session
        return result


async def test_a_correction_reruns_what_depended_on_the_value() -> None:
    chat = Chat(pia())
    assert (await chat.say("a large pizza")).text == "A large pizza for 12 EUR. Shall I? (yes/no)"
    fixed = await chat.say("no, make it small")  # "no" answers the step, but "make it" marks a correction
    # said, then the price action ran again
    assert fixed.text == "OK, I've changed the size to small.\n\nA small pizza for 8 EUR. Shall I? (yes/no)"
    [event] = [e.as_dict() for e in fixed.events if e.type == "field-corrected"]
    assert {k: event[k] for k in ("node", "field", "old", "new", "source")} == {
        "node": "choose", "field": "size", "old": "large", "new": "small", "source": "deterministic"}
    assert "confirm" not in chat.session.data  # the step's own "no" was not taken
    placed = await chat.say("yes")
    assert placed.text == "Your small pizza is in the oven." and placed.llm_calls == 0


async def test_the_same_value_again_is_an_answer_not_a_correction() -> None:
    chat = Chat(pia())
    await chat.say("a large pizza")
    placed = await chat.say("yes, large")
    assert placed.text == "Your large pizza is in the oven."
    assert not [e for e in placed.events if e.type == "field-corrected"]


async def test_a_no_with_a_new_value_for_an_earlier_step_is_a_correction_not_a_no() -> None:
    chat = Chat(pia())
    await chat.say("a large pizza")
    fixed = await chat.say("no, medium")  # no marker: "no" refuses what was read back, "medium" says what instead
    assert fixed.text == "OK, I've changed the size to medium.\n\nA medium pizza for 10 EUR. Shall I? (yes/no)"
    assert "confirm" not in chat.session.data  # the refusal was not taken as the answer
    [event] = [e.as_dict() for e in fixed.events if e.type == "field-corrected"]
    assert (event["old"], event["new"], event["source"]) == ("large", "medium", "deterministic")
    assert (await chat.say("yes")).text == "Your medium pizza is in the oven."


async def test_a_no_with_the_value_it_already_has_or_with_nothing_stays_a_no() -> None:
    for message in ("no, large", "no", "No."):
        chat = Chat(pia())
        await chat.say("a large pizza")
        kept = await chat.say(message)
        assert kept.text == "OK, nothing ordered.", message
        assert not [e for e in kept.events if e.type == "field-corrected"]


async def test_a_yes_with_another_value_for_an_earlier_step_is_read_back_again_not_taken() -> None:
    chat = Chat(pia())
    await chat.say("a large pizza")
    # a confirmation is never taken for what the same message contradicts: read back with the new value
    again = await chat.say("yes please, medium")
    assert again.text == "OK, I've changed the size to medium.\n\nA medium pizza for 10 EUR. Shall I? (yes/no)"
    assert "confirm" not in chat.session.data
    assert (await chat.say("yes")).text == "Your medium pizza is in the oven."


async def test_with_a_model_a_no_with_a_new_value_is_still_a_correction() -> None:
    model = StrictModel()
    chat = Chat(pia().with_model(model))
    model.means("a large pizza", flows={"order": 90}, values={"size": "large"})
    await chat.say("a large pizza")
    fixed = await chat.say("no, medium")  # the resolvers read it: no call
    assert fixed.text == "OK, I've changed the size to medium.\n\nA medium pizza for 10 EUR. Shall I? (yes/no)"
    assert fixed.llm_calls == 0 and model.unsaid() == []


async def test_with_a_model_the_extract_call_offers_the_fields_collected_before() -> None:
    model = StrictModel()
    chat = Chat(pia().with_model(model))
    model.means("a large pizza", flows={"order": 90}, values={"size": "large"})
    await chat.say("a large pizza")
    model.means("hmm, the cheapest one instead", values={"size": "small"})
    fixed = await chat.say("hmm, the cheapest one instead")
    assert fixed.text == "OK, I've changed the size to small.\n\nA small pizza for 8 EUR. Shall I? (yes/no)"
    assert fixed.llm_calls == 1
    call = model.calls[-1]
    assert call.call == "extract"
    tool = call.request.tools[0]
    assert set(tool.parameters["properties"]) == {"confirm", "size", "_intent", "_asks"}
    assert "size (now 'large')" in tool.description
    assert model.unsaid() == []
    assert [e.as_dict()["source"] for e in fixed.events if e.type == "field-corrected"] == ["model"]


TOPPINGS = ("ham", "olives", "mushrooms")


def two_field_pia(repair: Repair | None = None) -> Agent:
    """One step collects the size and the toppings: a correction of the size while it asks for the
    toppings stays at that step."""
    from tether import enum_list

    order = Flow("order", "Order a pizza", nodes=[
        collect("choose", fields=["size", "toppings"], ask={"size": "Small, medium or large?",
                                                            "toppings": "Which toppings?"},
                resolvers=[enum_check("size", SIZES), enum_list("toppings", TOPPINGS)]),
        reply("placed", response="A ${size} pizza with ${toppings}: in the oven.", next=end("placed")),
    ], on=[on_message("pizza")])
    fields = {"size": Field("enum", enum=SIZES), "toppings": Field("list", items="enum", enum=TOPPINGS)}
    return Agent("Pia", flows=[order], fields=fields, **({"repair": repair} if repair else {}))


async def test_a_value_the_asking_step_was_given_is_corrected_where_it_stands() -> None:
    chat = Chat(two_field_pia())
    assert (await chat.say("a large pizza")).text == "Which toppings?"
    fixed = await chat.say("actually make it medium")
    assert fixed.text == "OK, I've changed the size to medium.\n\nWhich toppings?"
    [event] = [e.as_dict() for e in fixed.events if e.type == "field-corrected"]
    assert {k: event[k] for k in ("node", "field", "old", "new", "source")} == {
        "node": "choose", "field": "size", "old": "large", "new": "medium", "source": "deterministic"}
    # a correction is understood: corrections in a row never reach the cannot-handle hand-off (3)
    for size in ("small", "large", "medium"):
        again = await chat.say(f"sorry, {size} instead")
        assert again.text == f"OK, I've changed the size to {size}.\n\nWhich toppings?", again.codes()
    both = await chat.say("actually small, with ham and olives")  # a marked correction and an answer
    assert both.text == "OK, I've changed the size to small.\n\nA small pizza with ham and olives: in the oven."
    assert both.llm_calls == 0


async def test_an_answer_without_a_marker_is_not_read_as_a_correction_of_the_asking_step() -> None:
    chat = Chat(two_field_pia())
    await chat.say("a large pizza")
    done = await chat.say("medium olives")  # answers the toppings; "medium" alone is not a correction
    assert done.text == "A large pizza with olives: in the oven."
    assert not [e for e in done.events if e.type == "field-corrected"]


async def test_with_corrections_off_the_asking_step_keeps_its_value() -> None:
    chat = Chat(two_field_pia(Repair(patterns=("cancel", "chitchat"))))
    await chat.say("a large pizza")
    kept = await chat.say("actually make it medium")
    assert kept.text == "Which toppings?" and chat.session is not None and chat.session.data["size"] == "large"


async def test_with_a_model_the_extract_call_offers_the_asking_step_s_own_value() -> None:
    model = StrictModel()
    chat = Chat(two_field_pia().with_model(model))
    model.means("a large pizza", flows={"order": 90}, values={"size": "large"})
    assert (await chat.say("a large pizza")).text == "Which toppings?"
    model.means("hmm, the middle one", values={"size": "medium"})
    fixed = await chat.say("hmm, the middle one")
    assert fixed.text == "OK, I've changed the size to medium.\n\nWhich toppings?" and fixed.llm_calls == 1
    call = model.calls[-1]
    assert call.call == "extract"
    assert set(call.request.tools[0].parameters["properties"]) == {"size", "toppings", "_intent", "_asks"}
    assert "size (now 'large')" in call.request.tools[0].description
    assert model.unsaid() == []
    assert chat.session is not None and chat.session.data["size"] == "medium"


CONFIRM = Field("enum", enum=("yes", "no"), extract="asked")


def ask_then_confirm(first: Any, question: str, *, done: str, kept: str, trigger: str) -> Flow:
    """``first``, then a yes/no ``question``: ``done`` on yes, ``kept`` on no."""
    return Flow("task", "A task", nodes=[
        first,
        collect("confirm", fields=["confirm"], ask=question, resolvers=[enum_check("confirm", ["yes", "no"])]),
        router("confirmed", when="data.confirm == 'yes'", then="done", else_="kept"),
        reply("done", response=done, next=end("done")),
        reply("kept", response=kept, next=end("kept")),
    ], on=[on_message(trigger)])


async def test_no_and_a_value_taken_out_of_a_list_is_a_correction_not_a_no() -> None:
    from tether import enum_list

    order = ask_then_confirm(
        collect("choose", fields=["toppings"], ask="Which toppings?", resolvers=[enum_list("toppings", TOPPINGS)]),
        "${toppings}? (yes/no)", done="Placed.", kept="Nothing ordered.", trigger="pizza")
    chat = Chat(Agent("Pia", flows=[order], fields={"toppings": Field("list", items="enum", enum=TOPPINGS),
                                                    "confirm": CONFIRM}))
    assert (await chat.say("a pizza with ham and olives")).text == "ham and olives? (yes/no)"
    fixed = await chat.say("no olives")
    assert fixed.text == "OK, I've changed the toppings to ham.\n\nham? (yes/no)"
    assert (await chat.say("no thanks")).text == "Nothing ordered."  # a "no" that takes nothing out


def address_desk() -> Agent:
    from tether import whole_message

    move = ask_then_confirm(
        collect("where", fields=["address"], ask="New address?", resolvers=[whole_message("address", min_length=10)]),
        "Move to ${address}? (yes/no)", done="Moved to ${address}.", kept="Kept.", trigger="address")
    return Agent("Desk", flows=[move], fields={"address": Field("string", extract="asked"), "confirm": CONFIRM})


async def test_a_free_text_answer_is_corrected_by_a_marked_message_and_only_then() -> None:
    chat = Chat(address_desk())
    assert (await chat.say("address")).text == "New address?"  # too short to be one
    assert (await chat.say("12 Main Street")).text == "Move to 12 Main Street? (yes/no)"
    fixed = await chat.say("sorry, I meant 14 Main Street")
    assert fixed.text == "OK, I've changed the address to 14 Main Street.\n\nMove to 14 Main Street? (yes/no)"
    unmarked = await chat.say("16 Main Street")  # no marker: not read as a correction
    assert unmarked.text == "Move to 14 Main Street? (yes/no)" and "corrected" not in unmarked.codes()
    done = await chat.say("actually, yes")  # answers the step: a marker alone does not make it an address
    assert done.text == "Moved to 14 Main Street."


async def test_a_no_that_restates_a_free_text_answer_corrects_it_and_any_other_no_is_a_no() -> None:
    chat = Chat(address_desk())
    await chat.say("address")
    assert (await chat.say("12 Main Street, Springfield")).text == "Move to 12 Main Street, Springfield? (yes/no)"
    fixed = await chat.say("no, 14 Main Street, Springfield")  # restates most of the words it replaces
    assert fixed.text == ("OK, I've changed the address to 14 Main Street, Springfield.\n\n"
                          "Move to 14 Main Street, Springfield? (yes/no)")
    assert (await chat.say("no, I don't want to move")).text == "Kept."  # explains itself: a refusal
    for refusal in ("no", "no, wrong street entirely"):
        other = Chat(address_desk())
        await other.say("address")
        await other.say("12 Main Street, Springfield")
        assert (await other.say(refusal)).text == "Kept.", refusal


@pytest.mark.parametrize("said", ["no wait, make it 14 Main Street", "no, make it 14 Main Street please",
                                  "nope, 14 Main Street instead", "no, that's wrong, it's 14 Main Street",
                                  "yes, make it 14 Main Street", "hmm no, make it 14 Main Street",
                                  "yes but 14 Main Street instead"])
async def test_a_yes_or_no_with_correction_words_and_a_free_text_value_corrects_it(said: str) -> None:
    chat = Chat(address_desk())
    await chat.say("address")
    await chat.say("12 Main Street, Springfield")
    fixed = await chat.say(said)  # the words around the value are dropped; it restates half the old one
    assert fixed.text == "OK, I've changed the address to 14 Main Street.\n\nMove to 14 Main Street? (yes/no)", said
    assert (await chat.say("yes")).text == "Moved to 14 Main Street."


@pytest.mark.parametrize(("said", "answer"), [("no, make it quick", "Kept."), ("no wait", "Kept."),
                                              ("no, keep the old one, forget Main Street, Springfield", "Kept."),
                                              ("no wait, leave it as Main Street, Springfield", "Kept."),
                                              ("no wait, Main Street is right, the number is 14", "Kept."),
                                              ("no wait, actually I changed my mind", "OK, I've cancelled that.")])
async def test_a_no_with_correction_words_and_no_value_like_the_old_one_stays_a_no(said: str, answer: str) -> None:
    chat = Chat(address_desk())
    await chat.say("address")
    await chat.say("12 Main Street, Springfield")
    assert (await chat.say(said)).text == answer
    assert chat.session.data.get("address") in (None, "12 Main Street, Springfield")


async def test_a_correction_that_does_not_validate_changes_nothing() -> None:
    model = ScriptedModel(understand=[understood(flows={"order": 90})], extract=[{"confirm": None, "size": "huge"}])
    chat = Chat(pia().with_model(model))
    await chat.say("a large pizza")
    again = await chat.say("hmm, bigger")
    assert again.text == "A large pizza for 12 EUR. Shall I? (yes/no)"
    assert chat.session.data["size"] == "large"


async def test_cancel_ends_the_task_says_so_and_forgets_its_data() -> None:
    chat = Chat(pia())
    await chat.say("a large pizza")
    cancelled = await chat.say("forget it")
    assert cancelled.text == "OK, I've cancelled that." and [e.reason for e in cancelled.ended] == ["cancelled"]
    assert chat.session.runs == [] and "size" not in chat.session.data
    fresh = await chat.say("a pizza please")
    assert fresh.text == "Small, medium or large?"  # the cancelled order's size is not reused


async def test_a_flow_overrides_cancel_with_its_own_step() -> None:
    chat = Chat(pia(on_cancel="dropped"))
    await chat.say("a large pizza")
    dropped = await chat.say("cancel")
    assert dropped.text == "Order dropped, see you soon." and [e.reason for e in dropped.ended] == ["dropped"]


async def test_a_flow_that_cannot_be_cancelled_says_so_and_asks_again() -> None:
    chat = Chat(pia(cancellable=False))
    await chat.say("a large pizza")
    kept = await chat.say("never mind")
    assert kept.text == ("Sorry, this can't be cancelled at this point.\n\n"
                         "A large pizza for 12 EUR. Shall I? (yes/no)")
    assert [(r.flow, r.node, r.status) for r in chat.session.runs] == [("order", "confirm", "asking")]


async def test_an_authors_texts_replace_the_built_in_ones() -> None:
    chat = Chat(pia(repair=Repair(cancelled="Dropped it.", thanks_reply="Any time.")))
    await chat.say("a large pizza")
    assert (await chat.say("thanks")).text == "Any time.\n\nA large pizza for 12 EUR. Shall I? (yes/no)"
    assert (await chat.say("cancel")).text == "Dropped it."


async def test_small_talk_never_counts_toward_an_escalation() -> None:
    chat = Chat(pia())
    await chat.say("a pizza")
    for text in ("thanks!", "how are you?", "thank you very much", "cheers"):
        result = await chat.say(text)
        assert result.text.endswith("Small, medium or large?") and result.status == "awaiting_user"
    assert (await chat.say("large")).text == "A large pizza for 12 EUR. Shall I? (yes/no)"


async def test_a_pattern_switched_off_is_not_recognised() -> None:
    chat = Chat(pia(repair=Repair(patterns=("correction",))))
    await chat.say("a large pizza")
    result = await chat.say("thanks")
    assert result.text == "A large pizza for 12 EUR. Shall I? (yes/no)"  # the step just asks again


async def test_closing_after_a_task_completes_the_session_and_starts_nothing() -> None:
    chat = Chat(pia())
    await chat.say("a large pizza")
    await chat.say("yes")
    closed = await chat.say("thanks, that's all")
    assert closed.text == "Glad I could help. Goodbye!" and closed.started == []
    assert chat.session.status == "completed"
    thanked = await Chat(pia(repair=Repair(complete_session=False))).say("thanks!")
    assert thanked.text == "You're welcome!" and thanked.started == [] and thanked.session.status == "running"


@pytest.mark.parametrize("said", ["lovely, ta", "sweet thx", "brilliant", "much appreciated", "ty", "many thanks"])
async def test_the_ways_people_thank_start_nothing_after_a_task(said: str) -> None:
    chat = Chat(pia())
    await chat.say("a large pizza")
    await chat.say("yes")
    thanked = await chat.say(said)
    assert thanked.text == "You're welcome!" and thanked.started == [] and chat.session.runs == []
    closed = await chat.say("that's everything, bye")
    assert closed.text == "Glad I could help. Goodbye!" and chat.session.status == "completed"


@pytest.mark.parametrize("said", ["are you a bot?", "is this a bot", "Am I talking to a robot?"])
async def test_are_you_a_bot_is_answered_and_the_step_asks_again(said: str) -> None:
    chat = Chat(pia())
    await chat.say("a large pizza")
    answered = await chat.say(said)
    assert answered.text == "I'm a virtual assistant, here to help.\n\nA large pizza for 12 EUR. Shall I? (yes/no)"
    assert answered.codes() == ["repair-chitchat"]
    own = Chat(pia(repair=Repair(bot_reply="I'm Pia's order bot.")))
    assert (await own.say(said)).text.startswith("I'm Pia's order bot.")


async def test_a_cancel_with_nothing_under_way_starts_nothing_and_says_so() -> None:
    chat = Chat(pia())
    await chat.say("a large pizza")
    await chat.say("yes")
    for said in ("never mind", "ok, forget it please", "oh never mind then", "never mind, thanks", "cancel it"):
        nothing = await chat.say(said)
        assert nothing.text == "There's nothing in progress to cancel. Is there anything else I can help with?"
        assert nothing.started == [] and chat.session.runs == [] and nothing.codes() == ["repair-cancel"]
    named = await Chat(pia()).say("never mind, a pizza")  # names a task: it starts
    assert named.text == "Small, medium or large?"
    own = Chat(pia(repair=Repair(nothing_to_cancel="Nothing to drop.")))
    await own.say("a large pizza")
    await own.say("yes")
    assert (await own.say("cancel")).text == "Nothing to drop."


async def test_with_a_model_the_understand_intent_cancels() -> None:
    refunds = Flow("refunds", "Get a refund", nodes=[
        collect("why", fields=["reason"], ask="Why?"),
        reply("ok", response="Refund opened: ${reason}.", next=end()),
    ], on=[on_message("refund")])
    agent = Agent("Desk", flows=[order_flow(), refunds], fields={**FIELDS, "reason": Field("string", extract="asked")})
    model = ScriptedModel(understand=[understood(flows={"order": 90}), understood(intent="cancel")])
    chat = Chat(agent.with_model(model))
    await chat.say("I'd like something to eat")
    dropped = await chat.say("scrap that")
    assert dropped.text == "OK, I've cancelled that." and dropped.llm_calls == 1
    schema = model.calls[-1].request.response_format.schema  # type: ignore[union-attr]
    assert schema["properties"]["intent"]["enum"] == ["cancel", "chitchat", "completed", "skip", None]


async def test_the_cannot_handle_limit_is_the_authors_and_a_value_starts_the_count_again() -> None:
    both = Flow("order", "Order a pizza", nodes=[
        collect("choose", fields=["size", "crust"], ask="Which size and crust?",
                resolvers=[enum_check("size", SIZES), enum_check("crust", ("thin", "thick"))]),  # max_turns 10
        reply("placed", response="A ${size} ${crust} pizza.", next=end("placed")),
    ], on=[on_message("pizza")])
    fields = {"size": Field("enum", enum=SIZES), "crust": Field("enum", enum=("thin", "thick"))}
    chat = Chat(Agent("Pia", flows=[both], fields=fields, repair=Repair(cannot_handle_limit=2)))
    await chat.say("a pizza")
    assert (await chat.say("hmm")).status == "awaiting_user"
    assert (await chat.say("large")).text == "Which size and crust?"  # a value: the count starts again
    assert (await chat.say("hmm")).status == "awaiting_user"
    handed = await chat.say("what")
    assert handed.status == "handoff" and handed.text == "I'm passing you to a person, who will take it from here."
    assert handed.handoff is not None and "could be understood (2 times in a row)" in str(handed.handoff.reason)
    off = Chat(Agent("Pia", flows=[both], fields=fields, repair=Repair(patterns=("correction", "cancel"))))
    await off.say("a pizza")
    for text in ("hmm", "what", "eh"):  # the pattern switched off: only max_turns escalates
        assert (await off.say(text)).status == "awaiting_user"


async def test_a_step_the_model_phrases_with_no_understand_call_offers_corrections_in_its_speak_call() -> None:
    order = Flow("order", "Order a pizza", nodes=[
        collect("choose", fields=["size"], ask="Small, medium or large?", resolvers=[enum_check("size", SIZES)]),
        collect("name", fields=["name"], prompt="Ask the customer's name for the order."),
        reply("done", response="A ${size} pizza for ${name}.", next=end("placed")),
    ], on=[on_message("pizza")])
    model = StrictModel()
    model.means("a large pizza", flows={"order": 90})
    model.means("the middle size after all", values={"size": "medium"}, reply="Medium it is. Your name?")
    model.means("Ann", values={"name": "Ann"})
    chat = Chat(Agent("Pia", flows=[order], fields={"size": Field("enum", enum=SIZES),
                                                    "name": Field("string", extract="asked")}).with_model(model))
    await chat.say("a large pizza")
    fixed = await chat.say("the middle size after all")
    # nothing else to judge, so no understand call: the step's one speak call offers the size too
    assert [c.call for c in model.calls[-1:]] == ["speak"] and fixed.llm_calls == 1
    assert fixed.text == "Medium it is. Your name?" and model.unsaid() == []
    [event] = [e for e in fixed.events if e.type == "field-corrected"]
    assert (event.field, event.old, event.new) == ("size", "large", "medium")
    assert (await chat.say("Ann")).text.endswith("A medium pizza for Ann.")


@pytest.mark.parametrize("with_model", [False, True])
async def test_a_decide_step_waiting_for_a_choice_reads_a_correction_with_the_earlier_steps_resolvers(
        with_model: bool) -> None:
    order = Flow("order", "Order a pizza", nodes=[
        collect("choose", fields=["size"], ask="Small, medium or large?", resolvers=[enum_check("size", SIZES)]),
        decide("confirm", choices=["yes", "no"], prompt="Shall I place the order?", targets=["placed", "kept"],
               decide=lambda data, state: goto("placed") if data.choice == "yes" else goto("kept")),
        reply("placed", response="Your ${size} pizza is in the oven.", next=end("placed")),
        reply("kept", response="OK, nothing ordered.", next=end("kept")),
    ], on=[on_message("pizza")])
    bot = Agent("Pia", flows=[order], fields={"size": Field("enum", enum=SIZES)})
    model = StrictModel()
    model.means("a large pizza", flows={"order": 90})
    chat = Chat(bot.with_model(model) if with_model else bot)
    assert (await chat.say("a large pizza")).text == "Shall I place the order?"
    fixed = await chat.say("actually make it medium")
    assert fixed.text == "OK, I've changed the size to medium.\n\nShall I place the order?"
    assert "corrected" in fixed.codes()
    assert chat.session is not None and chat.session.data["size"] == "medium"
    assert (await chat.say("yes")).text == "Your medium pizza is in the oven."
    assert "decide" not in [c.call for c in model.calls]  # the labels and the resolvers decided: no decide call


def test_the_cannot_handle_limit_must_be_a_positive_integer() -> None:
    with pytest.raises(FlowDefinitionError, match="cannot_handle_limit must be a positive integer, got 0"):
        Agent("A", repair=Repair(cannot_handle_limit=0))


def test_a_cancel_step_must_be_a_node_of_the_flow_and_patterns_must_exist() -> None:
    with pytest.raises(FlowDefinitionError, match="on_cancel names 'nope'"):
        order_flow(on_cancel="nope")
    with pytest.raises(FlowDefinitionError, match="unknown repair pattern 'bogus'"):
        Agent("A", repair=Repair(patterns=("bogus",)))


def test_keywords_match_whole_words_and_small_talk_only() -> None:
    assert phrase_in("OK never mind then", ("never mind",))
    assert not phrase_in("I mind never", ("never mind",))
    assert phrase_in("I don’t know", ("i dont know",))
    assert spoken_only("Thanks, that's all!", ("thanks",), ("thats all",)) == {0, 1}
    assert spoken_only("thanks, my order is A-1", ("thanks",)) == set()



def test_keywords_given_as_lists_work_as_tuples_do() -> None:
    """The phrases are split once and kept (a cache keyed by them): an author's lists work too."""
    thanks, closing = ["thanks", "cheers mate"], ["thats all"]
    assert spoken_only("Cheers mate, that's all", thanks, closing, filler=["ok"]) == {0, 1}  # type: ignore[arg-type]
    assert spoken_only("ok thanks", thanks, filler=["ok"]) == {0}  # type: ignore[arg-type]
    assert spoken_only("thanks a lot", thanks) == set()  # type: ignore[arg-type]


async def test_a_clarification_survives_a_save_and_the_answer_starts_the_chosen_flow(tmp_path: Any) -> None:
    from tether.runtime import Runtime
    from tether.stores import SQLiteStore

    freeze = Flow("freeze_card", "Freeze a card", nodes=[collect("which", fields=["card"], ask="Which card?"),
                                                          reply("done", response="Frozen.", next=end())],
                  on=[on_message("my card", "freeze")])
    report = Flow("report_card", "Report a lost card", nodes=[collect("which", fields=["card"], ask="Lost which?"),
                                                              reply("done", response="Reported.", next=end())],
                  on=[on_message("my card", "lost card")])
    desk = Agent("Bo", flows=[freeze, report], fields={"card": Field("string", extract="asked")})
    async with Runtime([desk], store=SQLiteStore(tmp_path / "cards.db")) as runtime:
        asked = await runtime.run("Bo", "it's my card")
        assert asked.success and asked.message == "Do you want to freeze a card or report a lost card?"
        stored = await runtime.store.load(asked.session)
        assert stored is not None and stored.clarifying == ["freeze_card", "report_card"]
        chosen = await runtime.run("Bo", "freeze it", session_id=asked.session)
        assert chosen.message == "Which card?"
        stored = await runtime.store.load(asked.session)
        assert stored is not None and stored.clarifying == [] and [r.flow for r in stored.runs] == ["freeze_card"]


async def test_nothing_understood_with_no_model_says_what_the_agent_can_do() -> None:
    refunds = Flow("refunds", "Get a refund", nodes=[collect("why", fields=["reason"], ask="Why?")],
                   on=[on_message("refund")])
    desk = Agent("Desk", flows=[order_flow(), refunds], fields={**FIELDS, "reason": Field("string", extract="asked")})
    result = await desk.turn(None, Message("blorp"))
    assert result.text == "Sorry, I didn't understand that. I can order a pizza or get a refund."
    # the hint is the developer's, as a warning: answering with what the agent can do is how an agent
    # with no model handles a message nothing understands, not a failure
    assert any("TETHER_MODEL" in entry.message for entry in result.session.warn)
    assert result.session.error == [] and not [e for e in result.events if e.type == "error"]


async def test_with_no_model_a_message_a_run_took_is_not_called_not_understood() -> None:
    from tether import wait

    pay = Flow("pay", "Take a payment", nodes=[
        wait("paid", event="paid", then="thanks"),
        reply("thanks", response="Payment received.", next=end("paid"))], on=[on_message("paid")])
    desk = Agent("Desk", flows=[order_flow(), pay], fields=FIELDS)
    result = await desk.turn(None, Message("I paid"))  # the pay flow took it and waits on its event
    assert result.text == "" and [r.status for r in result.session.runs] == ["waiting"]
    assert "no-model" in result.codes() and result.session.error == []


async def test_with_nothing_a_message_could_start_the_reply_names_no_ability() -> None:
    once = Flow("order", "Order a pizza", nodes=[
        collect("choose", fields=["size"], ask="Small, medium or large?", resolvers=[enum_check("size", SIZES)]),
        reply("done", response="A ${size} pizza, coming up.", next=end("done"))], on=[on_message()])
    chat = Chat(Agent("Pia", flows=[once], fields={"size": Field("enum", enum=SIZES)}))
    await chat.say("hello")
    assert (await chat.say("large")).text == "A large pizza, coming up."
    assert (await chat.say("blorp")).text == "Sorry, I didn't understand that."  # not "I can help."


@pytest.mark.parametrize(("text", "said"), [
    ("Sorry, I didn't understand that. I can ${abilities}. Try again?", "Sorry, I didn't understand that. Try again?"),
    ("I can ${abilities}!", "I can help!"),  # nothing would be left: the old fallback
    ("Pardon?", "Pardon?"),
])
def test_the_cannot_handle_text_without_abilities(text: str, said: str) -> None:
    from tether.flow.repair import cannot_handle_text

    assert cannot_handle_text(Repair(cannot_handle=text), []) == said


async def test_a_step_the_model_phrases_is_offered_the_fields_collected_before_in_the_understand_call() -> None:
    signup = Flow("signup", "Sign up", nodes=[
        collect("ask_email", fields=["email"], prompt="Ask for the email."),
        collect("ask_name", fields=["name"], prompt="Ask for their name."),
        reply("bye", response="Signed up ${name} <${email}>!", next=end("done")),
    ], on=[on_message("sign up")])
    faq = Flow("faq", "FAQ", nodes=[reply("answer", response="We ship worldwide.", next=end())],
               on=[on_message("shipping question")])
    model = StrictModel()
    chat = Chat(Agent("A", flows=[signup, faq], fields={"email": Field(), "name": Field()}).with_model(model))
    for text, meaning in [("sign me up", {"flows": {"signup": 95}}), ("a@x.com", {"values": {"email": "a@x.com"}})]:
        model.means(text, **meaning)
        await chat.say(text)
    model.means("no, my email is b@x.com", values={"email": "b@x.com"})
    fixed = await chat.say("no, my email is b@x.com")
    assert chat.session.data["email"] == "b@x.com" and "corrected" in fixed.codes()
    assert [c.call for c in model.calls[-2:]] == ["understand", "speak"] and model.unsaid() == []
    understand = model.calls[-2].request
    assert "c1 correctable: email (now 'a@x.com')" in understand.instructions
    model.means("Ada", values={"name": "Ada"})
    assert (await chat.say("Ada")).text == "Signed up Ada <b@x.com>!"


async def test_the_understand_call_offers_the_asking_step_s_own_values_for_correction() -> None:
    # a second flow with trigger phrases: a message at the asking step is judged by the understand call
    hours = Flow("hours", "Opening hours", nodes=[reply("open", response="9 to 5.", next=end())],
                 on=[on_message("opening hours")])
    model = StrictModel()
    pia = two_field_pia()
    chat = Chat(Agent("Pia", flows=[*pia.flows, hours], fields=dict(pia.fields)).with_model(model))
    model.means("a large pizza", flows={"order": 90}, values={"size": "large"})
    assert (await chat.say("a large pizza")).text == "Which toppings?"
    model.means("hmm, the middle one", values={"size": "medium"})
    fixed = await chat.say("hmm, the middle one")
    assert fixed.text == "OK, I've changed the size to medium.\n\nWhich toppings?"
    assert [c.call for c in model.calls[-1:]] == ["understand"] and model.unsaid() == []
    assert "correctable: size (now 'large')" in model.calls[-1].request.instructions


async def test_an_extract_call_reports_small_talk_and_it_never_counts_toward_max_turns() -> None:
    model = StrictModel()
    chat = Chat(pia().with_model(model))
    model.means("a large pizza", flows={"order": 90}, values={"size": "large"})
    await chat.say("a large pizza")
    for text, answer in (("you are a gem", "Thanks, that's kind of you!"),  # max_turns=2 at the confirm step
                         ("what a lovely shop", "Thanks, that's kind of you!"),
                         ("such a nice day", "Happy to chat!"), ("tell me a joke", "Happy to chat!")):
        model.means(text, intent="chitchat")
        result = await chat.say(text)
        assert result.text == f"{answer}\n\nA large pizza for 12 EUR. Shall I? (yes/no)"
        assert result.llm_calls == 1 and result.status == "awaiting_user"
    model.means("I can't say, my partner decides", intent="skip")
    handed = await chat.say("I can't say, my partner decides")
    assert handed.text == "I'm passing you to a person, who will take it from here." and handed.status == "handoff"
    assert model.unsaid() == []


async def test_small_talk_a_phrased_step_answers_does_not_use_up_its_asks() -> None:
    signup = Flow("signup", "Sign up", nodes=[
        collect("ask_email", fields=["email"], prompt="Ask for the email.", max_asks=2),
        reply("bye", response="Signed up <${email}>!", next=end("done")),
    ], on=[on_message("sign up")])
    faq = Flow("faq", "FAQ", nodes=[reply("answer", response="We ship worldwide.", next=end())],
               on=[on_message("shipping question")])
    model = StrictModel()
    chat = Chat(Agent("A", flows=[signup, faq], fields={"email": Field()}).with_model(model))
    model.means("sign me up", flows={"signup": 95}, reply="Your email?")
    await chat.say("sign me up")
    for text in ("thanks!", "you are all lovely"):  # keywords, then a model's judgement
        model.means(text, intent="chitchat", reply="Happy to help! Your email?")
        answered = await chat.say(text)
        assert answered.text == "Happy to help! Your email?"  # the step's own speak call answers it
    assert chat.session.runs[0].asked == {"email": 1}
    model.means("a@x.com", values={"email": "a@x.com"})
    assert (await chat.say("a@x.com")).text == "Signed up <a@x.com>!"


def menu_agent() -> Agent:
    """An agent whose catch-all flow opens the conversation (a greeting, said once)."""
    menu = Flow("menu", "What the customer needs", nodes=[
        collect("topic", fields=["topic"], question="Hi, I'm Pia. Pizza or pasta?", ask="Pizza or pasta?",
                resolvers=[enum_check("topic", ("pizza", "pasta"))], max_turns=2, on_complete=end("chosen"))],
        on=[on_message(repeat="always")], clear_on_start=["topic"])
    return Agent("Pia", flows=[menu], fields={"topic": Field("enum", enum=("pizza", "pasta"))})


async def test_small_talk_as_the_first_message_gets_its_reply_and_then_the_agents_opening() -> None:
    chat = Chat(menu_agent())
    first = await chat.say("hi there, how are you?")  # a greeting around small talk is small talk
    assert first.text == "I'm doing well, thanks for asking!\n\nHi, I'm Pia. Pizza or pasta?"
    assert "repair-chitchat" in first.codes() and [s.flow for s in first.started] == ["menu"]
    assert first.llm_calls == 0
    unread = await chat.say("hmm")  # the small talk was no answer: this is the step's first pass
    assert unread.text == "Pizza or pasta?" and unread.ended == []
    assert (await chat.say("pasta")).ended[0].reason == "chosen"
    later = await chat.say("thanks!")  # the agent has spoken: the reply, and nothing starts
    assert later.text == "You're welcome!" and later.started == []
    hello = await Chat(menu_agent()).say("hello")  # a greeting alone is not small talk: the opening
    assert hello.text == "Hi, I'm Pia. Pizza or pasta?" and "repair-chitchat" not in hello.codes()
    alone = await Chat(pia()).say("how are you?")  # no catch-all flow: the reply alone
    assert alone.text == "I'm doing well, thanks for asking!" and alone.started == []


@pytest.mark.parametrize("said", ["yes, 12 Main Street, Springfield, that's what I meant",
                                  "yep, actually Springfield is correct"])
async def test_a_yes_that_talks_about_the_value_read_back_confirms_it(said: str) -> None:
    chat = Chat(address_desk())
    await chat.say("address")
    await chat.say("12 Main Street, Springfield")
    assert (await chat.say(said)).text == "Moved to 12 Main Street, Springfield."


async def test_a_greeting_the_model_calls_small_talk_gets_the_opening_with_no_small_talk_line() -> None:
    model = StrictModel()
    model.means("hi there", intent="chitchat")
    first = await Chat(pia().with_model(model)).say("hi there")
    assert first.text == "[speak]"  # the agent's own voice answers it, with no small-talk line before
    model.means("a large pizza", flows={"order": 90}, values={"size": "large"})
    chat = Chat(pia().with_model(model))
    await chat.say("a large pizza")
    model.means("hello", intent="chitchat")
    again = await chat.say("hello")
    assert again.text == "A large pizza for 12 EUR. Shall I? (yes/no)"


async def test_a_speak_call_after_a_line_said_this_turn_ends_with_the_customers_message() -> None:
    model = StrictModel()
    model.means("I'd like a table", flows={"book": 90}, reply="See you soon!")
    noted = reply("noted", response="Noted: a table.", next=goto("thanks"))
    thanks = reply("thanks", instructions="Thank the customer.", next=end("done"))
    agent = Agent("Bo", flows=[Flow("book", start=noted, nodes=[noted, thanks], on=[on_message("table")])])
    result = await Chat(agent.with_model(model)).say("I'd like a table")
    assert result.text == "Noted: a table.\n\nSee you soon!"
    speak = [c for c in model.calls if c.call == "speak"][-1].request
    assert speak.messages[-1].role == "user"  # not the line said before it: a prefill to some providers
    assert "Already sent this turn:\n- Noted: a table." in speak.instructions


async def test_greetings_while_a_step_asks_are_no_answer_and_never_hand_off() -> None:
    chat = Chat(pia())  # max_turns=2 at the confirm step
    await chat.say("a large pizza")
    for greeting in ("hi", "hello again", "hey there", "good morning", "hi"):
        result = await chat.say(greeting)
        assert result.text == "A large pizza for 12 EUR. Shall I? (yes/no)", greeting  # asked again, not counted
    assert (await chat.say("yes")).text == "Your large pizza is in the oven."
