"""Hot registration: a new version of a flow joins a live agent; a parked run finishes on the
version it started on; new runs take the new one; a bad bundle changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tether import Agent, Field, Message
from tether.dialect import Registry, register_flows
from tether.engine.core.session import Session
from tether.errors import FlowDefinitionError
from tether.testing import FakeClock, SequentialIds


def flow(version: str, done: str) -> dict[str, Any]:
    return {"flow": {"id": "greet", "version": version, "on": [{"kind": "message"}], "nodes": [
        {"kind": "collect", "id": "ask_name", "fields": ["name"], "ask": "Your name?",
         "resolvers": [{"kind": "whole_message", "field": "name", "min_length": 3}]},
        {"kind": "reply", "id": "hello", "response": {"template": done}, "next": {"end": "greeted"}},
    ]}}


def agent_v1() -> Agent:
    base = Agent("Pia", fields={"name": Field("string")}).with_clock(FakeClock(), SequentialIds("s"))
    return register_flows(base, [flow("1", "v1: hello ${state.name}")])


async def say(agent: Agent, session: Session | None, text: str) -> Any:
    return await agent.turn(session, Message(text))


async def test_a_parked_run_finishes_on_its_version_and_new_runs_take_the_new_one() -> None:
    v1 = agent_v1()
    assert v1.flows_by_id["greet"].version == "1"
    parked = await say(v1, None, "hi")  # too short to be a name: it asks
    assert parked.text == "Your name?"
    (run,) = parked.session.runs
    pinned = run.digest
    v2 = register_flows(v1, [flow("2", "v2: welcome ${state.name}")])
    assert v2.flows_by_id["greet"].version == "2" and v2.flows_by_id["greet"].digest != pinned
    resumed = await say(v2, parked.session, "Ann")
    assert resumed.text == "v1: hello Ann" and resumed.ended[0].reason == "greeted"  # no FlowDriftError
    fresh = await say(v2, None, "hi")
    assert fresh.session.runs[0].digest == v2.flows_by_id["greet"].digest
    assert (await say(v2, fresh.session, "Bob")).text == "v2: welcome Bob"
    assert v1.flows_by_id["greet"].version == "1"  # the old agent object is untouched


async def test_a_bad_bundle_is_refused_whole_and_changes_nothing(tmp_path: Path) -> None:
    v1 = agent_v1()
    good = tmp_path / "other.yaml"
    good.write_text("flow:\n  id: other\n  nodes:\n    - {kind: reply, id: r, response: {template: hi}, "
                    "next: {start_flow: greet}}\n")
    bad = tmp_path / "greet.yaml"
    bad.write_text("flow:\n  id: greet\n  version: '2'\n  nodes:\n    - kind: action\n      id: book\n"
                   "      tool: book_shipment\n")
    with pytest.raises(FlowDefinitionError) as caught:
        register_flows(v1, [good, bad])
    (issue,) = caught.value.issues
    assert issue.code == "unknown-tool" and issue.message.startswith(f"{bad}:7: ")
    assert "unchanged" in str(caught.value)
    assert set(v1.flows_by_id) == {"greet"} and v1.flows_by_id["greet"].version == "1"
    both = register_flows(v1, [good])
    assert set(both.flows_by_id) == {"greet", "other"}


def test_the_bundle_is_checked_against_the_agent_and_its_registry() -> None:
    v1 = agent_v1()
    unknown_flow = flow("2", "x")
    unknown_flow["flow"]["nodes"][1]["next"] = {"start_flow": "nowhere"}
    with pytest.raises(FlowDefinitionError, match="unknown-flow"):
        register_flows(v1, [unknown_flow])
    unknown_field = flow("2", "hi ${state.nme}")
    with pytest.raises(FlowDefinitionError, match="unknown-source"):
        register_flows(v1, [unknown_field])
    uses_action = flow("2", "ok")
    uses_action["flow"]["nodes"].insert(1, {"kind": "action", "id": "act", "do": "log"})
    with pytest.raises(FlowDefinitionError, match="unknown-action"):
        register_flows(v1, [uses_action])
    assert register_flows(v1, [uses_action], Registry.of(actions={"log": lambda args, ctx: None}))
