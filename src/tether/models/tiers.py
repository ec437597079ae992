"""Model tiers: ``default``, ``small`` (cheap, fast) and ``deep`` (strong, slow).

An undeclared ``small`` or ``deep`` tier is an error rather than a silent substitution: an explicit
cost or quality request is never served by a different model. An absent ``default`` is ``None``
(the engine reports "no model configured" when a call needs one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from tether.errors import ModelConfigurationError
from tether.models.catalog import ModelSelection, resolve_model, validate_selection
from tether.models.types import Model

__all__ = ["TIER_NAMES", "ModelTiers", "TierName"]

TierName = Literal["default", "small", "deep"]
TIER_NAMES: tuple[str, ...] = ("default", "small", "deep")
TierValue = str | ModelSelection | Model


@dataclass(frozen=True)
class ModelTiers:
    """The configured tiers; each is a ``provider:model`` string, a :class:`ModelSelection` or a
    :class:`~tether.models.types.Model`. String selections are validated on construction (pure)."""

    default: TierValue | None = None
    small: TierValue | None = None
    deep: TierValue | None = None

    def __post_init__(self) -> None:
        for tier in TIER_NAMES:
            value = getattr(self, tier)
            if isinstance(value, str):
                try:
                    validate_selection(value)
                except ModelConfigurationError as exc:
                    raise ModelConfigurationError(f"tier {tier!r}: {exc}") from None

    def get(self, tier: str) -> TierValue | None:
        """The configured value of ``tier``: ``None`` for an absent default; an undeclared
        ``small``/``deep`` (or an unknown tier name) raises :class:`ModelConfigurationError`."""
        if tier not in TIER_NAMES:
            raise ModelConfigurationError(f"unknown model tier {tier!r} (tiers: {', '.join(TIER_NAMES)})")
        value: TierValue | None = getattr(self, tier)
        if value is None and tier != "default":
            raise ModelConfigurationError(f"tier {tier!r} is not configured")
        return value

    def resolve(self, tier: str, **options: Any) -> Model | None:
        """The model of ``tier`` (see :meth:`get`), resolved with :func:`resolve_model`."""
        value = self.get(tier)
        return None if value is None else resolve_model(value, **options)
