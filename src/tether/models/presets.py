"""Provider presets (where a provider lives, which wire format, which key) and the built-in models."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tether.models.types import Capabilities

__all__ = ["BUILTIN_MODELS", "BUILTIN_PRESETS", "ProviderPreset"]


@dataclass(frozen=True)
class ProviderPreset:
    """How to reach a provider: which adapter (wire format), where, and which key.

    ``base_url`` is the default endpoint (``None``: the SDK's own); ``base_url_env`` are
    environment variables that override it; ``base_url_required`` fails when none is found.
    ``api_key_env`` are the key's environment variables; ``key_required`` fails without one (else a
    placeholder key is sent).
    """

    name: str
    adapter: Literal["openai", "anthropic"] = "openai"
    base_url: str | None = None
    base_url_env: tuple[str, ...] = ()
    base_url_required: bool = False
    api_key_env: tuple[str, ...] = ()
    key_required: bool = False
    capabilities: Capabilities = field(default_factory=Capabilities)


_OPENAI_CAPS = Capabilities(prompt_caching=True)
BUILTIN_PRESETS = (
    ProviderPreset(
        "openai", "openai", api_key_env=("OPENAI_API_KEY",), key_required=True, capabilities=_OPENAI_CAPS
    ),
    ProviderPreset(
        "anthropic",
        "anthropic",
        api_key_env=("ANTHROPIC_API_KEY",),
        key_required=True,
        capabilities=Capabilities(prompt_caching=True),
    ),
    ProviderPreset("ollama", base_url="http://localhost:11434/v1", base_url_env=("OLLAMA_BASE_URL",)),
    ProviderPreset(
        "openrouter",
        base_url="https://openrouter.ai/api/v1",
        base_url_env=("OPENROUTER_BASE_URL",),
        api_key_env=("OPENROUTER_API_KEY",),
        key_required=True,
    ),
    ProviderPreset(
        "vllm",
        base_url="http://localhost:8000/v1",
        base_url_env=("TETHER_BASE_URL", "VLLM_BASE_URL"),
        api_key_env=("TETHER_API_KEY", "VLLM_API_KEY"),
    ),
    ProviderPreset(
        "lmstudio",
        base_url="http://localhost:1234/v1",
        base_url_env=("TETHER_BASE_URL", "LMSTUDIO_BASE_URL"),
        api_key_env=("TETHER_API_KEY",),
    ),
    ProviderPreset(
        "openai-compatible",
        base_url_env=("TETHER_BASE_URL",),
        base_url_required=True,
        api_key_env=("TETHER_API_KEY",),
        capabilities=Capabilities(native_json_schema=False),
    ),
)
BUILTIN_MODELS = (
    "openai:gpt-4o",
    "openai:gpt-4o-mini",
    "openai:gpt-4.1",
    "openai:gpt-4.1-mini",
    "openai:gpt-4.1-nano",
    "openai:gpt-5",
    "openai:gpt-5-mini",
    "openai:gpt-5-nano",
    "openai:gpt-5.1",
    "openai:o1",
    "openai:o3",
    "openai:o3-mini",
    "openai:o4-mini",
    "anthropic:claude-sonnet-4-5",
    "anthropic:claude-haiku-4-5",
    "anthropic:claude-opus-4-1",
    "anthropic:claude-opus-4-5",
    "anthropic:claude-sonnet-4-0",
)
