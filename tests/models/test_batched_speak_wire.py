"""A batched segment (examples/welcome.yaml: three chained ``generate`` replies) as the OpenAI
adapter sends it: one request, whose task lists the three steps' instructions in order."""

from __future__ import annotations

import json
from pathlib import Path

from model_server import FakeProvider, Reply, chat_completion

from tether import Message
from tether.dialect import load
from tether.models.openai_model import OpenAIModel
from tether.testing import FakeClock, SequentialIds

WELCOME = Path(__file__).resolve().parents[2] / "examples" / "welcome.yaml"
SPOKEN = "Welcome to Acme Cloud! Starter is free, Team 20 EUR, Scale 90 EUR; paid plans start with a free trial."


async def test_the_segment_is_one_request_with_the_steps_in_order(provider: FakeProvider) -> None:
    content = json.dumps({"message": SPOKEN})
    provider.add(Reply(body=chat_completion(content)))
    model = OpenAIModel("gpt-4o-mini", api_key="sk-test", base_url=provider.url + "/v1")
    try:
        agent = load(WELCOME).with_model(model).with_clock(FakeClock(), SequentialIds("s"))
        result = await agent.turn(None, Message("hi, I just signed up"))
    finally:
        await model.aclose()
    assert len(provider.requests) == 1 and result.llm_calls == 1
    assert result.text == SPOKEN + "\n\nWould you like to start the free Team trial? (yes or no)"
    messages = provider.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["system", "system", "user"]
    task = messages[1]["content"]
    assert (
        "Your task now: one message that does each of these, in this order:\n\n"
        "Greet the customer warmly and in one sentence.\n\n"
        "Present the three plans in one short sentence each.\n\n"
        "Say that every paid plan starts with a 14-day free trial; do not ask a question."
    ) in task
    assert messages[2] == {"role": "user", "content": "hi, I just signed up"}
    assert provider.requests[0].body["response_format"]["json_schema"]["schema"]["required"] == ["message"]
