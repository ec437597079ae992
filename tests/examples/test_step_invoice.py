"""Seed 004's invoice extraction demo: one agent step with an output schema answers
``application/json``, and the response envelope says so."""

from __future__ import annotations

import json

from pydantic import BaseModel

from tether import Agent, Flow, Message, agent, on_message
from tether.runtime import Runtime
from tether.stores import MemoryStore
from tether.testing import FakeClock, ScriptedModel


class LineItem(BaseModel):
    description: str
    amount: float


class Invoice(BaseModel):
    number: str
    vendor: str
    total: float
    items: list[LineItem]


extract = agent("extract", prompt="Extract the invoice the customer pastes. Answer with the JSON only.",
                output_schema=Invoice, content_type="application/json")
invoices = Agent("Invoices", flows=[Flow("invoices", nodes=[extract], on=[on_message()])])

PASTED = "ACME Ltd, invoice INV-7: 2 widgets 100.00, shipping 20.50, total 120.50"
EXTRACTED = {"number": "INV-7", "vendor": "ACME Ltd", "total": 120.5,
             "items": [{"description": "2 widgets", "amount": 100.0}, {"description": "shipping", "amount": 20.5}]}


async def test_invoice_extraction_answers_json_with_its_content_type() -> None:
    model = ScriptedModel(agent=[EXTRACTED])
    runtime = Runtime(invoices.with_model(model), store=MemoryStore(), clock=FakeClock())
    response = await runtime.run("Invoices", message=Message(PASTED))
    assert response.success and response.content_type == "application/json"
    assert Invoice.model_validate(json.loads(response.message)) == Invoice.model_validate(EXTRACTED)
    request = model.calls[0].request
    assert request.response_format is not None and request.response_format.schema == Invoice.model_json_schema()
    assert request.messages[-1].content == PASTED and model.unused() == {}


async def test_a_failure_envelope_stays_text_plain() -> None:
    runtime = Runtime(invoices, store=MemoryStore(), clock=FakeClock())  # no model configured
    response = await runtime.run("Invoices", message=Message(PASTED))
    assert not response.success and response.content_type == "text/plain"
