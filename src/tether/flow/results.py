"""What an action may return besides a transition (seed 003's ``do`` results)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ActionResult", "ReplyTurn", "defer", "failed", "ok", "skipped"]


@dataclass(frozen=True)
class ActionResult:
    """``ok`` continues (``spoke`` makes this run the one that answered), ``skipped`` continues
    with ``action-skipped``, ``failed`` takes ``on_fail`` (or continues) with ``action-failed``,
    ``defer`` parks the run and re-runs the same step under the same key after ``duration``."""

    status: Literal["ok", "skipped", "failed", "defer"]
    detail: str | None = None
    spoke: bool = False
    duration: str | None = None


def ok(detail: str | None = None, *, spoke: bool = False) -> ActionResult:
    return ActionResult("ok", detail, spoke)


def skipped(reason: str) -> ActionResult:
    return ActionResult("skipped", reason)


def failed(reason: str) -> ActionResult:
    return ActionResult("failed", reason)


def defer(duration: str, detail: str | None = None) -> ActionResult:
    return ActionResult("defer", detail, duration=duration)


@dataclass(frozen=True)
class ReplyTurn:
    """What a reply node said, as ``next(turn, state)`` sees it.

    ``rendered`` is ``engine`` for an authored response, ``model`` for a spoken one; ``data``
    holds the envelope's extracted values; ``tool_results`` the tools the model called.
    """

    text: str
    rendered: Literal["engine", "model"]
    data: dict[str, Any]
    tool_results: tuple[Any, ...] = ()
    interrupted: bool = False
