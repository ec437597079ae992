"""What a long conversation sends a model, read off the wire requests: every call kind keeps its
stable text first and byte-identical (so a provider's prompt cache reuses it on message 18 as on
message 3), the customer's message travels once, no conversation opens with an assistant
message, and a score the understand call was not asked to weigh is never read.

Token figures live in ``bench/tokens.py``; these are the properties behind them.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from typing import Any

from harness import Conversation
from pydantic import BaseModel
from pydantic import Field as PydanticField

from example_modules import load_example
from tether import Agent, Field, Flow, collect, decide, end, goto, on_message, reply, whole_message
from tether.models.openai_model import OpenAIModel
from tether.models.types import Capabilities, ModelRequest
from tether.testing import ScriptedModel

ORDER = re.compile(r"\b([A-Z]-\d{4})\b")
KEYWORDS = {"orders": ("where is", "what about"), "address": ("address",), "refund": ("refund",),
            "human": ("person",)}
# the menu, the orders and refund flows, a question asked mid-form (a speak call), a fold of the
# 16-message window into a summary, and the same kinds of message again after it
CONVERSATION = [
    "hi", "where is my order?", "how do I find my order number?", "A-1001", "thanks! and what about A-1002?",
    "I want a refund for order A-1003", "how long do refunds usually take?", "it arrived broken", "yes",
    "do you ship abroad?", "where is order A-1004?", "can I get a refund for A-1001", "the colour is wrong", "no",
    "hello again", "where is my order A-1002", "refund please, order A-1002", "it never arrived", "yes",
]


def _value(name: str, text: str) -> Any:
    if name == "order_number":
        found = ORDER.search(text)
        return found.group(1) if found else None
    if text.endswith("?"):
        return None
    if name == "topic":
        return next((t for t in ("order", "address", "refund", "person") if t in text.lower()), None)
    if name.startswith("confirm"):
        return text if text in ("yes", "no") else None
    if name == "refund_reason":
        return None if ORDER.search(text) or "refund" in text else text
    return None


def _understand(request: ModelRequest) -> dict[str, Any]:
    assert request.response_format is not None
    text = request.messages[-1].content.lower()
    reply: dict[str, Any] = {}
    for section, spec in request.response_format.schema["properties"].items():
        inner = spec.get("properties", {})
        if section == "flows":
            reply[section] = {k: 90 if any(w in text for w in KEYWORDS.get(k, ())) else 5 for k in inner}
        elif section == "asks":
            reply[section] = text.endswith("?")
        elif section == "fields":
            reply[section] = {k: _value(k, request.messages[-1].content) for k in inner}
        elif section == "collect":
            reply[section] = {alias: {n: _value(n, request.messages[-1].content) for n in group["properties"]}
                              for alias, group in inner.items()}
        else:
            reply[section] = {k: None for k in inner}
    return reply


def _model() -> ScriptedModel:
    many = 100
    return ScriptedModel(understand=[_understand] * many,
                         speak=[lambda r: {"message": "Happy to help with that."}] * many,
                         summary=["The customer asked about orders and refunds; each was handled."] * many)


@functools.cache
def _adapter() -> OpenAIModel:
    return OpenAIModel("local-model", base_url="http://127.0.0.1:9/v1", provider="local",
                       capabilities=Capabilities(native_json_schema=False))


def _wire(request: ModelRequest) -> dict[str, Any]:
    """The body the OpenAI adapter would send a server without native JSON Schema support (the
    schema then travels in the system text); built only, never sent."""
    return _adapter().build_request(request)


def _system_text(body: dict[str, Any]) -> str:
    return "\n\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


def _shared(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b``."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


async def _support_conversation() -> tuple[ScriptedModel, list[tuple[str, list[ModelRequest]]]]:
    model = _model()
    convo = Conversation(load_example("support", as_name="example_support_economy").agent, model)
    per_message: list[tuple[str, list[ModelRequest]]] = []
    for text in CONVERSATION:
        before = len(model.calls)
        convo.clock.advance("20s")
        await convo.say(text)
        per_message.append((text, [c.request for c in model.calls[before:]]))
    return model, per_message


async def test_each_call_kind_keeps_its_stable_prefix_through_a_long_conversation() -> None:
    model, _ = await _support_conversation()
    assert model.count("summary") >= 1  # the window folded on the way: the late calls carry a summary
    understand = [_wire(c.request) for c in model.calls if c.call == "understand"]
    # one judgement per message, no more; "hello again" while the menu asks is a greeting, read by keywords
    assert len(understand) == len(CONVERSATION) - 1
    first = understand[0]
    schemas = [c.request.response_format.schema for c in model.calls if c.call == "understand"]  # type: ignore[union-attr]
    # the flows section is the same score sheet wherever the floor is (the menu, a form, nowhere)
    assert {tuple(s["properties"]["flows"]["properties"]) for s in schemas} == {
        ("menu", "orders", "address", "refund", "human")}
    stable = first["messages"][0]["content"]
    flows_end = stable.index('"flows"')
    for body in understand[1:]:
        # identity, standing orders, catalogue and the score sheet: byte-identical on message 19 as on 2
        assert body["messages"][0]["content"][:flows_end] == stable[:flows_end]
    for kind in ("understand", "speak"):
        bodies = [_wire(c.request) for c in model.calls if c.call == kind]
        assert len(bodies) >= 2, kind
        texts = [_system_text(b) for b in bodies]
        for previous, current in itertools.pairwise(texts):
            # what a prompt cache reuses from the previous call of the kind: at least 80% of the system text
            assert _shared(previous, current) >= 0.8 * len(current), (kind, current[_shared(previous, current):][:80])


STEP_SECTIONS = ("mentions", "branches", "fields", "collect", "summary")


async def test_what_changes_per_step_fold_or_turn_follows_what_every_call_shares() -> None:
    model, _ = await _support_conversation()
    understand = [c.request for c in model.calls if c.call == "understand"]
    bodies = [_wire(r) for r in understand]
    texts = [_system_text(b) for b in bodies]

    def step_part(request: ModelRequest, text: str) -> int:
        """Where the request's first step-dependent schema section starts in its system text."""
        assert request.response_format is not None
        first = next(k for k in request.response_format.schema["properties"] if k in STEP_SECTIONS)
        return text.index(f'"{first}":')

    steps = {json.dumps(r.response_format.schema["properties"].get("collect")) for r in understand}  # type: ignore[union-attr]
    assert len(steps) >= 3  # calls at different steps: the menu's topic, an order number, a refund reason...
    for (a, text_a), (b, text_b) in itertools.combinations(zip(understand, texts, strict=True), 2):
        # identity, standing orders, catalogue and the sections every call has (the score sheet, intent,
        # asks): the same bytes, up to the first section that depends on the step
        assert _shared(text_a, text_b) >= min(step_part(a, text_a), step_part(b, text_b))
    seen: set[str] = set()
    for kind in ("understand", "speak"):
        for call in (c for c in model.calls if c.call == kind):
            body = _wire(call.request)
            system = [m["content"] for m in body["messages"] if m["role"] == "system"]
            assert system[0].startswith(call.request.system)  # what every call of the kind shares comes first
            if call.request.instructions:  # the turn's task comes last, after the summary (which changes per fold)
                chat = next(i for i, m in enumerate(body["messages"]) if m["role"] != "system")
                assert body["messages"][chat - 1]["content"] == call.request.instructions
            summaries = [i for i, text in enumerate(system) if text.startswith("Summary of the earlier")]
            assert summaries in ([], [1]), kind
            if summaries and call.request.instructions:
                seen.add(kind)
    assert seen == {"understand", "speak"}  # both kinds carried a summary and a task after the fold


async def test_a_long_conversation_sends_each_message_once_and_never_opens_with_the_assistant() -> None:
    _, per_message = await _support_conversation()
    for text, requests in per_message:
        for request in requests:
            if request.call == "summary":
                continue
            lines = [line.removeprefix("> ") for line in f"{request.system}\n{request.instructions}".splitlines()]
            assert text not in lines, (text, request.call)  # neither quoted nor restated in the system text
            assert [m.content for m in request.messages].count(text) == 1, (text, request.call)
            assert request.messages[-1].content == text, (text, request.call)
            chat = [m for m in request.messages if m.role != "system"]
            assert chat[0].role == "user", (text, request.call)


def _menu_agent() -> Agent:
    menu = Flow("menu", "Finds out what the customer needs", nodes=[
        collect("topic", fields=["topic"], ask="What do you need?", resolvers=[whole_message("topic", min_length=2)],
                on_complete=lambda data, state: end("chosen")),
    ], on=[on_message(repeat="always")])
    orders = Flow("orders", "Order status", nodes=[reply("status", instructions="Say where the order is.")],
                  on=[on_message("where is my order", repeat="always")])
    refunds = Flow("refunds", "Refunds", nodes=[reply("refund", instructions="Explain refunds.", next=end("done"))],
                   on=[on_message("refund", repeat="once")])
    fields = {"topic": Field("string", description="What the customer needs", extract="asked")}
    return Agent("Ava", fields=fields, flows=[menu, orders, refunds], idle="silent")


async def test_the_score_sheet_stays_whole_but_only_the_candidates_scores_route() -> None:
    model = ScriptedModel(
        understand=[{"flows": {"menu": 0, "orders": 0, "refunds": 95}},
                    {"flows": {"menu": 0, "orders": 90, "refunds": 99}}],
        speak=["Refunds take five days.", "It ships tomorrow."])
    convo = Conversation(_menu_agent(), model)
    await convo.say("how do refunds work?")
    await convo.say("where is my order?")
    first, second = (c.request.response_format.schema["properties"]["flows"]  # type: ignore[union-attr]
                     for c in model.calls if c.call == "understand")
    # the same sheet, in the agent's order, although refunds (repeat once) may not start again
    assert list(first["properties"]) == list(second["properties"]) == ["menu", "orders", "refunds"]
    # refunds scored 99 on the second message but is no candidate any more: orders took it
    assert model.calls[-1].call == "speak" and "Current flow: orders" in model.calls[-1].request.instructions


class _Triage(BaseModel):
    priority: str


def _intake_agent() -> Agent:
    fields = {"device": Field("string", description="The device", extract="asked"),
              "problem": Field("string", description="What is wrong", extract="asked")}
    intake = Flow("intake", "Report a broken device", nodes=[
        collect("details", fields=["device", "problem"], ask="Which device, and what is wrong?"),
        decide("triage", schema=_Triage, instructions="How urgent is the ${device}: ${problem}?",
               decide=lambda d, s: goto("opened")),
        reply("opened", response="Ticket opened for your ${device}.", next=end("opened")),
    ], on=[on_message(repeat="always")], clear_on_start=["device", "problem"])
    return Agent("Iris", fields=fields, flows=[intake], idle="silent")


async def test_extract_and_decide_read_the_latest_exchange_opening_with_the_customer() -> None:
    model = ScriptedModel(extract=[{"device": "printer"}, {"problem": "it jams"}, {"device": "phone"},
                                   {"problem": "it is cracked"}],
                          decide=[{"priority": "low"}, {"priority": "high"}])
    convo = Conversation(_intake_agent(), model)
    for text in ("the printer", "it jams", "my phone", "it is cracked"):
        await convo.say(text)
    expected = [("user", "my phone"), ("assistant", "Which device, and what is wrong?"), ("user", "it is cracked")]
    for kind in ("extract", "decide"):
        last = [c.request for c in model.calls if c.call == kind][-1]
        # the last four messages began with the previous ticket's confirmation: left out, the question stays
        assert [(m.role, m.content) for m in last.messages] == expected, kind
    decided = [c.request for c in model.calls if c.call == "decide"]
    assert decided[0].system == decided[1].system  # the stable part: identity, standing orders, schema
    assert decided[1].instructions == "How urgent is the phone: it is cracked?"


class _Verdict(BaseModel):
    priority: str
    queue_name: str = PydanticField(title="Team queue", description="Which team takes it")


async def test_a_decide_schema_drops_the_titles_that_only_repeat_its_names() -> None:
    model = ScriptedModel(extract=[{"device": "printer", "problem": "it jams"}],
                          decide=[{"priority": "low", "queue_name": "print"}])
    agent = _intake_agent()
    intake = agent.flows_by_id["intake"]
    verdict = decide("triage", schema=_Verdict, instructions="Triage the ${device}: ${problem}.",
                     decide=lambda d, s: goto("opened"))
    nodes = [verdict if n.id == "triage" else n for n in intake.nodes]
    convo = Conversation(Agent("Iris", fields=agent.fields, idle="silent", flows=[
        Flow("intake", "Report a broken device", nodes=nodes, on=intake.on)]), model)
    result = await convo.say("the printer, it jams")
    assert result.text == "Ticket opened for your printer."  # the reply still validates against _Verdict
    (request,) = [c.request for c in model.calls if c.call == "decide"]
    assert request.response_format is not None
    schema = request.response_format.schema
    assert "title" not in schema and "title" not in schema["properties"]["priority"]  # "Triage", "Priority"
    assert schema["properties"]["queue_name"]["title"] == "Team queue"  # written by the developer: kept
