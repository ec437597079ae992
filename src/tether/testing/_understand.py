"""Build an ``understand`` reply by name, for a :class:`~tether.testing.ScriptedModel`.

The understand call's JSON envelope is built per turn: flows to score, mentions, the asking node's
``when`` branches, session-wide fields, and the fields of the step being answered (under aliases
``c1``, ``c2``... that depend on what is open). ``understood(...)`` takes what a model would have
judged, by flow id, field name and branch text, and fills in the envelope the request actually
sent, with ``null`` for everything not given. Naming something the request does not ask about
fails the test, so a script also checks what the engine asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from tether.models.types import ModelRequest

__all__ = ["understood"]

_ALIASED = re.compile(r"^- (\w+): (.*)$", re.MULTILINE)
_FLOW_ALIAS = re.compile(r"^- (f\d+): flow (.+)$", re.MULTILINE)


def understood(
    *,
    flows: Mapping[str, float] | None = None,
    values: Mapping[str, Any] | None = None,
    branches: Mapping[str, bool] | None = None,
    mentions: Mapping[str, bool] | None = None,
    asks: bool | None = None,
    intent: str | None = None,
    summary: str | None = None,
) -> Callable[[ModelRequest], dict[str, Any]]:
    """A scripted ``understand`` reply.

    Args:
        flows: a 0-100 score per flow id.
        values: field values by name, wherever the request asks for them (the session-wide
            ``fields`` section or the ``collect`` section of the step being answered).
        branches: ``True``/``False`` per branch, by its ``when`` text (or its ``q1``... alias).
        mentions: ``True``/``False`` per ``on_mention`` flow id.
        asks: whether the message asks a question (only when the request asks that).
        intent: a repair intent (``cancel``, ``chitchat``, ``completed``, ``skip``), when the
            request lists it.
        summary: the window's summary, when the request carries one (its ``summary`` section:
            the window folds at the end of the turn); left out, the section is null and the window
            folds with a ``summary`` call of its own once it cannot wait.

    >>> model = ScriptedModel(understand=[understood(flows={"orders": 90}, values={"order_number": "A-1"})])
    """

    def reply(request: ModelRequest) -> dict[str, Any]:
        if request.response_format is None:
            raise AssertionError("understood(...) answers an understand call; this request has no JSON schema")
        offered: dict[str, Any] = request.response_format.schema.get("properties", {})
        envelope: dict[str, Any] = {name: _blank(spec, nested=name == "collect") for name, spec in offered.items()}
        text = f"{request.system}\n{request.instructions}"  # an alias is explained in one or the other
        lines = dict(_ALIASED.findall(text))

        def put(section: str, key: str, value: Any, what: str) -> None:
            if key not in (envelope.get(section) or {}):
                asked = {name: sorted(part) if isinstance(part, dict) else part for name, part in envelope.items()}
                raise AssertionError(f"the understand request does not ask about {what}; it asks: {asked}")
            envelope[section][key] = value

        flow_aliases = {flow: alias for alias, flow in _FLOW_ALIAS.findall(text)}
        for flow, score in (flows or {}).items():
            put("flows", flow_aliases.get(flow, flow), score, f"flow {flow!r}")
        for flow, said in (mentions or {}).items():
            put("mentions", flow, said, f"a mention of flow {flow!r}")
        for text, holds in (branches or {}).items():
            alias = text if text in (envelope.get("branches") or {}) else \
                next((a for a, line in lines.items() if line == text), text)
            put("branches", alias, holds, f"the branch {text!r}")
        for name, value in (values or {}).items():
            steps = [alias for alias, part in (envelope.get("collect") or {}).items()
                     if name in offered["collect"]["properties"][alias].get("properties", {})]
            if steps:
                for alias in steps:
                    envelope["collect"][alias][name] = value
            else:
                put("fields", name, value, f"field {name!r}")
        if asks is not None:
            if "asks" not in envelope:
                raise AssertionError("the understand request does not ask whether the message asks a question")
            envelope["asks"] = asks
        if intent is not None:
            listed = (offered.get("intent") or {}).get("enum") or []
            if intent not in listed:
                raise AssertionError(f"the understand request does not list the intent {intent!r} (it lists: {listed})")
            envelope["intent"] = intent
        if summary is not None:
            if "summary" not in envelope:
                raise AssertionError("the understand request does not carry the window's summary")
            envelope["summary"] = summary
        return envelope

    return reply


def _blank(spec: Mapping[str, Any], *, nested: bool) -> Any:
    """Every key a section's schema requires, null (a ``collect`` section holds one object per step)."""
    if "properties" not in spec:
        return None
    return {key: _blank(part, nested=False) if nested else None for key, part in spec["properties"].items()}
