"""``RunResponse``: the envelope every ``Runtime.run`` returns, success or failure."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SkipValidation

from tether.engine.core.results import TurnResult
from tether.errors import TetherError

__all__ = ["CONTENT_TYPE", "RunResponse", "describe_error", "error_code", "failure", "failure_for", "quiet_reason",
           "success"]

CONTENT_TYPE = "text/plain"
"""The content type of a failure envelope, and of a reply no agent step typed."""


class RunResponse(BaseModel):
    """The answer to one request.

    Attributes:
        success: False when the request failed (``message`` then holds the error).
        completed: on success, True when the turn ended its flow or handed the conversation off
            (no run waits for the user), or the session is no longer running; always True on a
            failure (the request is over, nothing more will come of it).
        message: the turn's text (its messages joined by a blank line) or the error message.
        session: the session id the client must use next (it can change: a missing, completed or
            aborted session, or a restore hook that resets it, gives a new id); ``""`` when no
            session is known.
        content_type: what ``message`` is: the content type of the agent step that answered
            (``application/json``, ...); ``text/plain`` otherwise, and always on a failure.
        code: the stable error code of a failure (``SESSION_CONFLICT``, ``SESSION_FLOW_MISMATCH``,
            ``SESSION_FLOW_INVARIANT``, ``agent-not-registered``, ...); on success, None or an
            informational code such as ``no-session`` (a wake found no session to wake) or
            ``error_degraded`` (a step, or a trigger's code condition, failed: the customer got the
            failure reply, the session stays usable), ``duplicate-input`` (a message resent with
            an id already answered: ``message`` is the reply its turn recorded and ``completed``
            is what the first answer said); a turn that said nothing (``message`` is
            ``""``) says why: ``handed-off`` or ``no-reply`` (see :func:`quiet_reason`).
        result: the full ``TurnResult`` of a successful turn (never serialized).
    """

    model_config = ConfigDict(frozen=True)

    success: bool
    completed: bool
    message: str
    session: str
    content_type: str = CONTENT_TYPE
    code: str | None = None
    result: SkipValidation[TurnResult | None] = Field(default=None, exclude=True, repr=False)


def success(result: TurnResult, session_id: str, *, session_running: bool = True) -> RunResponse:
    """The envelope of a turn that ran (and, when it changed anything, was saved)."""
    completed = result.status in ("ended", "handoff") or not session_running
    degraded = any(ended.reason == "error_degraded" for ended in result.ended) \
        or any(line.code == "condition-failed" for line in result.outcomes)  # a trigger's condition raised
    if degraded:
        code: str | None = "error_degraded"
    elif (resent := _resent(result)) is not None:  # the reply its turn recorded, completed as it was
        code = "duplicate-input"
        completed = completed or (result.session is not None and resent in result.session.completed_inputs)
    else:
        code = None if result.messages else quiet_reason(result)
    return RunResponse(success=True, completed=completed, message=result.text, session=session_id,
                       content_type=result.content_type, code=code, result=result)


def _resent(result: TurnResult) -> str | None:
    """The id of the message ``result`` answers as a duplicate (``duplicate-input``), or None."""
    for line in result.outcomes:
        if line.code == "duplicate-input" and line.key is not None:
            return line.key
    return None


def quiet_reason(result: TurnResult) -> str:
    """Why a turn that ran said nothing: ``handed-off`` (a person has the conversation: the bot
    stays quiet until it is released, and the person's answer comes through the session's
    transcript and stream), else ``no-reply`` (nothing answered the input and no idle speaker
    did: the agent's idle speaker is silent, the host's gate was closed, or the input was not a
    message), or ``signal-unclaimed`` (a signal no run waits for: it was not delivered, and is not
    kept for later)."""
    codes = {line.code for line in result.outcomes}
    return "handed-off" if "handed-off" in codes else "signal-unclaimed" if "signal-unclaimed" in codes \
        else "no-reply"


def failure(message: str, session_id: str | None, code: str | None) -> RunResponse:
    """A failed envelope: ``{success: False, completed: True, message, session, content_type}``."""
    return RunResponse(success=False, completed=True, message=message, session=session_id or "", code=code)


def describe_error(exc: BaseException) -> str:
    """The message a failed response carries for ``exc`` (a tether error's own message, else the
    exception's type and text)."""
    if isinstance(exc, TetherError):
        return exc.message or type(exc).__name__
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def error_code(exc: BaseException) -> str:
    """The stable code a failed response carries for ``exc`` (``turn-failed`` for a non-tether error)."""
    return exc.code if isinstance(exc, TetherError) else "turn-failed"


def failure_for(exc: BaseException, session_id: str | None) -> RunResponse:
    """A failed response for ``exc``."""
    return failure(describe_error(exc), session_id, error_code(exc))
