"""One expression language: a Python flow's conditions may be CEL strings, checked when the agent
is built and read the way flow files and workflows read them."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from tether import Agent, Field, Flow, Message, action, end, goto, on_message, reply
from tether.errors import FlowDefinitionError, WorkflowDefinitionError
from tether.flow.nodes import router
from tether.testing import FakeClock, SequentialIds
from tether.workflow import check_node, workflow


def _agent(when: Any, *, if_: Any = None) -> Agent:
    @action("size")
    async def size(state: dict[str, Any], ctx: Any) -> Any:
        return goto("route", data={"size": "large"})

    flow = Flow("order", "Order a pizza", nodes=[
        size,
        router("route", when=when, then="big", else_="small"),
        reply("big", response="A large one!", next=end("ok")),
        reply("small", response="A small one.", next=end("ok")),
    ], on=[on_message("pizza", if_=if_)])
    return Agent("Pia", flows=[flow], fields={"vip": Field("boolean")}).with_clock(FakeClock(), SequentialIds("s"))


async def test_a_router_and_a_trigger_take_cel_strings() -> None:
    agent = _agent("state.size == 'large' && !silenced", if_="context.shop == 'open'")
    opened = await agent.turn(None, Message("a pizza please"), context={"shop": "open"})
    assert opened.text == "A large one!"
    closed = await agent.turn(None, Message("a pizza please"), context={"shop": "closed"})
    assert "A large one!" not in closed.text and "A small one." not in closed.text


@pytest.mark.parametrize(("condition", "message"), [
    ("size(state.size) > 1", "function calls are not allowed in expressions"),
    ("nodes.x == 1", "unknown name 'nodes' (a condition reads context, data, input, silenced, state)"),
    ("state.size ==", "invalid expression"),
    ("state.__class__", "attribute '__class__' is not allowed"),
])
def test_a_bad_cel_condition_fails_when_the_agent_is_built(condition: str, message: str) -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        _agent(condition)
    assert message in str(caught.value) and "route" in str(caught.value)


def test_workflows_and_flows_refuse_the_same_thing_with_the_same_words() -> None:
    with pytest.raises(WorkflowDefinitionError) as caught:
        workflow("w", nodes=[check_node("c", "true", requires=["size(input.items) > 1"])], edges=[])
    assert "function calls are not allowed in expressions" in str(caught.value)


def test_a_condition_can_test_for_a_name_before_reading_it() -> None:
    from tether.cel import compile_condition

    guarded = compile_condition("'size' in state && state.size == 'large'", {"state"})
    assert guarded.holds({"state": {}}) is False and guarded.holds({"state": {"size": "large"}}) is True
    with pytest.raises(ValueError, match="no such member in mapping: 'size'"):
        compile_condition("state.size == 'large'", {"state"}).holds({"state": {}})
    with pytest.raises(ValueError, match="is not a condition: it gives 'large'"):
        compile_condition("state.size", {"state"}).holds({"state": {"size": "large"}})


def _old_form_flow(when: Any, *, while_: Any = None) -> Flow:
    return Flow("order", "Order", nodes=[router("route", when=when, then="big", else_="small"),
                                         reply("big", response="Big.", next=end("ok")),
                                         reply("small", response="Small.", next=end("ok"))],
                on=[on_message("pizza")], while_=while_)


def test_an_older_dict_condition_warns_once_when_the_flow_is_built_naming_its_cel() -> None:
    with pytest.warns(DeprecationWarning) as caught:
        _old_form_flow({"equals": {"size": "large"}, "silenced": False}, while_={"known": ["size"]})
    messages = [str(w.message) for w in caught if w.category is DeprecationWarning]
    assert messages == [
        "flow 'order': while_: {'known': ['size']} is the older form of a condition (deprecated); "
        'write the CEL condition: "size" in data',
        "flow 'order', node 'route': when: {'equals': {'size': 'large'}, 'silenced': False} is the older form of "
        'a condition (deprecated); write the CEL condition: "size" in data && data.size == "large" && !silenced']
    assert all(w.filename == __file__ for w in caught)  # the author's line, not tether's


@pytest.mark.parametrize(("data", "holds"), [({}, False), ({"size": "large"}, True), ({"size": "small"}, False)])
def test_the_cel_an_older_condition_names_decides_as_it_did(data: dict[str, Any], holds: bool) -> None:
    from tether.cel import compile_condition
    from tether.flow.old_forms import cel_for

    cel = cel_for({"equals": {"size": "large"}, "known": ["size"]})
    assert cel is not None
    assert compile_condition(cel, {"data"}).holds({"data": data}) is holds  # a missing field: false, no error


def _in_a_fresh_interpreter(script: str) -> None:
    """Run ``script`` in a new Python (what it imports is what a CLI command would); it must pass."""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_importing_tether_leaves_celpy_jsonschema_and_opentelemetry_for_their_first_use() -> None:
    # together they took about a quarter of ``import tether``: every CLI command paid it
    script = (
        "import sys, tether, tether.runtime, tether.stores\n"
        "loaded = [m for m in ('celpy', 'lark', 'jsonschema', 'opentelemetry') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
        "from tether import tracing\n"
        "import importlib.util\n"
        "assert tracing.enabled() == (importlib.util.find_spec('opentelemetry') is not None)\n"
        "from tether.cel import compile_condition\n"
        "assert compile_condition('a > 1', {'a'}).holds({'a': 2}) and 'celpy' in sys.modules\n"
    )
    _in_a_fresh_interpreter(script)


def test_importing_tether_builds_no_cel_parser_until_an_expression_is_compiled() -> None:
    # celpy's Lark parser takes a few hundred milliseconds to build: every CLI command would pay it
    script = (
        "import tether, tether.runtime, tether.workflow\n"
        "from celpy.celparser import CELParser\n"
        "assert CELParser.CEL_PARSER is None, 'built at import'\n"
        "from tether.cel import compile_condition\n"
        "assert compile_condition('a > 1', {'a'}).holds({'a': 2})\n"
        "assert CELParser.CEL_PARSER is not None\n"
    )
    _in_a_fresh_interpreter(script)
