"""What a suspended action sees when it resumes: an approval decision, or a signal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["APPROVED", "REJECTED", "ApprovalDecision", "SignalResult", "normalize_decision"]

APPROVED = "approved"
REJECTED = "rejected"


def normalize_decision(decision: bool | str) -> str:
    """``True``/``"approved"``/``"approve"`` -> ``approved``; ``False``/``"rejected"``/``"reject"``
    -> ``rejected``; anything else raises ``ValueError`` naming it."""
    if decision is True or decision in ("approved", "approve"):
        return APPROVED
    if decision is False or decision in ("rejected", "reject"):
        return REJECTED
    raise ValueError(f"an approval decision is 'approved' or 'rejected' (or a bool), not {decision!r}")


@dataclass(frozen=True)
class ApprovalDecision:
    """A human's decision on ``ctx.approve(...)``. A rejection is a decision, not an exception.

    Attributes:
        approval_id: the id the approver answered (``runtime.approve(session, approval_id, ...)``).
        decision: ``approved`` or ``rejected``.
        feedback: what the approver wrote, if anything.
        decided_by: who decided, if the host said.
        summary: the frozen summary the approver was shown.
        payload: the frozen payload the approver was shown.
    """

    approval_id: str
    decision: str
    feedback: str | None = None
    decided_by: str | None = None
    summary: str = ""
    payload: Any = None

    @property
    def approved(self) -> bool:
        return self.decision == APPROVED


@dataclass(frozen=True)
class SignalResult:
    """What ``ctx.signal(name, timeout=...)`` returns: the signal's payload, or a timeout.

    Attributes:
        name: the signal waited for.
        payload: what ``runtime.signal(...)`` sent (None on a timeout).
        signal_id: the id the signal was sent with (None on a timeout).
        timed_out: True when the timeout's wake came first.
    """

    name: str
    payload: Any = None
    signal_id: str | None = None
    timed_out: bool = False
