"""The catalog: strict parameters, built-in models, presets, tiers, TETHER_MODEL, strip_secrets."""

from __future__ import annotations

import pytest
from model_server import FakeProvider, Reply, chat_completion
from pydantic import BaseModel, ConfigDict

from tether.errors import ModelConfigurationError
from tether.models import (
    AnthropicModel,
    Capabilities,
    ModelCatalog,
    ModelRequest,
    ModelSelection,
    ModelTiers,
    OpenAIModel,
    ProviderPreset,
    RetryingModel,
    ToolSpec,
    UncatalogedModelWarning,
    default_model_from_env,
    resolve_model,
    strip_secrets,
    validate_selection,
)
from tether.testing import ScriptedModel

ENV_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "TETHER_BASE_URL",
    "TETHER_API_KEY",
    "TETHER_MODEL",
    "OLLAMA_BASE_URL",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "VLLM_BASE_URL",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def test_cataloged_params_are_validated_and_normalised() -> None:
    sel = validate_selection("openai:gpt-4o-mini", {"temperature": 0.2, "max_tokens": 100, "max_retries": 0})
    assert sel == ModelSelection(
        "openai", "gpt-4o-mini", {"temperature": 0.2, "max_tokens": 100, "max_retries": 0}, cataloged=True
    )
    assert sel.selection == str(sel) == "openai:gpt-4o-mini"
    assert validate_selection("anthropic:claude-sonnet-4-5", {"top_k": 5}).params == {"top_k": 5}
    assert validate_selection("openai:gpt-5.1", {"reasoning_effort": "minimal"}).params == {
        "reasoning_effort": "minimal"
    }


def test_unknown_parameter_is_named() -> None:
    with pytest.raises(ModelConfigurationError, match="Unknown parameter 'temprature' for model 'openai:gpt-4o'"):
        validate_selection("openai:gpt-4o", {"temprature": 0.2})


@pytest.mark.parametrize(
    ("selection", "params", "fragment"),
    [
        ("openai:gpt-4o", {"temperature": 3}, "Invalid parameter 'temperature'"),
        ("openai:gpt-4o", {"max_tokens": 0}, "Invalid parameter 'max_tokens'"),
        ("openai:gpt-4o", {"max_tokens": "100"}, "Invalid parameter 'max_tokens'"),
        ("openai:gpt-4o", {"max_retries": -1}, "Invalid parameter 'max_retries'"),
        ("openai:gpt-4o", {"timeout": 0}, "Invalid parameter 'timeout'"),
        ("openai:gpt-5", {"reasoning_effort": "extreme"}, "Invalid parameter 'reasoning_effort'"),
        ("anthropic:claude-haiku-4-5", {"temperature": 1.5}, "Invalid parameter 'temperature'"),
        ("openai:gpt-4o", ["temperature"], "must be a mapping"),
    ],
)
def test_invalid_values(selection: str, params: object, fragment: str) -> None:
    with pytest.raises(ModelConfigurationError, match=fragment):
        validate_selection(selection, params)  # type: ignore[arg-type]


@pytest.mark.parametrize("model", ["gpt-5", "gpt-5.1", "gpt-5-mini", "o3", "o1", "o4-mini"])
def test_reasoning_models_reject_temperature(model: str) -> None:
    with pytest.raises(ModelConfigurationError) as caught:
        validate_selection(f"openai:{model}", {"temperature": 0.5})
    assert str(caught.value) == f"Model 'openai:{model}' does not support temperature."


def test_a_new_model_of_a_known_provider_is_accepted_with_generic_rules_and_a_warning() -> None:
    catalog = ModelCatalog()
    with pytest.warns(UncatalogedModelWarning, match="'openai:gpt-4.9-preview' is not in tether's catalog"):
        chosen = catalog.validate("openai:gpt-4.9-preview", {"temperature": 0.2})
    assert chosen.params == {"temperature": 0.2} and not chosen.cataloged
    reasoning = "'openai:gpt-5-whatever' does not support temperature"  # a reasoning name gets those rules
    with pytest.warns(UncatalogedModelWarning), pytest.raises(ModelConfigurationError, match=reasoning):
        catalog.validate("openai:gpt-5-whatever", {"temperature": 0.5})
    with pytest.warns(UncatalogedModelWarning, match="anthropic's generic parameter rules"), \
            pytest.raises(ModelConfigurationError, match="Unknown parameter 'temprature'"):
        catalog.validate("anthropic:claude-9", {"temprature": 1})
    with pytest.warns(UncatalogedModelWarning):
        model = catalog.resolve("openai:gpt-5-whatever", api_key="sk-test")
    assert model.inner._model == "gpt-5-whatever" and model.inner._reasoning  # type: ignore[attr-defined]


def test_a_strict_catalog_rejects_uncataloged_models_until_registered() -> None:
    catalog = ModelCatalog(strict=True)
    for name in ("openai:gpt-9", "anthropic:claude-9"):
        with pytest.raises(ModelConfigurationError) as caught:
            catalog.validate(name)
        assert f"Unknown built-in model {name!r}: the catalog is strict" in str(caught.value)
        assert "openai-compatible:<model> with TETHER_BASE_URL" in str(caught.value)
    catalog.register_model("openai:gpt-9")
    assert catalog.validate("openai:gpt-9", {"temperature": 1}).cataloged
    catalog.register_model("openai:gpt-5.5")
    with pytest.raises(ModelConfigurationError, match="does not support temperature"):
        catalog.validate("openai:gpt-5.5", {"temperature": 1})

    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        num_ctx: int | None = None

    catalog.register_model("ollama:qwen3", params=Strict)
    assert catalog.validate("ollama:qwen3", {"num_ctx": 8192}).params == {"num_ctx": 8192}
    with pytest.raises(ModelConfigurationError, match="Unknown parameter 'temperature'"):
        catalog.validate("ollama:qwen3", {"temperature": 1})
    with pytest.raises(ModelConfigurationError):
        ModelCatalog(strict=True).validate("openai:gpt-9")  # a fresh catalog does not see the registration


def test_other_providers_pass_through() -> None:
    params = {"temperature": 0.1, "num_ctx": 4096}
    sel = validate_selection("ollama:llama3.2:3b", params)
    assert (sel.provider, sel.model, sel.cataloged) == ("ollama", "llama3.2:3b", False)
    assert sel.params == params and sel.params is not params
    assert validate_selection("openrouter:anthropic/claude-3.5-sonnet").model == "anthropic/claude-3.5-sonnet"
    assert validate_selection("google:gemini-2.5-pro", {"anything": 1}).params == {"anything": 1}


@pytest.mark.parametrize("bad", ["gpt-4o", ":gpt-4o", "openai:", "", "  "])
def test_malformed_selection(bad: str) -> None:
    with pytest.raises(ModelConfigurationError, match="provider:model"):
        validate_selection(bad)


def test_resolve_builtin_models(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelConfigurationError, match="OPENAI_API_KEY"):
        resolve_model("openai:gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    model = resolve_model("openai:gpt-4o-mini", params={"max_retries": 4})
    assert isinstance(model, RetryingModel) and isinstance(model.inner, OpenAIModel)
    assert model.attempts == 5 and model.name == "openai:gpt-4o-mini"
    assert model.inner.base_url.startswith("https://api.openai.com")
    assert model.capabilities.prompt_caching
    assert resolve_model("openai:gpt-4o-mini", attempts=1).attempts == 1  # type: ignore[attr-defined]
    claude = resolve_model("anthropic:claude-haiku-4-5", api_key="sk-ant")
    assert isinstance(claude, RetryingModel) and isinstance(claude.inner, AnthropicModel)
    assert claude.attempts == 3
    scripted = ScriptedModel()
    assert resolve_model(scripted) is scripted


def test_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    ollama = resolve_model("ollama:llama3.2")
    assert isinstance(ollama, RetryingModel) and isinstance(ollama.inner, OpenAIModel)
    assert ollama.inner.base_url.rstrip("/") == "http://localhost:11434/v1" and ollama.name == "ollama:llama3.2"
    with pytest.raises(ModelConfigurationError, match="OPENROUTER_API_KEY"):
        resolve_model("openrouter:openai/gpt-4o")
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-key")
    router = resolve_model("openrouter:openai/gpt-4o")
    assert router.inner.base_url.rstrip("/") == "https://openrouter.ai/api/v1"  # type: ignore[attr-defined]
    with pytest.raises(ModelConfigurationError, match="TETHER_BASE_URL"):
        resolve_model("openai-compatible:my-model")
    compatible = resolve_model("openai-compatible:my-model", base_url="http://127.0.0.1:9/v1")
    assert not compatible.capabilities.native_json_schema
    monkeypatch.setenv("TETHER_BASE_URL", "http://gpu-box:8000/v1")
    assert resolve_model("vllm:qwen").inner.base_url.rstrip("/") == "http://gpu-box:8000/v1"  # type: ignore[attr-defined]
    with pytest.raises(ModelConfigurationError, match="No adapter for provider 'google'") as caught:
        resolve_model("google:gemini-2.5-pro")
    assert "use openai-compatible:<model> with TETHER_BASE_URL" in str(caught.value)


async def test_registered_provider_preset_reaches_the_local_server(provider: FakeProvider) -> None:
    catalog = ModelCatalog()
    catalog.register_provider(
        ProviderPreset("testlocal", base_url=provider.url + "/v1", capabilities=Capabilities(native_json_schema=False))
    )
    model = catalog.resolve("testlocal:tiny", params={"temperature": 0})
    assert not model.capabilities.native_json_schema
    provider.add(Reply(body=chat_completion("hi")))
    assert (await model.complete(ModelRequest(call="speak"))).text == "hi"
    assert provider.requests[-1].body["model"] == "tiny" and provider.requests[-1].body["temperature"] == 0
    await model.aclose()  # type: ignore[attr-defined]


def test_tiers() -> None:
    scripted = ScriptedModel()
    tiers = ModelTiers(default="openai:gpt-4o-mini", deep=scripted)
    assert tiers.get("default") == "openai:gpt-4o-mini"
    assert tiers.get("deep") is scripted
    assert tiers.resolve("deep") is scripted
    with pytest.raises(ModelConfigurationError, match="tier 'small' is not configured"):
        tiers.get("small")
    with pytest.raises(ModelConfigurationError, match="unknown model tier"):
        tiers.get("huge")
    assert ModelTiers().get("default") is None and ModelTiers().resolve("default") is None
    with pytest.raises(ModelConfigurationError, match="tier 'small': Model selection 'gpt-9' is not of the form"):
        ModelTiers(default="openai:gpt-4o", small="gpt-9")


def test_default_model_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_model_from_env() is None
    monkeypatch.setenv("TETHER_MODEL", " openai:gpt-4o-mini ")
    assert default_model_from_env() == "openai:gpt-4o-mini"
    monkeypatch.setenv("TETHER_MODEL", "openai-gpt-9")
    with pytest.raises(ModelConfigurationError, match="is not of the form 'provider:model'"):
        default_model_from_env()


def test_strip_secrets() -> None:
    config = {
        "model": "openai:gpt-4o",
        "api_key": "sk-1",
        "apiKey": "sk-2",
        "API-KEY": "sk-3",
        "Authorization": "Bearer x",
        "params": {
            "temperature": 0.2,
            "max_tokens": 10,
            "max_output_tokens": 5,
            "headers": {"X-Auth-Token": "t", "accept": "json"},
        },
        "providers": [{"name": "a", "client_secret": "s", "password": "p"}, ("keep", {"access_token": "t"})],
        "credentials": {"user": "u"},
        "credential": "c",
        "session_token": "t",
    }
    assert strip_secrets(config) == {
        "model": "openai:gpt-4o",
        "params": {"temperature": 0.2, "max_tokens": 10, "max_output_tokens": 5, "headers": {"accept": "json"}},
        "providers": [{"name": "a"}, ("keep", {})],
    }
    assert config["api_key"] == "sk-1"  # not mutated
    sel = validate_selection("ollama:llama3", {"api_key": "x", "num_ctx": 1})
    assert sel.as_dict() == {"model": "ollama:llama3", "params": {"num_ctx": 1}}


def test_resolve_a_selection_and_missing_capabilities(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    sel = validate_selection("openai:gpt-4o", {"temperature": 0.5, "max_retries": 0})
    model = resolve_model(sel, params={"max_tokens": 10})
    assert isinstance(model, RetryingModel) and model.attempts == 1
    plain = resolve_model("ollama:tiny", capabilities=Capabilities(tools=False))
    with pytest.raises(ModelConfigurationError, match="does not support tools"):
        plain.inner.build_request(  # type: ignore[attr-defined]
            ModelRequest(call="speak", tools=(ToolSpec("t", "d", {"type": "object"}),))
        )
