"""Seed 000, "The collect extraction loop": complete when required fields are present, give up
after max_turns (escalate naming what is missing), tier-0 resolvers first, one non-speaking
``submit_<node>_data`` extraction call, the never-guess guard, a deterministic ask."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from seed000_helpers import make_agent, say, scripted, the_run

from tether import Field, Repair, action, collect, end, enum_check, goto, jsonpath, on_message, range_, reply
from tether.engine.graph.extract import INTENT_KEY


class Contact(BaseModel):
    name: str
    email: str
    note: str | None = None


class Order(BaseModel):
    size: str
    name: str


class Party(BaseModel):
    guests: int


def recorder() -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], Any]:
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def on_complete(data: Any, state: Any) -> Any:
        seen.append((dict(data), dict(state)))
        return end("collected")

    return seen, on_complete


async def test_complete_calls_on_complete_with_only_the_projected_required_fields() -> None:
    seen, on_complete = recorder()
    model = scripted(extract=[{"name": "Ada", "email": "ada@example.com", "note": "fragile"}])
    node = collect("contact", schema=Contact, required=["name", "email"], on_complete=on_complete)
    result = await say(make_agent(node, model=model), None, "Ada, ada@example.com, fragile")
    assert seen[0][0] == {"name": "Ada", "email": "ada@example.com"}
    assert result.ended[0].reason == "collected"
    assert result.llm_calls == 1 and model.unused() == {}


async def test_completed_fields_are_promoted_into_the_run_state() -> None:
    seen: dict[str, Any] = {}
    model = scripted(extract=[{"name": "Ada", "email": "ada@example.com"}])
    node = collect("contact", schema=Contact, required=["name", "email"])
    after = action("after", lambda s, c: seen.update(s) or end("done"))
    result = await say(make_agent(node, after, model=model), None, "Ada ada@example.com")
    assert seen["name"] == "Ada" and seen["email"] == "ada@example.com"
    assert not any(k.startswith("__collect") for k in seen)
    assert result.llm_calls == 1 and model.unused() == {}


async def test_the_extraction_tool_is_partial_nullable_and_quotes_the_user() -> None:
    model = scripted(extract=[{}])
    node = collect("contact-info", schema=Contact, required=["name", "email"])
    result = await say(make_agent(node, model=model), None, "hello, I'm Ada")
    (call,) = model.calls
    assert call.call == "extract"
    (spec,) = call.request.tools
    assert spec.name == "submit_contact_info_data"
    assert call.request.tool_choice == "required"
    params = spec.parameters
    # the node schema made partial: optional fields may be submitted too; only the required ones are "still needed"
    # _asks: a question?; _intent: the catch-all started the run, so the message may name no task at all
    assert set(params["properties"]) == {"name", "email", "note", "_asks", "_intent"}
    assert "required" not in params or params["required"] == []
    assert "Still needed: name, email." in spec.description
    for name in ("name", "email", "note"):
        variants = params["properties"][name]["anyOf"]
        assert {"type": "null"} in variants
    assert "name" in spec.description and "email" in spec.description
    assert "hello, I'm Ada" in spec.description
    assert result.llm_calls == 1 and model.unused() == {}


async def test_incomplete_asks_deterministically_and_keeps_namespaced_state() -> None:
    model = scripted(extract=[{"name": "Ada"}])
    node = collect("contact", schema=Contact, required=["name", "email"])
    result = await say(make_agent(node, model=model), None, "I'm Ada")
    assert result.text == "Could you share your email?"
    assert result.messages[0].kind == "verbatim"
    run = the_run(result)
    assert (run.node, run.status) == ("contact", "asking")
    assert run.state["__collect_contact"] == {"name": "Ada"}
    assert run.state["__collectTurns_contact"] == 1
    assert "name" not in run.state  # not promoted while gathering
    assert result.llm_calls == 1 and model.unused() == {}


async def test_default_ask_for_several_fields() -> None:
    model = scripted(extract=[{}])
    node = collect("contact", schema=Contact, required=["name", "email"])
    result = await say(make_agent(node, model=model), None, "hi")
    assert result.text == "Could you share: name, email?"


async def test_a_custom_ask_receives_the_missing_fields_and_state() -> None:
    asked: list[list[str]] = []

    def ask(missing: list[str], state: Any) -> str:
        asked.append(list(missing))
        return f"Please give {' and '.join(missing)}."

    model = scripted(extract=[{}])
    node = collect("contact", schema=Contact, required=["name", "email"], ask=ask)
    result = await say(make_agent(node, model=model), None, "hi")
    assert result.text == "Please give name and email."
    assert asked == [["name", "email"]]


async def test_fields_gathered_over_two_turns_complete_on_the_second() -> None:
    seen, on_complete = recorder()
    model = scripted(extract=[{"name": "Ada"}, {"email": "ada@example.com"}])
    agent = make_agent(collect("contact", schema=Contact, required=["name", "email"], on_complete=on_complete),
                       model=model)
    first = await say(agent, None, "I'm Ada")
    second = await say(agent, first.session, "ada@example.com")
    assert seen[0][0] == {"name": "Ada", "email": "ada@example.com"}
    assert second.ended[0].reason == "collected"
    offered = model.calls[1].request.tools[0].parameters["properties"]
    assert offered.keys() - {INTENT_KEY, "_asks"} == {"email", "note"}  # name is known
    # an answer to the step may instead be a repair intent (see docs/repair.md)
    assert offered[INTENT_KEY]["enum"] == ["cancel", "chitchat", "skip", None]
    assert first.llm_calls == 1 and second.llm_calls == 1 and model.unused() == {}


async def test_max_turns_exceeded_with_missing_fields_escalates_naming_them() -> None:
    model = scripted(extract=[{}])
    node = collect("contact", schema=Contact, required=["name", "email"], max_turns=1)
    agent = make_agent(node, model=model)
    first = await say(agent, None, "hi")
    second = await say(agent, first.session, "still nothing")
    assert second.status == "handoff"
    assert second.handoff is not None and second.handoff.agent == "human"
    assert second.handoff.reason == 'Could not collect name, email for "contact" after 1 turns.'
    assert second.llm_calls == 0 and model.unused() == {}


async def test_max_turns_exceeded_but_satisfied_completes() -> None:
    seen, on_complete = recorder()
    model = scripted(extract=[{}])
    node = collect("contact", fields=["email"], max_turns=1, on_complete=on_complete)
    agent = make_agent(node, model=model, fields={"email": Field()})
    first = await say(agent, None, "hi")
    assert first.text == "Could you share your email?"
    # the session-wide field becomes known elsewhere (another run, a tool) before the next pass
    session = first.session.model_copy(deep=True)
    session.data["email"] = "ada@example.com"
    second = await say(agent, session, "anything")
    assert second.ended[0].reason == "collected"
    assert seen[0][0] == {"email": "ada@example.com"}
    assert second.llm_calls == 0 and model.unused() == {}


async def test_enum_check_resolves_with_no_model_call() -> None:
    seen, on_complete = recorder()
    node = collect("pick", schema=Order, required=["size"], resolvers=[enum_check("size", ["small", "large"])],
                   on_complete=on_complete)
    model = scripted()
    result = await say(make_agent(node, model=model), None, "a LARGE one please")
    assert seen[0][0] == {"size": "large"}
    assert result.llm_calls == 0 and model.calls == []


async def test_enum_check_ambiguity_is_asked_not_guessed() -> None:
    node = collect("pick", schema=Order, required=["size"], resolvers=[enum_check("size", ["small", "large"])])
    model = scripted()
    result = await say(make_agent(node, model=model), None, "small or large, not sure")
    assert result.text == "Could you share your size?"
    assert result.llm_calls == 0


async def test_range_resolves_one_in_range_number() -> None:
    seen, on_complete = recorder()
    node = collect("party", schema=Party, resolvers=[range_("guests", min=1, max=20)], on_complete=on_complete)
    result = await say(make_agent(node, model=scripted()), None, "we are 4 people in 2026")
    assert seen[0][0] == {"guests": 4}
    assert result.llm_calls == 0


async def test_jsonpath_resolves_from_the_run_state() -> None:
    seen, on_complete = recorder()
    start = action("start", lambda s, c: goto("pick", data={"known_size": "small"}))
    node = collect("pick", schema=Order, required=["size"], resolvers=[jsonpath("size", "state.known_size")],
                   on_complete=on_complete)
    result = await say(make_agent(start, node, model=scripted()), None, "hello")
    assert seen[0][0] == {"size": "small"}
    assert result.llm_calls == 0


async def test_a_resolved_field_is_left_out_of_the_extraction_schema() -> None:
    seen, on_complete = recorder()
    model = scripted(extract=[{"name": "Bob"}])
    node = collect("order", schema=Order, resolvers=[enum_check("size", ["small", "large"])],
                   on_complete=on_complete)
    result = await say(make_agent(node, model=model), None, "large for Bob")
    (call,) = model.calls
    assert set(call.request.tools[0].parameters["properties"]) == {"name", "_asks", "_intent"}
    assert seen[0][0] == {"size": "large", "name": "Bob"}
    assert result.llm_calls == 1 and model.unused() == {}


async def test_verbatim_fields_not_in_the_message_are_dropped() -> None:
    model = scripted(extract=[{"name": "Ada Lovelace", "email": "ada@example.com"}])
    node = collect("contact", schema=Contact, required=["name", "email"], verbatim_fields=["email"])
    result = await say(make_agent(node, model=model), None, "I am Ada Lovelace, mail me at my usual address")
    run = the_run(result)
    assert run.state["__collect_contact"] == {"name": "Ada Lovelace"}
    assert result.text == "Could you share your email?"
    update = next(e for e in result.events if e.type == "collect-update")
    assert update.rejected == ["email"]
    assert result.llm_calls == 1 and model.unused() == {}


async def test_verbatim_fields_present_in_the_message_are_kept_case_insensitively() -> None:
    seen, on_complete = recorder()
    model = scripted(extract=[{"name": "ada", "email": "Ada@Example.com"}])
    node = collect("contact", schema=Contact, required=["name", "email"], verbatim_fields=["name", "email"],
                   on_complete=on_complete)
    await say(make_agent(node, model=model), None, "ADA here, ada@example.com")
    assert seen[0][0] == {"name": "ada", "email": "Ada@Example.com"}


async def test_a_value_the_schema_rejects_is_not_kept() -> None:
    model = scripted(extract=[{"guests": "many"}])
    node = collect("party", schema=Party)
    result = await say(make_agent(node, model=model), None, "a lot of us")
    assert the_run(result).state["__collect_party"] == {}
    assert result.text == "Could you share your guests?"


async def test_a_collect_reached_after_the_message_was_consumed_asks_without_extracting() -> None:
    model = scripted(extract=[{"name": "Ada", "email": "ada@example.com"}])
    first = collect("contact", schema=Contact, required=["name", "email"], on_complete=lambda d, s: goto("order"))
    second = collect("order", schema=Order)
    result = await say(make_agent(first, second, model=model), None, "Ada ada@example.com")
    assert result.text == "Could you share: size, name?"
    assert the_run(result).node == "order"
    assert result.llm_calls == 1 and model.unused() == {}


async def test_a_static_on_complete_id_moves_to_that_node() -> None:
    node = collect("pick", schema=Order, required=["size"], resolvers=[enum_check("size", ["small", "large"])],
                   on_complete="confirm")
    confirm = reply("confirm", response="A ${size} one.", next=end("done"))
    result = await say(make_agent(node, confirm, model=scripted()), None, "small please")
    assert result.text == "A small one."
    assert result.llm_calls == 0


async def test_no_on_complete_takes_the_next_node() -> None:
    node = collect("pick", schema=Order, required=["size"], resolvers=[enum_check("size", ["small", "large"])])
    following = reply("following", response="next node, ${size}", next=end("done"))
    result = await say(make_agent(node, following, model=scripted()), None, "large")
    assert result.text == "next node, large"


async def test_max_turns_defaults_to_ten() -> None:
    node = collect("contact", schema=Contact, required=["name", "email"])  # no model: nothing is extracted
    assert node.max_turns == 10
    # the cannot-handle repair pattern would hand over after three passes that understand nothing
    agent = make_agent(node, repair=Repair(cannot_handle_limit=20))
    result = await say(agent, None, "turn 1")
    for n in range(2, 11):
        result = await say(agent, result.session, f"turn {n}")
        assert result.status == "awaiting_user"
    assert the_run(result).state["__collectTurns_contact"] == 10
    result = await say(agent, result.session, "turn 11")
    assert result.status == "handoff"
    assert result.handoff is not None
    assert result.handoff.reason == 'Could not collect name, email for "contact" after 10 turns.'


async def test_a_deterministic_step_says_its_question_when_it_comes_to_ask_and_its_ask_after() -> None:
    node = collect("size", fields=["size"], question="Hi, I'm Pia. Small or large?", ask="Small or large?",
                   resolvers=[enum_check("size", ["small", "large"])], on_complete=end("sized"))
    agent = make_agent(node, on=[on_message(repeat="always")], clear_on_start=["size"], fields={"size": Field()},
                       repair=Repair(thanks_reply="Any time."))
    first = await say(agent, None, "hello")
    assert first.text == "Hi, I'm Pia. Small or large?"  # the opening, once
    unread = await say(agent, first.session, "purple")
    assert unread.text == "Small or large?"  # an answer it could not read: asked again, no greeting
    thanked = await say(agent, unread.session, "thanks!")
    assert thanked.text == "Any time.\n\nSmall or large?" and "repair-chitchat" in thanked.codes()
    done = await say(agent, thanked.session, "large")
    assert done.ended[0].reason == "sized"
    # a new run comes to the step: a catch-all's question is the agent's opening, said once a session
    again = await say(agent, done.session, "hello again")
    assert again.text == "Small or large?"
    assert first.llm_calls == unread.llm_calls == thanked.llm_calls == again.llm_calls == 0
