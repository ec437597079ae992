"""OpenTelemetry spans (the ``otel`` extra), read with the SDK's in-memory exporter: the turn,
its phases and each model call (GenAI semantic conventions), nested; a failed call is an error."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tether import Agent, Flow, on_message, reply, tracing
from tether.errors import ModelError
from tether.runtime import Runtime
from tether.stores import SQLiteStore
from tether.testing import FakeClock, ScriptedModel


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """Spans of this test only (the global tracer provider is left alone)."""
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    monkeypatch.setattr(tracing, "_tracer", lambda: provider.get_tracer("tether"))
    yield exported
    provider.shutdown()


def _talker(model: ScriptedModel) -> Agent:
    talk = reply("talk", instructions="Chat.")
    flow = Flow("talk", start=talk, nodes=[talk], on=[on_message(repeat="always")])
    return Agent("Talker", flows=[flow]).with_model(model)


async def test_a_turn_has_a_span_with_its_phases_and_a_genai_span_per_model_call(
        tmp_path: Path, clock: FakeClock, exporter: InMemorySpanExporter) -> None:
    model = ScriptedModel(speak=["Hi there!"], usage=True, name="openai:gpt-4o-mini")
    async with Runtime(_talker(model), store=SQLiteStore(tmp_path / "t.db"), clock=clock) as runtime:
        said = await runtime.run("Talker", "hello")
    assert said.success
    spans = {span.name: span for span in exporter.get_finished_spans()}
    turn = spans["tether.turn"]
    assert turn.attributes is not None and turn.parent is None
    assert dict(turn.attributes) == {"tether.agent": "Talker", "tether.input": "message", "tether.success": True,
                                     "tether.session": said.session, "tether.model_calls": 1}
    for phase in ("tether.phase decide", "tether.phase run", "tether.phase speak", "tether.phase settle"):
        assert spans[phase].parent is not None and spans[phase].parent.span_id == turn.context.span_id
    call = spans["chat gpt-4o-mini"]
    assert call.kind == SpanKind.CLIENT and call.parent is not None
    assert call.parent.span_id == spans["tether.phase speak"].context.span_id
    attributes = dict(call.attributes or {})
    assert {key: attributes[key] for key in ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model",
                                             "tether.call", "gen_ai.response.finish_reasons")} == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini",
        "tether.call": "speak", "gen_ai.response.finish_reasons": ("stop",)}
    assert attributes["gen_ai.usage.input_tokens"] > 0 and attributes["gen_ai.usage.output_tokens"] > 0


async def test_a_failed_model_call_and_a_failed_request_are_error_spans(tmp_path: Path, clock: FakeClock,
                                                             exporter: InMemorySpanExporter) -> None:
    def fail(request: object) -> str:
        raise ModelError("the provider is down", kind="server")

    async with Runtime(_talker(ScriptedModel(speak=[fail])), store=SQLiteStore(tmp_path / "t.db"),
                       clock=clock) as runtime:
        said = await runtime.run("Talker", "hello")
        refused = await runtime.run("Nobody", "hello")
    spans = {span.name: span for span in exporter.get_finished_spans()}
    call = spans["chat model"]
    assert call.status.status_code == StatusCode.ERROR and call.attributes is not None
    assert call.attributes["error.type"] == ModelError("x", kind="server").code
    handled, failed = (span for span in exporter.get_finished_spans() if span.name == "tether.turn")
    # the failure reply was said: a handled failure is not a failed turn
    assert said.success and handled.status.status_code == StatusCode.UNSET
    assert not refused.success and failed.status.status_code == StatusCode.ERROR
    assert failed.attributes is not None and failed.attributes["tether.code"] == "agent-not-registered"


def test_without_opentelemetry_the_hooks_make_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tracing, "_api", lambda: None)
    model = ScriptedModel()
    assert not tracing.enabled() and tracing.traced(model) is model
    agent = _talker(model)
    assert tracing.traced_models(agent) is agent
    with tracing.turn_span("Talker", None, "message") as span:
        assert span is None
    with tracing.phase_span("run") as nothing:
        assert nothing is None


def test_tether_runs_without_the_otel_package() -> None:
    script = (
        "import sys, asyncio\n"
        "sys.modules['opentelemetry'] = None  # as if the otel extra were not installed\n"
        "from tether import Agent, Flow, on_message, reply, tracing\n"
        "from tether.runtime import Runtime\n"
        "from tether.stores import MemoryStore\n"
        "hi = reply('hi', response='hello')\n"
        "agent = Agent('A', flows=[Flow('f', start=hi, nodes=[hi], on=[on_message()])])\n"
        "said = asyncio.run(Runtime(agent, store=MemoryStore()).run('A', 'x'))\n"
        "print(tracing.enabled(), said.message, 'opentelemetry.trace' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "hello", "False"]


async def test_with_no_provider_configured_no_span_is_made(
        tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import trace

    monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.ProxyTracerProvider())
    assert tracing.enabled() and not tracing.recording()
    with tracing.turn_span("Talker", None, "message") as span:
        assert span is None
    model = ScriptedModel(speak=["Hi there!"], usage=True)
    async with Runtime(_talker(model), store=SQLiteStore(tmp_path / "t.db"), clock=clock) as runtime:
        said = await runtime.run("Talker", "hello")
    assert said.success and said.message == "Hi there!"
    # a provider configured later is used from the next span on
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    assert tracing.recording()
    async with Runtime(_talker(ScriptedModel(speak=["Again."])), store=SQLiteStore(tmp_path / "t.db"),
                       clock=clock) as runtime:
        await runtime.run("Talker", "hello", session_id=said.session)
    assert {"tether.turn", "tether.phase speak", "chat model"} <= {s.name for s in exported.get_finished_spans()}
    provider.shutdown()
