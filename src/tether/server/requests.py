"""Reading requests: the body under a size limit, parsed into a pydantic model, query integers and
page cursors."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from tether.server.problems import ApiError

__all__ = ["DEFAULT_MAX_BODY", "body_too_large", "next_cursor", "page_cursor", "parse_body", "query_int",
           "read_body"]

DEFAULT_MAX_BODY = 1_000_000
"""The default request body limit in bytes."""

M = TypeVar("M", bound=BaseModel)


async def read_body(request: Request, model: type[M], *, limit: int, optional: bool = False) -> M:
    """The JSON body as ``model``: 413 ``body-too-large`` past ``limit`` bytes (checked while it
    streams in), 400 ``invalid-json`` (a body nested too deeply to parse included), 422
    ``invalid-body`` naming each bad field. An empty body is ``model()`` when ``optional``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise body_too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise body_too_large(limit)
        chunks.append(chunk)
    return parse_body(b"".join(chunks), model, optional=optional)


def body_too_large(limit: int) -> ApiError:
    """413 ``body-too-large``: the body is over ``limit`` bytes."""
    return ApiError(413, "body-too-large", f"the request body is over {limit} bytes")


def parse_body(raw: bytes, model: type[M], *, optional: bool = False) -> M:
    """A body read whole as ``model``, with :func:`read_body`'s errors (400 ``invalid-json``, 422
    ``invalid-body``; an empty body is ``model()`` when ``optional``)."""
    if not raw.strip():
        if optional:
            return model()
        raise ApiError(422, "invalid-body", "a JSON body is required")
    try:
        value: Any = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, "invalid-json", f"the body is not valid JSON: {exc}") from None
    except RecursionError:  # the parser recurses once per level of nesting
        raise ApiError(400, "invalid-json", "the body is nested too deeply to parse") from None
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        problems = [{"field": ".".join(str(p) for p in err["loc"]) or "(body)", "problem": err["msg"]}
                    for err in exc.errors(include_url=False, include_input=False)]
        where = ", ".join(f"{p['field']}: {p['problem']}" for p in problems)
        raise ApiError(422, "invalid-body", f"invalid body: {where}", details=problems) from None


def query_int(request: Request, name: str, default: int, *, low: int = 0, high: int = 1_000_000) -> int:
    """The integer query parameter ``name`` in ``[low, high]``; 422 ``invalid-query`` otherwise."""
    text = request.query_params.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ApiError(422, "invalid-query", f"query parameter {name!r} must be an integer") from None
    if not low <= value <= high:
        raise ApiError(422, "invalid-query", f"query parameter {name!r} must be between {low} and {high}")
    return value


def page_cursor(request: Request, *, at: str, item: str) -> tuple[datetime, str] | None:
    """The ``after`` query parameter of a list route: a page's ``next`` (``<at>|<item>``, a time
    with its zone and an id), as a sort key; None when absent, 422 ``invalid-query`` (naming the
    form with ``at`` and ``item``) when malformed."""
    text = request.query_params.get("after")
    if text is None:
        return None
    when, sep, key = text.partition("|")
    try:  # a "+" the client left unescaped arrives as a space
        moment: datetime | None = datetime.fromisoformat(when.replace(" ", "+"))
    except ValueError:
        moment = None
    if not sep or not key or moment is None or moment.tzinfo is None:
        raise ApiError(422, "invalid-query", f"query parameter 'after' must be the 'next' of a page (<{at}>|<{item}>)")
    return moment, key


def next_cursor(key: tuple[datetime, str] | None) -> str | None:
    """A page's ``next`` (what :func:`page_cursor` reads), or None: the last page."""
    return f"{key[0].isoformat()}|{key[1]}" if key is not None else None
