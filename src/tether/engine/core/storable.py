"""What a store can hold: text with no lone surrogate and no NUL character.

A customer's input that breaks this is refused (:mod:`tether.engine.core.input_checks`). A model's reply
cannot be refused after the fact, so it is made storable: a lone surrogate becomes U+FFFD (the
replacement character) and a NUL is removed. :func:`~tether.models.parsing.extract_json` does it
for every value it parses; at the one doorway every reply passes (``TurnState.call``) the text,
structured data and tool arguments an adapter handed over get the same. Otherwise a reply echoing
``"\\ud800"`` would produce a session no store can save.
"""

from __future__ import annotations

import dataclasses

from tether.models.parsing import UNSTORABLE, storable_text, storable_value
from tether.models.types import ModelResponse, ToolCall

__all__ = ["UNSTORABLE", "storable_response", "storable_text", "storable_value"]

def storable_response(response: ModelResponse) -> ModelResponse:
    """The response with its text, data and tool arguments made storable (itself when already so)."""
    calls = tuple(ToolCall(c.id, storable_text(c.name), storable_value(c.arguments)) for c in response.tool_calls)
    cleaned = dataclasses.replace(response, text=storable_text(response.text), data=storable_value(response.data),
                                  tool_calls=calls)
    return response if cleaned == response else cleaned
