"""Pieces shared by the SDK adapters: lazy SDK import, the JSON-in-prompt fallback, parameters."""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Mapping
from typing import Any, NoReturn

from tether.errors import ModelConfigurationError, ModelError
from tether.json_schemas import subschemas, without
from tether.models._errors import map_sdk_error, scrub
from tether.models.parsing import ReplyParseError, extract_json
from tether.models.types import ResponseFormat, ToolCall

__all__ = [
    "CONTROL_PARAMS",
    "EXACT_OBJECTS",
    "import_sdk",
    "parse_data",
    "parse_tool_arguments",
    "prompt_schema",
    "raise_mapped",
    "schema_instructions",
    "split_params",
]

# Parameters that steer the call rather than the model: never sent as model parameters.
CONTROL_PARAMS = ("timeout", "max_retries")


def import_sdk(module: str, extra: str) -> Any:
    """Import a vendor SDK on first use, or raise :class:`ModelConfigurationError` with the hint."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModelConfigurationError(
            f"The {module!r} package is needed for this model: pip install 'tether[{extra}]'"
        ) from exc


EXACT_OBJECTS = 'Every "properties" in this schema describes an object with exactly those keys, each one required.'
"""Said once before a schema whose objects were shortened by :func:`prompt_schema`."""


def _all_exact(node: Mapping[str, Any]) -> bool:
    """Every object with ``properties`` in ``node`` requires each key it lists and allows no other."""
    props = node.get("properties")
    if props is not None:
        required = node.get("required")
        if not (isinstance(props, Mapping) and node.get("additionalProperties") is False
                and node.get("type", "object") == "object" and isinstance(required, list)
                and len(required) == len(props) and set(required) == set(props)):
            return False
    return all(_all_exact(sub) for sub in subschemas(node))


def _said_once(node: Mapping[str, Any], key: str, value: Any, name: str | None) -> bool:
    """An exact object's ``type``, ``required`` and ``additionalProperties`` (said once, by
    :data:`EXACT_OBJECTS`)."""
    return "properties" in node and key in ("type", "required", "additionalProperties")


def prompt_schema(schema: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """``schema`` as a prompt shows it, and whether it was shortened. A schema whose every object
    requires each key it lists and allows no other (a strict schema, such as the engine's own
    envelopes) loses ``"type": "object"``, the ``required`` list and ``"additionalProperties":
    false`` on each of them, which :data:`EXACT_OBJECTS` then says once: the same schema in fewer
    tokens, and a step's section (the fields it offers) stays short. Any other schema is shown as
    it is."""
    if not _all_exact(schema):
        return dict(schema), False
    return without(schema, _said_once), True


def schema_instructions(response_format: ResponseFormat) -> str:
    """The prompt text that asks for JSON matching the schema (when the API cannot enforce it)."""
    # in the schema's own order (not sorted): the sections that change least come first, so the
    # text shares the longest prefix with the previous call's; compact (no spaces after separators,
    # an exact object's key lists said once): the same schema in fewer tokens
    schema, shortened = prompt_schema(response_format.schema)
    text = json.dumps(schema, separators=(",", ":"))
    return (
        (f"{EXACT_OBJECTS}\n" if shortened else "")
        + f"Reply with a single JSON value (named {response_format.name!r}) that matches this JSON Schema, "
        f"and nothing else:\n{text}"
    )


def parse_data(text: str, provider: str) -> Any:
    """The structured reply parsed out of ``text``; a reply that does not parse raises
    ``ModelError(kind="invalid")`` (not retryable by default)."""
    try:
        return extract_json(text)
    except ReplyParseError as exc:
        raise ModelError(
            f"{provider}: the structured reply is not valid JSON ({exc.reason}): {exc}",
            kind="invalid",
            provider=provider,
        ) from exc


def parse_tool_arguments(call_id: str, name: str, raw: str | None, provider: str) -> ToolCall:
    """A :class:`ToolCall` from JSON-encoded arguments; arguments that are not a JSON object raise
    ``ModelError(kind="invalid")``."""
    try:
        arguments = json.loads(raw) if raw and raw.strip() else {}
    except (ValueError, RecursionError) as exc:  # a reply nested thousands deep exhausts the decoder
        raise ModelError(
            f"{provider}: arguments of tool call {name!r} are not valid JSON",
            kind="invalid",
            provider=provider,
        ) from exc
    if not isinstance(arguments, dict):
        raise ModelError(
            f"{provider}: arguments of tool call {name!r} are not a JSON object",
            kind="invalid",
            provider=provider,
        )
    return ToolCall(id=call_id, name=name, arguments=arguments)


DEFAULT_TIMEOUT = 60.0
"""Seconds one request may take when no ``timeout`` is set (the SDKs wait 600 s: with tether's
retries, a hung server would hold a customer's turn for half an hour)."""


def split_params(*layers: Mapping[str, Any]) -> tuple[dict[str, Any], float]:
    """Merge parameter layers (later wins), drop ``None`` values and control parameters; returns
    ``(model parameters, timeout)`` (:data:`DEFAULT_TIMEOUT` when none is set)."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update({k: v for k, v in layer.items() if v is not None})
    timeout = merged.get("timeout")
    for key in CONTROL_PARAMS:
        merged.pop(key, None)
    return merged, float(timeout) if timeout is not None else DEFAULT_TIMEOUT


def raise_mapped(exc: BaseException, sdk: Any, provider: str, *, secret: str | None = None) -> NoReturn:
    """Re-raise an SDK failure as :class:`ModelError`; anything else propagates unchanged.

    A ``CancelledError`` of a task that is being cancelled propagates (cancellation must work); one
    raised from inside the SDK for another reason becomes ``kind="aborted"``. ``secret`` (the API
    key) is scrubbed from the error; when the SDK's own exception text held it, that exception is
    not chained either (``from None``), so no traceback shows it.
    """
    if isinstance(exc, asyncio.CancelledError):
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise exc
        raise map_sdk_error(exc, sdk, provider, secret=secret) from exc
    base = getattr(sdk, "APIError", None)
    root = getattr(sdk, "OpenAIError", None) or getattr(sdk, "AnthropicError", None)
    if (base is not None and isinstance(exc, base)) or (root is not None and isinstance(exc, root)):
        mapped = map_sdk_error(exc, sdk, provider, secret=secret)
        original = f"{exc} {getattr(exc, 'body', None)!r}"
        if scrub(original, secret) != original:
            raise mapped from None
        raise mapped from exc
    raise exc
