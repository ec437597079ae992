"""``provider:model`` names, validated against a catalog of models and provider presets.

- **Built-in providers** ``openai`` and ``anthropic`` know their models. Each cataloged model has a
  strict parameter schema (:mod:`tether.models.params`); OpenAI reasoning models (``gpt-5*``,
  ``o1``, ``o3``...) reject ``temperature`` and ``top_p``. A model of theirs that is not in the
  catalog (a newer one) is accepted with the provider's generic parameter rules and an
  :class:`UncatalogedModelWarning`; a catalog made with ``strict=True`` (or
  ``DEFAULT_CATALOG.strict = True``) rejects it until it is registered with :func:`register_model`.
- **Presets** ``ollama``, ``openrouter``, ``vllm``, ``lmstudio`` and ``openai-compatible`` speak the
  OpenAI wire format at a known (or configured) base URL and take any model name; their parameters
  pass through (shallow-copied) unless the model was registered with a schema.
- Any **other provider** passes validation the same way (so a selection can be stored before its
  adapter exists) but resolving it needs :func:`register_provider`.

:func:`validate_selection` is pure (no SDK import, no network, no environment): the runtime calls it
before any session I/O. :func:`resolve_model` builds the adapter, wrapped in
:class:`~tether.models.retry.RetryingModel`. Every error is a
:class:`~tether.errors.ModelConfigurationError`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from tether.errors import ModelConfigurationError
from tether.models.anthropic_model import AnthropicModel
from tether.models.credentials import strip_secrets
from tether.models.openai_model import OpenAIModel, is_reasoning_model
from tether.models.params import AnthropicParams, OpenAIChatParams, OpenAIReasoningParams
from tether.models.presets import BUILTIN_MODELS, BUILTIN_PRESETS, ProviderPreset
from tether.models.retry import DEFAULT_ATTEMPTS, RetryingModel
from tether.models.types import Capabilities, Model

__all__ = [
    "BUILTIN_PROVIDERS",
    "DEFAULT_CATALOG",
    "ModelCatalog",
    "ModelSelection",
    "ModelSpec",
    "ProviderPreset",
    "UncatalogedModelWarning",
    "default_model_from_env",
    "parse_selection",
    "register_model",
    "register_provider",
    "resolve_model",
    "validate_selection",
]

BUILTIN_PROVIDERS = ("anthropic", "openai")
_REASONING_UNSUPPORTED = ("temperature", "top_p")
GENERIC_ROUTE = "openai-compatible:<model> with TETHER_BASE_URL set to the server's /v1 URL"


class UncatalogedModelWarning(UserWarning):
    """A built-in provider's model that is not in the catalog was accepted with the provider's
    generic parameter rules (a typo in the name shows up only when the provider answers)."""


@dataclass(frozen=True)
class ModelSpec:
    """One cataloged model: its parameter schema (``None``: parameters pass through), what it can
    do, and the parameters it refuses by name."""

    provider: str
    model: str
    params: type[BaseModel] | None = None
    capabilities: Capabilities | None = None
    unsupported: tuple[str, ...] = ()

    @property
    def selection(self) -> str:
        return f"{self.provider}:{self.model}"


@dataclass(frozen=True)
class ModelSelection:
    """A validated ``provider:model`` with its parameters (validated when cataloged)."""

    provider: str
    model: str
    params: dict[str, Any] = field(default_factory=dict, hash=False)
    cataloged: bool = False

    @property
    def selection(self) -> str:
        """``provider:model``."""
        return f"{self.provider}:{self.model}"

    def as_dict(self) -> dict[str, Any]:
        """What may be stored: the name and the parameters, secrets stripped."""
        return {"model": self.selection, "params": strip_secrets(dict(self.params))}

    def __str__(self) -> str:
        return self.selection


def parse_selection(selection: str) -> tuple[str, str]:
    """Split ``provider:model`` (at the first colon: ``ollama:llama3.2:3b`` is provider ``ollama``)."""
    if not isinstance(selection, str):
        raise ModelConfigurationError(
            f"A model selection must be a 'provider:model' string, not {selection!r}."
        )
    provider, sep, model = selection.strip().partition(":")
    if not sep or not provider.strip() or not model.strip():
        raise ModelConfigurationError(f"Model selection {selection!r} is not of the form 'provider:model'.")
    return provider.strip().lower(), model.strip()


def _params_error(selection: str, schema: type[BaseModel], exc: ValidationError) -> ModelConfigurationError:
    problems: list[str] = []
    for error in exc.errors():
        name = ".".join(str(p) for p in error["loc"]) or "<params>"
        if error["type"] == "extra_forbidden":
            allowed = ", ".join(sorted(schema.model_fields))
            problems.append(f"Unknown parameter {name!r} for model {selection!r} (allowed: {allowed}).")
        else:
            problems.append(f"Invalid parameter {name!r} for model {selection!r}: {error['msg']}.")
    return ModelConfigurationError(" ".join(problems))


class ModelCatalog:
    """Cataloged models and provider presets. :data:`DEFAULT_CATALOG` is the one the module-level
    functions use; a fresh catalog (``ModelCatalog()``) starts with the same built-ins.

    ``strict``: reject a built-in provider's model that is not cataloged (default: accept it with
    the provider's generic parameter rules and an :class:`UncatalogedModelWarning`).
    """

    def __init__(self, *, strict: bool = False) -> None:
        self.strict = strict
        self._models: dict[str, ModelSpec] = {}
        self._providers: dict[str, ProviderPreset] = {}
        for preset in BUILTIN_PRESETS:
            self.register_provider(preset)
        for selection in BUILTIN_MODELS:
            self.register_model(selection)

    def register_provider(self, preset: ProviderPreset) -> ProviderPreset:
        """Add (or replace) a provider preset."""
        self._providers[preset.name.lower()] = preset
        return preset

    def provider(self, name: str) -> ProviderPreset | None:
        """The preset of a provider, if any."""
        return self._providers.get(name.lower())

    def register_model(
        self,
        selection: str,
        *,
        params: type[BaseModel] | None = None,
        capabilities: Capabilities | None = None,
        unsupported: tuple[str, ...] | None = None,
    ) -> ModelSpec:
        """Catalog a model. For ``openai`` and ``anthropic`` the parameter schema defaults to the
        provider's (reasoning or chat, by name); for other providers to pass-through."""
        provider, model = parse_selection(selection)
        reasoning = provider == "openai" and is_reasoning_model(model)
        if params is None:
            if provider == "openai":
                params = OpenAIReasoningParams if reasoning else OpenAIChatParams
            elif provider == "anthropic":
                params = AnthropicParams
        if unsupported is None:
            unsupported = _REASONING_UNSUPPORTED if reasoning else ()
        spec = ModelSpec(provider, model, params, capabilities, unsupported)
        self._models[spec.selection] = spec
        return spec

    def spec(self, selection: str) -> ModelSpec | None:
        """The cataloged spec of ``provider:model``, if any."""
        provider, model = parse_selection(selection)
        return self._models.get(f"{provider}:{model}")

    def models(self) -> list[str]:
        """Every cataloged ``provider:model``, sorted."""
        return sorted(self._models)

    def validate(self, selection: str, params: Mapping[str, Any] | None = None) -> ModelSelection:
        """Validate a selection and its parameters (pure: no SDK, no network, no environment)."""
        provider, model = parse_selection(selection)
        name = f"{provider}:{model}"
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise ModelConfigurationError(f"Parameters of model {name!r} must be a mapping, not {params!r}.")
        spec = self._models.get(name)
        cataloged = spec is not None
        if spec is None:
            if provider not in BUILTIN_PROVIDERS:
                return ModelSelection(provider, model, dict(params), cataloged=False)
            if self.strict:
                raise ModelConfigurationError(
                    f"Unknown built-in model {name!r}: the catalog is strict; register it with "
                    f"register_model({name!r}) before selecting it, or use {GENERIC_ROUTE}."
                )
            warnings.warn(
                f"Model {name!r} is not in tether's catalog; using {provider}'s generic parameter rules.",
                UncatalogedModelWarning,
                stacklevel=2,
            )
            spec = _generic_spec(provider, model)
        for key in spec.unsupported:
            if key in params:
                raise ModelConfigurationError(f"Model {name!r} does not support {key}.")
        if spec.params is None:
            return ModelSelection(provider, model, dict(params), cataloged=cataloged)
        try:
            parsed = spec.params.model_validate(dict(params))
        except ValidationError as exc:
            raise _params_error(name, spec.params, exc) from None
        return ModelSelection(provider, model, parsed.model_dump(exclude_none=True), cataloged=cataloged)

    def resolve(
        self,
        selection: str | ModelSelection | Model,
        *,
        params: Mapping[str, Any] | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        capabilities: Capabilities | None = None,
        attempts: int | None = None,
        **client_options: Any,
    ) -> Model:
        """The model for a selection: an adapter wrapped in retries. A ``Model`` passes through."""
        if isinstance(selection, ModelSelection):
            chosen = self.validate(selection.selection, {**selection.params, **(params or {})})
        elif isinstance(selection, str):
            chosen = self.validate(selection, params)
        elif isinstance(selection, Model):
            return selection
        else:
            raise ModelConfigurationError(f"Cannot resolve a model from {selection!r}.")
        preset = self._providers.get(chosen.provider)
        if preset is None:
            known = ", ".join(sorted(self._providers))
            raise ModelConfigurationError(
                f"No adapter for provider {chosen.provider!r} (known: {known}); for any "
                f"OpenAI-compatible server use {GENERIC_ROUTE}, or register one with register_provider()."
            )
        spec = self._models.get(chosen.selection)
        caps = capabilities or (spec.capabilities if spec else None) or preset.capabilities
        model_params = dict(chosen.params)
        retries = model_params.pop("max_retries", None)
        if attempts is None:
            attempts = int(retries) + 1 if retries is not None else DEFAULT_ATTEMPTS
        url = base_url or next(
            (os.environ[v] for v in preset.base_url_env if os.environ.get(v)), preset.base_url
        )
        if url is None and preset.base_url_required:
            envs = " or ".join(preset.base_url_env) or "base_url="
            raise ModelConfigurationError(
                f"Model {chosen.selection!r} needs a base URL: pass base_url= or set {envs}."
            )
        key = api_key or next((os.environ[v] for v in preset.api_key_env if os.environ.get(v)), None)
        if key is None and preset.key_required:
            envs = " or ".join(preset.api_key_env)
            raise ModelConfigurationError(
                f"No API key for {chosen.selection!r}: pass api_key= or set {envs}."
            )
        adapter: Model
        if preset.adapter == "anthropic":
            adapter = AnthropicModel(
                chosen.model,
                api_key=key,
                base_url=url,
                provider=chosen.provider,
                params=model_params,
                capabilities=caps,
                **client_options,
            )
        else:
            adapter = OpenAIModel(
                chosen.model,
                api_key=key or "not-needed",
                base_url=url,
                provider=chosen.provider,
                params=model_params,
                capabilities=caps,
                reasoning=chosen.provider == "openai" and is_reasoning_model(chosen.model),
                **client_options,
            )
        return RetryingModel(adapter, attempts)


def _generic_spec(provider: str, model: str) -> ModelSpec:
    """The parameter rules of a built-in provider's uncataloged model (reasoning or chat by name)."""
    if provider == "openai" and is_reasoning_model(model):
        return ModelSpec(provider, model, OpenAIReasoningParams, unsupported=_REASONING_UNSUPPORTED)
    return ModelSpec(provider, model, OpenAIChatParams if provider == "openai" else AnthropicParams)


DEFAULT_CATALOG = ModelCatalog()


def register_model(
    selection: str,
    *,
    params: type[BaseModel] | None = None,
    capabilities: Capabilities | None = None,
    unsupported: tuple[str, ...] | None = None,
) -> ModelSpec:
    """Catalog a model in the default catalog (see :meth:`ModelCatalog.register_model`)."""
    return DEFAULT_CATALOG.register_model(
        selection, params=params, capabilities=capabilities, unsupported=unsupported
    )


def register_provider(preset: ProviderPreset) -> ProviderPreset:
    """Add a provider preset to the default catalog (e.g. an OpenAI-compatible vendor)."""
    return DEFAULT_CATALOG.register_provider(preset)


def validate_selection(selection: str, params: Mapping[str, Any] | None = None) -> ModelSelection:
    """Validate ``provider:model`` and its parameters against the default catalog.

    Pure: no SDK import, no network, no environment. Raises
    :class:`~tether.errors.ModelConfigurationError`.
    """
    return DEFAULT_CATALOG.validate(selection, params)


def resolve_model(
    selection: str | ModelSelection | Model,
    *,
    params: Mapping[str, Any] | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    capabilities: Capabilities | None = None,
    attempts: int | None = None,
    **client_options: Any,
) -> Model:
    """The :class:`~tether.models.types.Model` for a selection, through the default catalog.

    A ``Model`` instance is returned as it is. Otherwise the selection is validated, the provider's
    adapter built (credentials from the arguments or the environment, never stored) and wrapped in
    :class:`~tether.models.retry.RetryingModel` with ``attempts`` attempts (default
    ``max_retries + 1`` from the parameters, else 3). ``client_options`` go to the SDK client.
    """
    return DEFAULT_CATALOG.resolve(
        selection,
        params=params,
        api_key=api_key,
        base_url=base_url,
        capabilities=capabilities,
        attempts=attempts,
        **client_options,
    )


def default_model_from_env() -> str | None:
    """The selection in ``TETHER_MODEL`` (validated), or ``None`` when it is unset or empty."""
    value = os.environ.get("TETHER_MODEL", "").strip()
    if not value:
        return None
    validate_selection(value)
    return value
