"""``ApiError`` and the JSON error bodies of the HTTP API.

Every error answer is ``{"success": false, "code": ..., "message": ...}`` with a stable code;
the status carries the HTTP meaning (400 bad body, 401 no or bad key, 403 another tenant's
session, 404 unknown route/agent/session, 405, 413 body too large, 422 invalid body, 500 a bug).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

__all__ = ["ApiError", "error_response"]


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
