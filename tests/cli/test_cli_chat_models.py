"""``tether chat --model``: a new model of a known provider is served with a warning said once; a
provider tether has no adapter for points to the generic OpenAI-compatible route."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import SHIPPING, tether

from tether.cli._chat import pick_model
from tether.models import validate_selection


def test_an_uncataloged_model_is_picked_with_one_warning(capsys: pytest.CaptureFixture[str]) -> None:
    assert pick_model("openai:gpt-5-whatever") == "openai:gpt-5-whatever"
    err = capsys.readouterr().err
    assert err == ("warning: Model 'openai:gpt-5-whatever' is not in tether's catalog; "
                   "using openai's generic parameter rules.\n")
    # each turn validates the selection again: with warnings as errors (the suite's setting) this
    # raises unless the chat silenced the warning it already printed
    validate_selection("openai:gpt-5-whatever")


def test_an_unknown_provider_points_to_openai_compatible(tmp_path: Path) -> None:
    done = tether("chat", SHIPPING, "--db", tmp_path / "t.db", "--model", "google:gemini-2.5-pro", "--message", "hi")
    assert done.code == 2
    assert "no adapter is registered for provider 'google'" in done.err
    assert "use openai-compatible:<model> with TETHER_BASE_URL" in done.err
