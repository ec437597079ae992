"""Field values: per-field validation, the never-guess guard, and the non-speaking extraction call
(``submit_<node>_data``), whose arguments are held to the tool schema that was sent (an invalid or
unoffered field is dropped with a warning; see :mod:`tether.engine.graph.reply_check`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.engine.graph.identity import identity
from tether.engine.graph.reply_check import check_reply, coerce_field_values, report_dropped
from tether.flow.fields import coerce
from tether.flow.nodes import Collect
from tether.models.parsing import ReplyParseError, extract_json
from tether.models.types import ModelRequest, ToolSpec

__all__ = ["ASKS_KEY", "INTENT_KEY", "collect_field_schema", "dated", "extract_values", "passes_verbatim_guard",
           "submit_tool_name", "validate_value"]

_NUMBER = re.compile(r"[-+]?\d+(?:[.,]\d+)?")
INTENT_KEY = "_intent"
ASKS_KEY = "_asks"
"""The extract call's slot for "the message asks a question" (the understand call's ``asks``)."""
"""The submit tool's property for a repair intent (``cancel``, ``chitchat``, ``skip``): the message
does that instead of answering the step. Field names never start with an underscore."""
EXTRACT_RECENT = 4
"""An extraction sees the last four messages: the question being answered and its answer (the
tool's description also quotes the latest message), not the whole window."""
EXTRACT_ORDERS = (
    "You read values from the customer's messages for a flow engine; you never reply to the customer. "
    "Call the submit tool with the values the customer gave; null for anything not given."
)


def submit_tool_name(node_id: str) -> str:
    """``submit_<slug>_data``: lower case, runs of non-alphanumerics to ``_``."""
    slug = re.sub(r"[^a-z0-9]+", "_", node_id.lower()).strip("_")
    return f"submit_{slug}_data"


@lru_cache(maxsize=1024)
def _adapter(schema: type[BaseModel], name: str) -> TypeAdapter[Any]:
    info = schema.model_fields[name]
    annotation: Any = info.annotation
    if info.metadata:
        annotation = Annotated[(annotation, *info.metadata)]  # keep constraints (min_length, ...)
    return TypeAdapter(annotation)


def validate_value(ts: TurnState, node: Collect, name: str, value: Any) -> tuple[bool, Any, str | None, str | None]:
    """Validate one value for a field of ``node``: ``(ok, value, code, detail)``."""
    if node.schema is not None and name in node.schema.model_fields:
        try:
            return True, _adapter(node.schema, name).validate_python(value), None, None
        except ValidationError as exc:
            return False, None, "bad-value", f"{name}: {exc.errors()[0]['msg']}"
    field = ts.agent.fields.get(name)
    if field is None:
        return False, None, "unknown-field", name
    result = coerce(name, field, value)
    return result.ok, result.value, result.code, result.detail


def collect_field_schema(ts: TurnState, node: Collect, name: str) -> dict[str, Any]:
    """The nullable JSON Schema of one field, for the model."""
    if node.schema is not None and name in node.schema.model_fields:
        prop = dict(_json_schema(node.schema)["properties"].get(name, {}))
        prop.pop("title", None)
        return dated(ts, {"anyOf": [prop, {"type": "null"}], **({"description": prop["description"]}
                                                                if "description" in prop else {})})
    return dated(ts, ts.agent.fields[name].wire_schema())


_DATES = frozenset({"date", "date-time"})


def dated(ts: TurnState, schema: dict[str, Any]) -> dict[str, Any]:
    """A date field's schema, saying what day today is: a model cannot read "next Friday" or
    "tomorrow" as a date without it (any other schema as it is)."""
    if schema.get("format") not in _DATES and not any(
            isinstance(option, dict) and option.get("format") in _DATES for option in schema.get("anyOf", ())):
        return schema
    note = f"today is {ts.today}"
    described = schema.get("description")
    return {**schema, "description": f"{described} ({note})" if described else f"A date; {note}"}


@lru_cache(maxsize=256)
def _json_schema_cached(schema: type[BaseModel]) -> dict[str, Any]:
    return schema.model_json_schema()


def _json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    return _json_schema_cached(schema)


def passes_verbatim_guard(value: Any, text: str) -> bool:
    """The never-guess guard: a string must occur in the user's text (case-insensitive), a number
    must be among its numbers; booleans pass; a blank text disables the guard."""
    if not text.strip() or isinstance(value, bool):
        return True
    if isinstance(value, int | float):
        numbers = {float(n.replace(",", ".")) for n in _NUMBER.findall(text)}
        return float(value) in numbers
    if isinstance(value, str):
        return value.strip().lower() in text.lower()
    return False


async def extract_values(ts: TurnState, run: Run, node: Collect, names: list[str],
                         still_needed: list[str] | None = None, *, correctable: Sequence[str] = (),
                         intents: Sequence[str] = (), asks: bool = False) -> dict[str, Any]:
    """One non-speaking ``extract`` call for ``names`` (and ``correctable``: fields collected
    before that the customer may correct); returns the raw submitted values (nulls and blanks
    dropped). Model prose is discarded. ``asks``: the call also says whether the message asks a
    question (``ASKS_KEY``), for a step that can answer it before asking its own."""
    model = ts.model(node.model, needed_for=f"collect node {node.id!r}")
    tool_name = submit_tool_name(node.id)
    fixable = [name for name in correctable if name not in names]
    properties = {name: collect_field_schema(ts, node, name) for name in [*names, *fixable]}
    if intents:  # the one call before Speak also reports a repair intent (no understand call this turn)
        properties[INTENT_KEY] = {"type": ["string", "null"], "enum": [*intents, None]}
    if asks:
        properties[ASKS_KEY] = {"type": ["boolean", "null"]}
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    defs = _json_schema(node.schema).get("$defs") if node.schema is not None else None
    if defs:
        parameters["$defs"] = defs
    quoted = "\n".join(f"> {line}" for line in ts.message_text.splitlines() or [""])
    needed = still_needed if still_needed else names
    description = (f"Submit the data collected for step {node.id!r}. Still needed: {', '.join(needed)}. "
                   "Only submit values explicitly provided by the user; use null for anything not given.\n"
                   f"{correction_note(ts, fixable)}{_intent_note(intents)}{_ASKS_NOTE if asks else ''}"
                   f"The user's latest message:\n{quoted}")
    steer = node.instructions
    if callable(steer):
        steer = steer(names, ts.state_view(run))
    elif steer is not None:
        steer = ts.render(steer, run, where="instructions")
    request = ModelRequest(
        call="extract", system=f"{identity(ts)}\n\n{EXTRACT_ORDERS}",  # stable: a prompt cache's prefix
        instructions=(steer or "Extract the requested fields from the conversation. Do not reply to the user."),
        messages=tuple(ts.history(run, recent=EXTRACT_RECENT)),
        tools=(ToolSpec(tool_name, description, parameters),),
        tool_choice="required",
        tier=node.model or "default",
    )
    response = await ts.call(model, request)
    submitted: Mapping[str, Any] | None = None
    for call in response.tool_calls:
        if call.name == tool_name:
            submitted = call.arguments
    if submitted is None:
        data = response.data
        if data is None and response.text.strip():
            try:
                data = extract_json(response.text)
            except ReplyParseError:
                data = None
        submitted = data if isinstance(data, Mapping) else {}
        if not submitted:
            ts.log("warn", f"extraction for {node.id!r} returned no usable data")
    typed = frozenset(node.schema.model_fields) if node.schema is not None else frozenset()
    values = coerce_field_values(ts, submitted, skip=typed)
    kept, dropped = check_reply(values, parameters, entry_depth=1)  # held to the tool schema that was sent
    report_dropped(ts, "extract", dropped, run=run, fields_sections=("$",))
    accepted: Mapping[str, Any] = kept if isinstance(kept, Mapping) else {}
    return {k: v for k, v in accepted.items() if k in properties and v is not None and v != ""}


_ASKS_NOTE = f"{ASKS_KEY}: true when the latest message asks a question that needs an answer.\n"


def _intent_note(intents: Sequence[str]) -> str:
    if not intents:
        return ""
    return (f"{INTENT_KEY}: {', '.join(intents)} when the latest message does that instead of answering "
            "(cancel: stops the task; chitchat: small talk only; skip: cannot answer); null otherwise.\n")


def correction_note(ts: TurnState, names: list[str]) -> str:
    """What a call that offers fields collected before says about them (empty when none)."""
    if not names:
        return ""
    now = ", ".join(f"{name} (now {ts.session.data.get(name)!r})" for name in names)
    return (f"The customer may also correct a value they gave before: {now}. Give a new value only when "
            "the latest message changes it.\n")
