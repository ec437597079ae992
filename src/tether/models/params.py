"""Strict parameter schemas of the cataloged models (unknown keys are errors, types are strict).

``max_tokens`` is a positive int, ``max_retries`` a non-negative int (retries of tether's own retry
wrapper: ``max_retries=2`` means 3 attempts), ``timeout`` a positive number of seconds.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AnthropicParams", "CatalogParams", "OpenAIChatParams", "OpenAIReasoningParams"]


class CatalogParams(BaseModel):
    """Base of the catalog's parameter schemas: strict, no unknown keys, the common controls."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    max_tokens: int | None = Field(default=None, gt=0)
    timeout: float | None = Field(default=None, gt=0)
    max_retries: int | None = Field(default=None, ge=0)


class OpenAIChatParams(CatalogParams):
    """``openai:gpt-4o``, ``openai:gpt-4o-mini``, ``openai:gpt-4.1``...: sampling models."""

    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    seed: int | None = None


class OpenAIReasoningParams(CatalogParams):
    """``openai:gpt-5``, ``openai:gpt-5.1``, ``openai:o3``...: reasoning models (no temperature)."""

    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None


class AnthropicParams(CatalogParams):
    """``anthropic:claude-*`` models."""

    temperature: float | None = Field(default=None, ge=0, le=1)
    top_p: float | None = Field(default=None, ge=0, le=1)
    top_k: int | None = Field(default=None, gt=0)
    stop_sequences: list[str] | None = None
