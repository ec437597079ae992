"""``tether serve`` serves its agents with the model chosen as for ``tether chat`` (``--model``,
else ``TETHER_MODEL``), names it in the start-up banner, and ``GET /`` leads to the inspector."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from model_server import FakeProvider, Reply, chat_completion
from serve_process import app_file, tether_serve


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    said = json.dumps({"message": "Returns are free within 30 days."})  # the reply step's structured answer
    provider = FakeProvider(lambda recorded: Reply(body=chat_completion(
        said, usage={"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48})))
    try:
        yield provider
    finally:
        provider.close()


def _env(**extra: str) -> dict[str, str]:
    return {"TETHER_API_KEYS": "", "TETHER_MODEL": "", **extra}


def test_serve_uses_the_model_in_tether_model(tmp_path: Path, fake: FakeProvider) -> None:
    env = _env(TETHER_MODEL="openai-compatible:fake", TETHER_BASE_URL=f"{fake.url}/v1")
    with tether_serve([str(app_file(tmp_path, "helper_agent()")), "--db", str(tmp_path / "s.db")], cwd=tmp_path,
                      env=env) as served:
        banner = [line for line in served.lines if "model:" in line]
        assert banner and "model: openai-compatible:fake" in banner[0]
        assert f"inspector {served.base}/inspect" in banner[0]
        with httpx.Client(base_url=served.base) as client:
            sid = client.post("/v1/agents/Helper/sessions").json()["session"]
            answer = client.post(f"/v1/agents/Helper/sessions/{sid}/messages",
                                 json={"text": "what's your return policy?"}).json()
    assert answer["message"] == "Returns are free within 30 days."
    assert len(fake.requests) == 1
    sent = fake.requests[0]
    assert sent.path == "/v1/chat/completions" and sent.body["model"] == "fake"
    assert any("what's your return policy?" in str(m.get("content")) for m in sent.body["messages"])


def test_serve_model_option_wins_over_the_environment(tmp_path: Path, fake: FakeProvider) -> None:
    env = _env(TETHER_MODEL="openai-compatible:other", TETHER_BASE_URL=f"{fake.url}/v1")
    with tether_serve([str(app_file(tmp_path, "helper_agent()")), "--db", str(tmp_path / "s.db"),
                       "--model", "openai-compatible:fake"], cwd=tmp_path, env=env) as served:
        assert any("model: openai-compatible:fake" in line for line in served.lines)
        with httpx.Client(base_url=served.base) as client:
            sid = client.post("/v1/agents/Helper/sessions").json()["session"]
            client.post(f"/v1/agents/Helper/sessions/{sid}/messages", json={"text": "hello"})
    assert [r.body["model"] for r in fake.requests] == ["fake"]


def test_serve_without_a_model_says_so_and_root_leads_to_the_inspector(tmp_path: Path) -> None:
    with tether_serve([str(app_file(tmp_path)), "--db", str(tmp_path / "s.db")], cwd=tmp_path,
                      env=_env()) as served:
        assert any("model: none (keyword routing)" in line for line in served.lines)
        with httpx.Client(base_url=served.base) as client:
            page = client.get("/", headers={"Accept": "text/html"}, follow_redirects=True)
            index = client.get("/")
    assert page.status_code == 200 and "<html" in page.text.lower() and page.url.path == "/inspect/"
    assert index.status_code == 200 and index.json()["inspector"] == "/inspect/"


def test_serve_refuses_an_invalid_model(tmp_path: Path) -> None:
    import subprocess

    from serve_process import TETHER

    env = {**os.environ, **_env()}
    done = subprocess.run([str(TETHER), "serve", str(app_file(tmp_path)), "--model", "nonsense"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "invalid --model 'nonsense'" in done.stderr


def test_serve_names_its_operator_keys_and_budgets_and_refuses_bad_prices(tmp_path: Path) -> None:
    env = _env(TETHER_API_KEYS="acme:client-key", TETHER_OPERATOR_KEYS="acme:operator-key",
               TETHER_MAX_TOKENS_PER_SESSION="500")
    with tether_serve([str(app_file(tmp_path)), "--db", str(tmp_path / "s.db")], cwd=tmp_path, env=env) as served:
        assert any("1 API key(s) configured, 1 operator key(s)" in line for line in served.lines)
        assert any("budgets max_tokens_per_session=500" in line for line in served.lines)
        with httpx.Client(base_url=served.base) as client:
            assert client.get("/v1/handoffs", headers={"Authorization": "Bearer client-key"}).status_code == 403
            waiting = client.get("/v1/handoffs", headers={"Authorization": "Bearer operator-key"})
            assert waiting.status_code == 200 and waiting.json() == {"sessions": [], "next": None}
            costs = client.get("/v1/costs", headers={"Authorization": "Bearer client-key"}).json()
            assert costs["budgets"]["max_tokens_per_session"] == 500
    import subprocess

    from serve_process import TETHER

    done = subprocess.run([str(TETHER), "serve", str(app_file(tmp_path))], capture_output=True, text=True,
                          env={**os.environ, **_env(TETHER_PRICES="gpt-4o=cheap")}, cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "TETHER_PRICES entry 1 is not 'model=input/output'" in done.stderr
