"""Flow drift in flow files: a reworded question in a YAML flow keeps the parked conversation
going on the new wording; a flow file declares ``on_drift`` for the runs that cannot go on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether import Agent, FlowDefinitionError, Message
from tether.dialect import load, to_spec
from tether.runtime import Runtime
from tether.stores import SQLiteStore

AGENT = """\
agent:
  name: Pia
  fields: {{name: {{type: string}}}}
  flows:
    - id: greet
      on: [{{kind: message}}]
{policy}      nodes:
        - kind: collect
          id: {ask}
          fields: [name]
          ask: {question}
          resolvers: [{{kind: whole_message, field: name, min_length: 3}}]
        - kind: reply
          id: hello
          response: {{template: "Hello ${{state.name}}."}}
          next: {{end: greeted}}
"""


def agent_file(tmp_path: Path, release: str, *, question: str = "Your name?", ask: str = "ask_name",
               policy: str = "") -> Agent:
    path = tmp_path / release / "agent.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(AGENT.format(question=question, ask=ask, policy=f"      on_drift: {policy}\n" if policy else ""))
    loaded = load(path)
    assert isinstance(loaded, Agent)
    return loaded


async def park(agent: Agent, db: Path) -> str:
    asked = await Runtime(agent, store=SQLiteStore(db)).run("Pia", Message("hi", id="m1"))
    assert asked.success and asked.message == "Your name?", asked
    return asked.session


async def test_a_reworded_question_in_a_flow_file_keeps_the_conversation_going(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    session = await park(agent_file(tmp_path, "1"), db)
    reworded = agent_file(tmp_path, "2", question="What is your name?")
    runtime = Runtime(reworded, store=SQLiteStore(db))
    short = await runtime.run("Pia", Message("no", id="m2"), session_id=session)  # too short: asked again
    assert short.success and short.message == "What is your name?", short  # the new wording; was flow-drift
    assert short.result is not None and "flow-drift-continued" in short.result.codes()
    done = await runtime.run("Pia", Message("Ann", id="m3"), session_id=session)
    assert done.success and done.message == "Hello Ann.", done


async def test_a_flow_file_declares_what_a_run_that_cannot_go_on_does(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    refused = await Runtime(agent_file(tmp_path, "2", ask="name"), store=SQLiteStore(db)).run(
        "Pia", Message("Ann", id="m2"), session_id=await park(agent_file(tmp_path, "1"), db))
    assert not refused.success and refused.code == "flow-drift" and "node 'ask_name' is gone" in refused.message
    restarting = agent_file(tmp_path, "3", ask="name", policy="restart")
    assert restarting.flows_by_id["greet"].on_drift == "restart"
    restarted = await Runtime(restarting, store=SQLiteStore(db)).run(
        "Pia", Message("Bo", id="m2"), session_id=await park(agent_file(tmp_path, "1"), db))
    assert restarted.success and restarted.message == "Your name?", restarted  # started over at its start
    assert restarted.result is not None and "flow-drift-restarted" in restarted.result.codes()
    assert to_spec(restarting.flows_by_id["greet"])["on_drift"] == "restart"


def test_an_unknown_drift_policy_in_a_flow_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FlowDefinitionError, match="on_drift"):
        agent_file(tmp_path, "1", policy="ignore")
