"""A model double that answers only what each call offered, from what the current message "says".

A scripted reply can name any key; a real model fills the schema it was sent. ``Reader`` does the
latter: a test sets ``reader.says`` before each message (field values, flow scores, which branch
statements are true, whether the message asks a question) and every understand, speak, extract
or decide call gets an envelope with exactly the offered keys, the unknown ones null. So a field
the engine forgot to offer stays unread, as it would with a real model.
"""

from __future__ import annotations

import re
from typing import Any

from tether.models.types import ModelRequest
from tether.testing import FunctionModel

_ALIAS_LINE = re.compile(r"^- (q\d+): (.*)$", re.MULTILINE)


class Reader:
    """``says`` keys: ``flows`` (flow id -> score), ``mentions`` (flow id -> bool), ``true``
    (branch statements that hold), ``asks`` (bool), and any field name -> its value."""

    def __init__(self) -> None:
        self.says: dict[str, Any] = {}
        self.model = FunctionModel(self._answer)

    @property
    def calls(self) -> list[str]:
        return [c.call for c in self.model.calls]

    def offered(self, call: str, section: str, index: int = -1) -> list[str]:
        """The keys one section of a call's envelope offered (the last such call by default)."""
        requests = [c.request for c in self.model.calls if c.call == call]
        fmt = requests[index].response_format
        assert fmt is not None
        part = fmt.schema["properties"].get(section)
        return list(part["properties"]) if isinstance(part, dict) and "properties" in part else []

    def _answer(self, request: ModelRequest) -> Any:
        if request.call == "extract":
            params = request.tools[0].parameters.get("properties", {})
            return {name: self.says.get(name) for name in params}
        schema = request.response_format.schema if request.response_format is not None else {}
        props: dict[str, Any] = schema.get("properties", {})
        if request.call == "understand":
            return self._understand(request, props)
        if request.call == "speak":
            reply: dict[str, Any] = {"message": self.says.get("message") or _task(request)}
            reply.update({name: self.says.get(name) for name in props if name != "message"})
            return reply
        return {name: self.says.get(name) for name in props}

    def _understand(self, request: ModelRequest, props: dict[str, Any]) -> dict[str, Any]:
        statements = dict(_ALIAS_LINE.findall(request.instructions))
        reply: dict[str, Any] = {}
        for section, part in props.items():
            keys = list(part.get("properties", {}))
            if section == "flows":
                reply[section] = {k: self.says.get("flows", {}).get(k, 0) for k in keys}
            elif section == "mentions":
                reply[section] = {k: self.says.get("mentions", {}).get(k, False) for k in keys}
            elif section == "branches":
                reply[section] = {k: statements.get(k) in self.says.get("true", ()) for k in keys}
            elif section == "fields":
                reply[section] = {k: self.says.get(k) for k in keys}
            elif section == "collect":
                reply[section] = {k: {n: self.says.get(n) for n in part["properties"][k]["properties"]}
                                  for k in keys}
            elif section == "extract":
                reply[section] = {k: {n: None for n in part["properties"][k]["properties"]} for k in keys}
            elif section == "asks":
                reply[section] = bool(self.says.get("asks", False))
        return reply


def _task(request: ModelRequest) -> str:
    """A recognisable reply: the step's task line from the speak prompt."""
    found = re.search(r"^Your task now: (.*)$", request.instructions, re.MULTILINE)
    return found.group(1) if found else "OK."
