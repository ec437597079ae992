"""Importing tether.models imports no vendor SDK; a missing SDK is a configuration error with the hint."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tether.errors import ModelConfigurationError
from tether.models import AnthropicModel, OpenAIModel


def test_importing_tether_models_imports_no_sdk() -> None:
    code = (
        "import sys, tether.models, tether.testing\n"
        "tether.models.validate_selection('openai:gpt-5', {'reasoning_effort': 'low'})\n"
        "assert 'openai' not in sys.modules, 'openai imported'\n"
        "assert 'anthropic' not in sys.modules, 'anthropic imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.parametrize(
    ("cls", "module", "extra"), [(OpenAIModel, "openai", "openai"), (AnthropicModel, "anthropic", "anthropic")]
)
def test_missing_sdk_gives_the_install_hint(
    monkeypatch: pytest.MonkeyPatch, cls: type, module: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ModelConfigurationError) as caught:
        cls("some-model", api_key="k")
    assert f"pip install 'tether[{extra}]'" in str(caught.value)


def test_missing_key_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelConfigurationError, match="OPENAI_API_KEY"):
        OpenAIModel("gpt-4o")
    with pytest.raises(ModelConfigurationError, match="ANTHROPIC_API_KEY"):
        AnthropicModel("claude-haiku-4-5")
