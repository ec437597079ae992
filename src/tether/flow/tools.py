"""Tools: functions an action (``ctx.tool``) or the model (in a reply) may call.

A tool has a name, a description and a pydantic input model built from its signature; calls are
validated against the model before the function runs, and the JSON Schema of the model is what
the language model sees.

    @tool
    async def book_shipment(address: str) -> dict:
        '''Book a shipment to the given address.'''
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from tether.errors import ToolError

__all__ = ["IDEMPOTENCY_PARAMETER", "InDoubtPolicy", "Tool", "ToolResult", "tool"]

InDoubtPolicy = Literal["retry", "fail", "ask"]
"""What ``ctx.tool`` does with a call that started but has no recorded result after a crash:
``retry`` it with the same idempotency key (default), ``fail`` the effect, or ``ask`` a human."""

IDEMPOTENCY_PARAMETER = "idempotency_key"
"""A tool function with a parameter of this name receives the effect's stable idempotency key
(``ctx.tool`` calls only); it is not part of the tool's input schema."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool may return instead of a bare value: the ``value`` the caller sees, and a
    ``data`` patch of session fields written as given."""

    value: Any = None
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Tool:
    """A callable tool with a validated input model."""

    name: str
    description: str
    fn: Callable[..., Any]
    input_model: type[BaseModel]
    in_doubt: InDoubtPolicy = "retry"

    @functools.cached_property
    def _takes_key(self) -> bool:
        """True when the function takes ``idempotency_key`` (read once: a signature is costly)."""
        return IDEMPOTENCY_PARAMETER in inspect.signature(self.fn).parameters

    @property
    def parameters(self) -> dict[str, Any]:
        """The input model's JSON Schema (what the language model sees)."""
        schema = self.input_model.model_json_schema()
        schema.pop("title", None)
        return schema

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate ``arguments``; returns them coerced. Raises ToolError naming the tool."""
        try:
            model = self.input_model.model_validate(dict(arguments))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '<args>'}: {err['msg']}" for err in exc.errors()
            )
            raise ToolError(f"tool {self.name!r}: invalid arguments: {problems}") from None
        return {name: getattr(model, name) for name in type(model).model_fields}

    async def call(self, arguments: Mapping[str, Any], *, idempotency_key: str | None = None) -> Any:
        """Validate and run the tool (sync or async); a function that takes ``idempotency_key``
        receives ``idempotency_key``."""
        values = self.validate(arguments)
        if self._takes_key:
            values[IDEMPOTENCY_PARAMETER] = idempotency_key
        result = self.fn(**values)
        if inspect.isawaitable(result):
            result = await result
        return result


def _input_model(fn: Callable[..., Any], name: str) -> type[BaseModel]:
    signature = inspect.signature(fn)
    try:
        hints = get_type_hints(fn)
    except Exception:  # unresolved forward references: fall back to Any
        hints = {}
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {name!r}: *args/**kwargs parameters are not supported")
        if param.name == IDEMPOTENCY_PARAMETER:
            continue  # supplied by ctx.tool, never by the caller or the model
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    model_name = "".join(part.capitalize() for part in name.split("_")) + "Input"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(*, name: str | None = None, description: str | None = None,
         in_doubt: InDoubtPolicy = "retry") -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None, /, *, name: str | None = None, description: str | None = None,
    in_doubt: InDoubtPolicy = "retry",
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a :class:`Tool` from a function (its docstring is the description).

    ``in_doubt`` is the tool's policy for a call found started with no result after a crash
    (see :data:`InDoubtPolicy`); ``retry`` is safe for a tool that honours its idempotency key.
    """
    if in_doubt not in ("retry", "fail", "ask"):
        raise ValueError(f"tool in_doubt must be 'retry', 'fail' or 'ask', not {in_doubt!r}")

    def build(func: Callable[..., Any]) -> Tool:
        tool_name = name or func.__name__
        doc = description or inspect.getdoc(func) or ""
        return Tool(name=tool_name, description=doc.strip(), fn=func, input_model=_input_model(func, tool_name),
                    in_doubt=in_doubt)

    return build(fn) if fn is not None else build
