"""Flow files take CEL conditions, the expression language of Python flows and workflows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether import Agent, Flow, Message
from tether.dialect import load, to_spec
from tether.errors import FlowDefinitionError
from tether.testing import FakeClock, SequentialIds

FLOW = """\
flow:
  id: order
  on: [{kind: message, if: "context.shop == 'open'"}]
  nodes:
    - kind: router
      id: route
      when: "'size' in context && context.size == 'large'"
      then: big
      else: small
    - kind: reply
      id: big
      response: {template: "A large one!"}
      next: {end: ok}
    - kind: reply
      id: small
      response: {template: "A small one."}
      next: {end: ok}
"""


def _agent(tmp_path: Path, text: str = FLOW) -> Agent:
    path = tmp_path / "order.yaml"
    path.write_text(text)
    flow = load(path)
    assert isinstance(flow, Flow)
    return Agent("Pia", flows=[flow]).with_clock(FakeClock(), SequentialIds("s"))


async def test_a_flow_file_routes_and_triggers_on_cel_conditions(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    large = await agent.turn(None, Message("pizza"), context={"shop": "open", "size": "large"})
    assert large.text == "A large one!"
    small = await agent.turn(None, Message("pizza"), context={"shop": "open"})
    assert small.text == "A small one."
    closed = await agent.turn(None, Message("pizza"), context={"shop": "closed"})
    assert "A large one!" not in closed.text and "A small one." not in closed.text


def test_a_cel_condition_round_trips_as_text(tmp_path: Path) -> None:
    flow = _agent(tmp_path).flows[0]
    spec = to_spec(flow)  # type: ignore[arg-type]
    assert spec["on"][0]["if"] == "context.shop == 'open'"
    assert spec["nodes"][0]["when"] == "'size' in context && context.size == 'large'"


@pytest.mark.parametrize(("condition", "message"), [
    ("size(context.items) > 1", "function calls are not allowed in expressions"),
    ("nodes.x == 1", "unknown name 'nodes' (a condition reads context, input, results, state)"),
])
def test_a_bad_cel_condition_fails_when_the_file_is_loaded(tmp_path: Path, condition: str, message: str) -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        _agent(tmp_path, FLOW.replace("context.shop == 'open'", condition))
    assert message in str(caught.value) and "on.0.if" in str(caught.value)


def test_a_cel_condition_that_reads_a_result_makes_its_node_record_it() -> None:
    from tether.dialect.values import read_results

    assert read_results({"when": "state.x == 1 && results.lookup.status == 'lost'"}) == {"lookup"}
    assert read_results({"when": "results.check.ok"}) == {"check"}
    assert read_results({"when": "state.results.x == 1"}) == frozenset()


def test_a_cel_condition_labels_its_route_edge_as_itself() -> None:
    from tether.dialect.predicate_text import predicate_text

    assert predicate_text("state.topic == 'order' && input.state.x") == "topic == 'order' && input.state.x"
