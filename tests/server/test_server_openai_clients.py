"""Real OpenAI clients pointed at a real tether server keep one session per conversation with no
``user`` and no session header: LangChain's ``ChatOpenAI`` (plain and streamed, five messages),
pydantic-ai over chat completions and over the Responses API, and every sample of the "Clients"
section of docs/server.md whose client is installed, run as written against the server."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai_served import base as base
from server_agents import echo_agent
from server_client import ACME

from tether.runtime import Runtime
from tether.stores import SQLiteStore

DOCS = Path(__file__).resolve().parents[2] / "docs" / "server.md"
WORDS = ["where is my order?", "A-1003", "and my refund?", "it came late", "the box was wet"]


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime = Runtime([echo_agent("Sam")], store=SQLiteStore(tmp_path / "clients.db"))
    try:
        yield runtime
    finally:
        await runtime.close()


async def _conversations(base: str, runtime: Runtime) -> list[list[str]]:
    """The user messages of each session of Sam."""
    found: list[list[str]] = []
    async with httpx.AsyncClient(base_url=base, headers=ACME) as http:
        for summary in await runtime.store.list(agent="Sam"):
            page = (await http.get(f"/v1/agents/Sam/sessions/{summary.id}/transcript")).json()["messages"]
            found.append([m["text"] for m in page if m["role"] == "user"])
    return found


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
async def test_langchain_keeps_one_session_over_five_messages(base: str, runtime: Runtime, stream: bool) -> None:
    pytest.importorskip("langchain_openai")
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI

    async with httpx.AsyncClient() as http:  # closed here (LangChain's own client would outlive the test)
        llm = ChatOpenAI(base_url=f"{base}/v1", api_key="key-acme", model="tether:Sam",  # type: ignore[arg-type]
                         max_retries=0, temperature=0.3, http_async_client=http)
        history: list[BaseMessage] = [SystemMessage("You are Sam.")]
        for n, words in enumerate(WORDS, start=1):
            history.append(HumanMessage(words))
            if stream:
                text = "".join([str(chunk.content) async for chunk in llm.astream(history)])
                history.append(AIMessage(text))
            else:
                history.append(await llm.ainvoke(history))
            assert history[-1].content == f"reply {n}: {words}"
    assert await _conversations(base, runtime) == [WORDS]


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_pydantic_ai_keeps_one_session(base: str, runtime: Runtime, api: str) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    async with openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="key-acme", max_retries=0) as client:
        provider = OpenAIProvider(openai_client=client)
        model = OpenAIChatModel("tether:Sam", provider=provider) if api == "chat" else \
            OpenAIResponsesModel("tether:Sam", provider=provider)
        sam = Agent(model, instructions="You are Sam.")
        history: Any = None
        for n, words in enumerate(WORDS[:3], start=1):
            result = await sam.run(words, message_history=history)
            assert result.output == f"reply {n}: {words}"
            history = result.all_messages()
    assert await _conversations(base, runtime) == [WORDS[:3]]


def _samples() -> list[Any]:
    section = DOCS.read_text().split("\n## Clients\n", 1)[1].split("\n## ", 1)[0]
    params = []
    for code in re.findall(r"^```python\n(.*?)^```", section, re.DOTALL | re.MULTILINE):
        modules = re.findall(r"^(?:from|import) (\w+)", code, re.MULTILINE)
        assert modules, code
        params.append(pytest.param(modules, code, id=modules[-1]))
    return params


@pytest.mark.parametrize(("modules", "code"), _samples())
async def test_each_client_sample_of_the_docs_keeps_its_session(base: str, runtime: Runtime, modules: list[str],
                                                                 code: str) -> None:
    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    assert 'base_url="http://localhost:8000/v1"' in code or 'api_base="http://localhost:8000/v1"' in code
    runnable = code.replace("http://localhost:8000/v1", f"{base}/v1").replace('api_key="KEY"', 'api_key="key-acme"')
    script = await asyncio.create_subprocess_exec(sys.executable, "-c", runnable, stdout=asyncio.subprocess.PIPE,
                                                  stderr=asyncio.subprocess.STDOUT)
    output, _ = await script.communicate()
    assert script.returncode == 0, output.decode()
    conversations = await _conversations(base, runtime)
    # each conversation of the sample (each says "A-1003" once) is one session holding both messages
    assert conversations == [["where is my order?", "A-1003"]] * code.count('"A-1003"')
