"""Child steps: ``ctx.run_step`` (nested, cannot move the cursor, state persists) and
``ctx.run_steps`` (parallel: snapshot isolation, request order, conflicts, reducers, failure
policies, caps)."""

from __future__ import annotations

from typing import Any

from tether import Agent, Flow, agent, direct, go, on_message, stay, tool
from tether.engine.step.children import MAX_DEPTH, MAX_INVOCATIONS
from tether.models.types import ModelRequest, ModelResponse
from tether.testing import FunctionModel

from .helpers import Chat, calls

entered: list[str] = []


@tool
def score(points: int) -> Any:
    """Record a score."""
    return stay().with_state({"score": points})


@tool
def wander() -> Any:
    """Try to move the cursor."""
    return go("owner")


def child(name: str, **options: Any) -> Any:
    return agent(name, prompt=f"You are {name}.", tools=[score, wander],
                 on_enter=lambda ctx: entered.append(f"{name}.enter seen={ctx.state.get('score')}"),
                 on_exit=lambda ctx: entered.append(f"{name}.exit"), **options)


def owner_agent(handler: Any, *children: Any) -> Agent:
    owner = agent("owner", prompt="You own the work.", tools=["work"], handlers={"work": handler})
    flow = Flow("kids", nodes=[owner, *children], on=[on_message()])

    @tool
    def work() -> str:
        """Do the work."""
        return "unused"

    return Agent("Kids", tools=[work], flows=[flow])


def by_system(replies: dict[str, list[Any]]) -> FunctionModel:
    """A model answering each step (told apart by its prompt) from its own queue."""
    def answer(request: ModelRequest) -> Any:
        queue = replies[request.system]
        return queue.pop(0)

    return FunctionModel(answer)


async def test_run_step_returns_the_childs_reply_keeps_its_memory_and_state_and_not_the_cursor() -> None:
    entered.clear()

    async def handler(args: dict[str, Any], ctx: Any) -> Any:
        content = await ctx.run_step("alpha", "rate this")
        return direct(f"alpha said {content}; score {ctx.state['score']}")

    model = by_system({"You own the work.": ["Hi", calls(("work", {}))],
                       "You are alpha.": [calls(("score", {"points": 7})), "seven"]})
    chat = Chat(owner_agent(handler, child("alpha")), model)
    await chat.say("hi")
    result = await chat.say("do it")
    assert result.text == "alpha said seven; score 7" and chat.node == "owner"
    assert entered == ["alpha.enter seen=None", "alpha.exit"]
    assert chat.session is not None and [m["content"] for m in chat.session.memory["alpha"].messages] == \
        ["rate this", "", "input validated", "seven"]
    assert chat.session.runs[0].state["score"] == 7  # the child's state persists with the owner's save


async def test_a_move_inside_a_child_is_an_error() -> None:
    async def handler(args: dict[str, Any], ctx: Any) -> Any:
        await ctx.run_step("alpha")
        return stay()

    model = by_system({"You own the work.": ["Hi", calls(("work", {}))], "You are alpha.": [calls(("wander", {}))]})
    chat = Chat(owner_agent(handler, child("alpha")), model)
    await chat.say("hi")
    result = await chat.say("do it")
    assert result.text == chat.agent.failure_reply and chat.session is not None
    assert "Cannot goto 'owner' from a child execution frame. Return a result to the owning step instead." in \
        chat.session.error[-1].message


def parallel(reducers: dict[str, Any] | None = None, policy: str = "retain-successes") -> Any:
    async def handler(args: dict[str, Any], ctx: Any) -> Any:
        result = await ctx.run_steps([("alpha", "go"), {"step": "beta", "message": "go"}], reducers=reducers,
                                     failure_policy=policy)
        outcome = [(b.key, b.ok, b.content) for b in result.branches]
        return direct(f"{outcome} score={ctx.state.get('score')}")

    return handler


def two_children_model(beta_reply: Any = "b-done") -> FunctionModel:
    return by_system({"You own the work.": ["Hi", calls(("work", {}))],
                      "You are alpha.": [calls(("score", {"points": 2})), "a-done"],
                      "You are beta.": [calls(("score", {"points": 3})), beta_reply, beta_reply, beta_reply]})


async def test_parallel_children_see_a_snapshot_and_report_in_request_order() -> None:
    entered.clear()
    chat = Chat(owner_agent(parallel({"score": "sum"}), child("alpha"), child("beta")), two_children_model())
    await chat.say("hi")
    result = await chat.say("do it")
    assert result.text == "[('alpha', True, 'a-done'), ('beta', True, 'b-done')] score=5"
    # each child saw the snapshot, not the other's write
    assert sorted(e for e in entered if "enter" in e) == ["alpha.enter seen=None", "beta.enter seen=None"]
    assert chat.session is not None and set(chat.session.memory) == {"owner"}  # private memories are discarded


async def test_two_children_writing_one_field_without_a_reducer_is_an_error() -> None:
    chat = Chat(owner_agent(parallel(), child("alpha"), child("beta")), two_children_model())
    await chat.say("hi")
    result = await chat.say("do it")
    assert result.text == chat.agent.failure_reply and chat.session is not None
    assert "child steps alpha, beta all wrote 'score'; declare a reducer" in chat.session.error[-1].message


async def test_reducers_append_and_keyed() -> None:
    for reducer, expected in (("append", "[2, 3]"), ("keyed", "{'alpha': 2, 'beta': 3}"),
                              (lambda base, got: max(v for _, v in got), "3")):
        chat = Chat(owner_agent(parallel({"score": reducer}), child("alpha"), child("beta")), two_children_model())
        await chat.say("hi")
        result = await chat.say("do it")
        assert result.text.endswith(f"score={expected}"), (reducer, result.text)


async def test_retain_successes_reports_a_failed_child_and_publishes_the_rest() -> None:
    chat = Chat(owner_agent(parallel(), child("alpha"), child("beta", retry_attempts=1)),
                two_children_model(beta_reply=ModelResponse(text="", finish_reason="stop")))
    await chat.say("hi")
    result = await chat.say("do it")
    assert result.text == "[('alpha', True, 'a-done'), ('beta', False, None)] score=2"


async def test_atomic_publishes_nothing_when_a_child_fails() -> None:
    chat = Chat(owner_agent(parallel(policy="atomic"), child("alpha"), child("beta", retry_attempts=1)),
                two_children_model(beta_reply=ModelResponse(text="", finish_reason="stop")))
    await chat.say("hi")
    result = await chat.say("do it")
    assert result.text == chat.agent.failure_reply and chat.session is not None
    assert "run_steps (atomic) published nothing, 1 child step(s) failed: beta" in chat.session.error[-1].message
    assert "score" not in chat.session.runs[0].state if chat.session.runs else True


async def test_nesting_depth_is_capped() -> None:
    @tool
    def deeper() -> Any:
        """Go one level deeper."""
        return stay()

    async def recurse(args: dict[str, Any], ctx: Any) -> Any:
        await ctx.run_step("loop", "again")
        return stay()

    loop = agent("loop", prompt="Loop.", tools=[deeper], handlers={"deeper": recurse})
    model = by_system({"You own the work.": ["Hi", calls(("work", {}))],
                       "Loop.": [calls(("deeper", {})) for _ in range(MAX_DEPTH + 1)]})

    async def start(args: dict[str, Any], ctx: Any) -> Any:
        await ctx.run_step("loop", "go")
        return stay()

    chat = Chat(owner_agent(start, loop), model)
    await chat.say("hi")
    result = await chat.say("do it")
    assert result.text == chat.agent.failure_reply and chat.session is not None
    assert f"child steps nest deeper than {MAX_DEPTH}" in chat.session.error[-1].message


async def test_invocations_are_capped_per_turn() -> None:
    async def many(args: dict[str, Any], ctx: Any) -> Any:
        await ctx.run_steps([{"step": "alpha", "key": f"k{i}"} for i in range(MAX_INVOCATIONS + 1)])
        return stay()

    def answer(request: ModelRequest) -> Any:
        if request.system == "You own the work.":
            return calls(("work", {})) if len(request.messages) > 2 else "Hi"
        return "ok"

    chat = Chat(owner_agent(many, child("alpha")), FunctionModel(answer))
    await chat.say("hi")
    result = await chat.say("do it")
    assert result.text == chat.agent.failure_reply and chat.session is not None
    assert f"more than {MAX_INVOCATIONS} child steps in one turn" in chat.session.error[-1].message
