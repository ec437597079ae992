"""A collect passes on the values its schema gives them as a whole (seed 000): a pydantic
``field_validator``'s cleanup reaches ``on_complete`` and the run's state, not the raw text."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, field_validator, model_validator

from tether import Agent, Flow, Message, collect, end, goto, on_message, pattern, reply


class Order(BaseModel):
    code: str

    @field_validator("code")
    @classmethod
    def tidy(cls, value: str) -> str:
        return value.strip().upper()


class Pair(BaseModel):
    code: str
    note: str

    @model_validator(mode="after")
    def both(self) -> Pair:
        return self


def agent_for(schema: type[BaseModel], seen: dict[str, Any]) -> Agent:
    def done(data: dict[str, Any], state: dict[str, Any]) -> Any:
        seen.update(data)
        return goto("ok")

    flow = Flow("f", "Take a code", nodes=[
        collect("ask", schema=schema, required=["code"], ask="Code?", resolvers=[pattern("code", r"code (\S+)")],
                on_complete=done),
        reply("ok", response="Got ${code}.", next=end()),
    ], on=[on_message()])
    return Agent("A", flows=[flow])


async def test_a_field_validators_cleanup_reaches_on_complete_and_the_state() -> None:
    seen: dict[str, Any] = {}
    result = await agent_for(Order, seen).turn(None, Message("my code ab-12"))
    assert seen == {"code": "AB-12"}
    assert result.text == "Got AB-12."


async def test_a_schema_that_refuses_the_values_as_a_whole_passes_them_on_as_gathered() -> None:
    seen: dict[str, Any] = {}
    result = await agent_for(Pair, seen).turn(None, Message("my code ab-12"))  # `note` was never gathered
    assert seen == {"code": "ab-12"} and result.text == "Got ab-12."
    assert any("refused the gathered values as a whole" in entry.message for entry in result.session.warn)
