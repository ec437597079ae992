"""``ApiError`` and the JSON error bodies of the HTTP API.

Every error answer is ``{"success": false, "code": ..., "message": ...}`` with a stable code;
the status carries the HTTP meaning (400 bad body, 401 no or bad key, 403 another tenant's
session, 404 unknown route/agent/session, 405, 413 body too large, 422 invalid body, 500 a bug).
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse

from tether.errors import StoreError
from tether.runtime.envelope import RunResponse

__all__ = ["ApiError", "error_answer", "error_response", "status_of", "status_of_code"]

log = logging.getLogger("tether.server")



class ApiError(Exception):
    """An HTTP error with a stable ``code``; the app turns it into a JSON answer."""

    def __init__(self, status: int, code: str, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details


def error_response(error: ApiError, headers: dict[str, str] | None = None) -> JSONResponse:
    """The JSON answer of ``error``."""
    body: dict[str, Any] = {"success": False, "code": error.code, "message": error.message}
    if error.details is not None:
        body["details"] = error.details
    return JSONResponse(body, status_code=error.status, headers=headers)


def error_answer(exc: Exception, method: str, path: str) -> JSONResponse:
    """The answer of a route that raised ``exc``: an ``ApiError`` as itself (a 401 with
    ``WWW-Authenticate: Bearer``), a client that left mid-body 400 ``client-disconnected``, a store
    that failed the route's own read by its code (:func:`status_of_code`), anything else logged and
    500 ``internal-error`` (a bug)."""
    if isinstance(exc, ApiError):
        return error_response(exc, {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None)
    if isinstance(exc, ClientDisconnect):  # nothing ran, and it is no bug of ours
        log.info("%s %s: the client disconnected before its body was read", method, path)
        return error_response(ApiError(400, "client-disconnected", "the client disconnected mid-body"))
    if isinstance(exc, StoreError):  # the store failed a route's own read (its session): not a bug
        return error_response(ApiError(status_of_code(exc.code), exc.code, exc.message))
    log.error("%s %s failed", method, path, exc_info=exc)
    return error_response(ApiError(500, "internal-error", "the server failed; this is a bug"))


_STATUS = {
    "invalid-input": 422,
    "invalid-request": 422,
    "SESSION_CONFLICT": 409,
    "SESSION_FLOW_MISMATCH": 409,
    "flow-drift": 409,  # a deploy changed the run's flow so that it cannot go on: nothing saved, not a bug
    "SESSION_STORE_ERROR": 503,
    "SESSION_LEASE_TIMEOUT": 503,
    "model-configuration": 503,
}


def status_of(response: RunResponse) -> int:
    """The HTTP status of an envelope: 200 on success; a failure by its code (see :func:`status_of_code`)."""
    return 200 if response.success else status_of_code(response.code or "")


def status_of_code(code: str) -> int:
    """The HTTP status of a failure's code: a store that failed is 503, a provider failure 502, an
    unexpected turn failure (a bug that saved nothing) 500."""
    if code in _STATUS:
        return _STATUS[code]
    return 502 if code.startswith("model-") else 500
