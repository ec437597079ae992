"""A strict fake model: it knows what the customer means, and says only what a request lets it say.

A :class:`ScriptedModel` replies whatever the test scripted, even a value the request never asked
for (the engine then drops it, or worse, a test passes that a real model could never make pass).
:class:`StrictModel` is told what the customer *means* by each message (field values, which flow
they want, an intent such as ``cancel``, whether they ask a question) and builds every reply from
the request alone: a value goes only where the request's schema offers that field and accepts that
value; a flow score only where the request scores that flow; an intent only where the request
lists it. What it could not say is reported (:meth:`StrictModel.unsaid`), so a test fails when the
product does not give the model the chance to understand the customer.

    model = StrictModel()
    model.means("actually make it medium", values={"size": "medium"})
    result = await agent.with_model(model).turn(session, Message("actually make it medium"))
    assert model.unsaid() == []
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from tether.models.types import (
    Capabilities,
    ModelRequest,
    ModelResponse,
    StreamChunk,
    ToolCall,
    Usage,
)
from tether.testing._models import QueuedReplies, Reply, ScriptedCall, ScriptExhausted, to_response

__all__ = ["Meaning", "StrictModel", "Unsaid"]

_ALIASED = re.compile(r"^- (\w+): (.*)$", re.MULTILINE)
_FLOW_ALIAS = re.compile(r"^- (f\d+): flow (.+)$", re.MULTILINE)
_JUDGED = ("flows", "asks", "intent", "mentions", "branches", "message")
"""Top-level envelope keys with their own meaning; every other object section holds field values."""


@dataclass(frozen=True)
class Meaning:
    """What the customer means by one message.

    Attributes:
        values: field values they gave, by field name (a correction is just a value again).
        flows: how well the message fits each flow, 0-100, by flow id.
        intent: what they want done with the conversation (``cancel``, ``chitchat``,
            ``completed``, ``skip``...), said only where a request lists that intent.
        asks: whether they ask a question.
        branches: ``True``/``False`` per branch, by its ``when`` text.
        mentions: ``True``/``False`` per ``on_mention`` flow id.
        reply: what a ``speak`` call answers (default: ``"[speak]"``).
    """

    values: Mapping[str, Any] = field(default_factory=dict)
    flows: Mapping[str, float] = field(default_factory=dict)
    intent: str | None = None
    asks: bool | None = None
    branches: Mapping[str, bool] = field(default_factory=dict)
    mentions: Mapping[str, bool] = field(default_factory=dict)
    reply: str | None = None

    def items(self) -> list[str]:
        """What there is to say, one name each: ``values.size``, ``flows.order``, ``intent``..."""
        names = [f"values.{n}" for n in self.values] + [f"flows.{f}" for f in self.flows]
        names += ["intent"] if self.intent is not None else []
        names += ["asks"] if self.asks is not None else []
        names += [f"branches.{b}" for b in self.branches] + [f"mentions.{m}" for m in self.mentions]
        return names


@dataclass(frozen=True)
class Unsaid:
    """Something the customer meant that no model call made for their message could say.

    Attributes:
        message: the customer's message.
        item: what could not be said (``values.size``, ``intent``, ``flows.order``...).
        calls: the calls made while that message was the latest (``understand``, ``speak``...).
        offered: what those calls offered instead (field names, flow ids, intents).
    """

    message: str
    item: str
    calls: tuple[str, ...]
    offered: tuple[str, ...]

    def __str__(self) -> str:
        return (f"{self.message!r}: could not say {self.item} (calls: {', '.join(self.calls) or 'none'}; "
                f"offered: {', '.join(self.offered) or 'nothing'})")


@dataclass
class _Heard:
    calls: list[str] = field(default_factory=list)
    said: set[str] = field(default_factory=set)
    offered: set[str] = field(default_factory=set)


class StrictModel(QueuedReplies):
    """A fake model that answers from what the customer means and what each request offers.

    ``understand``, ``extract`` and ``speak`` calls are built from the request (see the module
    notes), a ``summary`` (a call, or the section of an understand call that carries it) is
    ``"[summary]"`` unless one is queued; any other call (``decide``,
    ``judge``...) takes its reply from a queue, as :class:`~tether.testing.ScriptedModel` does, and
    fails the test when none is left.

    >>> model = StrictModel(decide=[{"route": "refund"}])
    >>> model.means("cancel that", intent="cancel")
    """

    def __init__(self, *, name: str = "strict:model", speak: str = "[speak]", **queues: list[Reply]) -> None:
        self._name = name
        self._speak = speak
        self._meanings: dict[str, Meaning] = {}
        self._heard: dict[str, _Heard] = {}
        self._queues: dict[str, deque[Reply]] = {call: deque(replies) for call, replies in queues.items()}
        self.calls: list[ScriptedCall] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities()

    def means(self, message: str, meaning: Meaning | None = None, **parts: Any) -> None:
        """Say what the customer means by ``message`` (a :class:`Meaning`, or its parts by name).
        A message with no meaning means nothing the model could fill."""
        self._meanings[message] = meaning if meaning is not None else Meaning(**parts)
        self._heard.pop(message, None)  # the same words said again are judged afresh

    def unsaid(self, message: str | None = None) -> list[Unsaid]:
        """What the customer meant and no call made for that message could say (for one message, or
        for every message a call was made for). A message no call was made for is not listed: the
        engine understood it without a model, and the test reads what it did."""
        found = []
        for text, heard in self._heard.items():
            if message is not None and text != message:
                continue
            meaning = self._meanings.get(text, Meaning())
            for item in meaning.items():
                if item not in heard.said:
                    found.append(Unsaid(text, item, tuple(heard.calls), tuple(sorted(heard.offered))))
        return found

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(ScriptedCall(request.call, request))
        text = _latest_user_message(request)
        heard = self._heard.setdefault(text, _Heard()) if text is not None else _Heard()
        heard.calls.append(request.call)
        meaning = self._meanings.get(text or "", Meaning())
        if request.tools and request.tool_choice == "required" and len(request.tools) == 1:
            tool = request.tools[0]
            arguments = _fill_object(tool.parameters, meaning, heard)
            return ModelResponse(tool_calls=(ToolCall("call_1", tool.name, arguments),), finish_reason="tool_calls",
                                 usage=Usage())
        if request.response_format is not None and request.call in ("understand", "speak"):
            data = _envelope(request, meaning, heard, self._speak)
            if "summary" in (request.response_format.schema.get("properties") or {}):
                # the understand call carries the window's summary: a queued one, else "[summary]"
                queued = self._queues.get("summary")
                reply = queued.popleft() if queued else "[summary]"
                reply = reply(request) if callable(reply) else reply
                data["summary"] = reply.text if isinstance(reply, ModelResponse) else str(reply)
            message = data.get("message") if isinstance(data.get("message"), str) else json.dumps(data)
            return ModelResponse(text=str(message), data=data, finish_reason="stop", usage=Usage())
        if request.call == "speak":
            return ModelResponse(text=meaning.reply or self._speak, finish_reason="stop", usage=Usage())
        queue = self._queues.get(request.call)
        if not queue and request.call == "summary":  # folding the history: nothing the customer meant is in it
            return ModelResponse(text="[summary]", finish_reason="stop", usage=Usage())
        if not queue:
            raise ScriptExhausted(f"StrictModel builds understand, extract, speak and summary replies; a "
                                  f"{request.call!r} call needs a queued reply (StrictModel(decide=[...]) or "
                                  "model.add(...))")
        reply = queue.popleft()
        return to_response(reply(request) if callable(reply) else reply, request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        response = await self.complete(request)
        if response.text:
            yield StreamChunk(delta=response.text)
        yield StreamChunk(done=True, response=response)


def _latest_user_message(request: ModelRequest) -> str | None:
    for message in reversed(request.messages):
        if message.role == "user":
            return message.content
    return None


def _accepts(schema: Mapping[str, Any], value: Any, root: Mapping[str, Any]) -> bool:
    probe = dict(schema)
    if "$defs" in root and "$defs" not in probe:
        probe["$defs"] = root["$defs"]
    return not any(True for _ in Draft202012Validator(probe).iter_errors(value))


def _fill_object(schema: Mapping[str, Any], meaning: Meaning, heard: _Heard,
                 root: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every property of an object schema: a field value the customer gave and the schema accepts,
    a nested object filled the same way, else null."""
    root = root if root is not None else schema
    filled: dict[str, Any] = {}
    for name, spec in (schema.get("properties") or {}).items():
        if isinstance(spec, Mapping) and "properties" in spec:
            filled[name] = _fill_object(spec, meaning, heard, root)
            continue
        if name == "_asks":  # an extract call's "asks a question"
            filled[name] = meaning.asks
            if meaning.asks is not None:
                heard.said.add("asks")
            continue
        if name == "_intent":  # an extract call's repair intent
            allowed = [v for v in spec.get("enum", []) if v is not None]
            heard.offered.update(f"intent {v}" for v in allowed)
            filled[name] = meaning.intent if meaning.intent in allowed else None
            if filled[name] is not None:
                heard.said.add("intent")
            continue
        heard.offered.add(name)
        if name in meaning.values and _accepts(spec, meaning.values[name], root):
            filled[name] = meaning.values[name]
            heard.said.add(f"values.{name}")
        else:
            filled[name] = None
    return filled


def _envelope(request: ModelRequest, meaning: Meaning, heard: _Heard, speak: str) -> dict[str, Any]:
    assert request.response_format is not None
    schema = request.response_format.schema
    offered: Mapping[str, Any] = schema.get("properties") or {}
    text = f"{request.system}\n{request.instructions}"
    lines = dict(_ALIASED.findall(text))
    flow_ids = {alias: flow for alias, flow in _FLOW_ALIAS.findall(text)}
    data: dict[str, Any] = {}
    for section, spec in offered.items():
        if section == "message":
            data[section] = meaning.reply or speak
        elif section == "flows":
            data[section] = {}
            for key in spec.get("properties", {}):
                flow = flow_ids.get(key, key)
                heard.offered.add(f"flows.{flow}")
                score = meaning.flows.get(flow)
                data[section][key] = score
                if score is not None:
                    heard.said.add(f"flows.{flow}")
        elif section == "asks":
            data[section] = meaning.asks
            if meaning.asks is not None:
                heard.said.add("asks")
        elif section == "intent":
            allowed = [v for v in spec.get("enum", []) if v is not None]
            heard.offered.update(f"intent {v}" for v in allowed)
            data[section] = meaning.intent if meaning.intent in allowed else None
            if data[section] is not None:
                heard.said.add("intent")
        elif section == "mentions":
            data[section] = {key: meaning.mentions.get(key) for key in spec.get("properties", {})}
            heard.said.update(f"mentions.{k}" for k, v in data[section].items() if v is not None)
        elif section == "branches":
            data[section] = {}
            for alias in spec.get("properties", {}):
                statement = lines.get(alias, alias)
                said = meaning.branches.get(statement, meaning.branches.get(alias))
                data[section][alias] = said
                if said is not None:
                    heard.said.add(f"branches.{statement if statement in meaning.branches else alias}")
        elif isinstance(spec, Mapping) and "properties" in spec:
            data[section] = _fill_object(spec, meaning, heard, schema)
        else:  # a speak envelope's own field, at the top level
            data[section] = _fill_object({"properties": {section: spec}}, meaning, heard, schema)[section]
    return data
