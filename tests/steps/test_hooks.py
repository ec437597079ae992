"""Step hooks by scenario (seed 004's table), the mid-turn save before ``on_crossing``, the
builders' effect order, and ``ctx.config`` (the stored config wins)."""

from __future__ import annotations

from typing import Any

from tether import Agent, Flow, Message, agent, go, on_message, stay, tool
from tether.runtime import Runtime
from tether.stores import MemoryStore
from tether.testing import FakeClock, ScriptedModel

from .helpers import Chat, calls

log: list[str] = []


def hooks(name: str) -> dict[str, Any]:
    def crossing(message: str | None, prior: str | None, ctx: Any) -> str:
        log.append(f"{name}.on_crossing({message}, {prior}) prompt={ctx.state.get('seen_prompt')}")
        return f"arrived from {prior}"

    return {
        "on_enter": lambda ctx: log.append(f"{name}.on_enter state={sorted(k for k in ctx.state if k != 'x')}"),
        "on_exit": lambda ctx: log.append(f"{name}.on_exit"),
        "on_restore": lambda ctx: log.append(f"{name}.on_restore"),
        "on_crossing": crossing,
    }


@tool
def advance() -> Any:
    """Go on to the second step."""
    return go("second").with_state({"seen_prompt": "yes"}).with_prompt("Second, as told.")


@tool
def keep() -> Any:
    """Stay."""
    return stay()


first = agent("first", prompt="First.", tools=[advance, keep], **hooks("first"))
second = agent("second", prompt="Second.", **hooks("second"))
flow = Flow("two", nodes=[first, second], on=[on_message()])
bot = Agent("Hooks", flows=[flow])


async def test_hooks_per_scenario_and_the_effect_order_of_a_move() -> None:
    log.clear()
    checkpoints: list[str | None] = []

    async def checkpoint(session: Any, *_: Any) -> int:
        checkpoints.append(session.runs[0].node if session.runs else None)
        log.append(f"checkpoint at {checkpoints[-1]}")
        return session.revision + 1

    model = ScriptedModel(agent=["one", calls(("keep", {})), "still one", calls(("advance", {})), "two"])
    chat = Chat(bot, model, checkpoint=checkpoint)
    await chat.say("hi")
    # a new session's first step: on_start = on_enter + on_crossing(None, None), then one save
    assert log == ["first.on_enter state=[]", "first.on_crossing(None, None) prompt=None", "checkpoint at first"]
    log.clear()
    await chat.say("stay")
    hooks_only = [line for line in log if not line.startswith("checkpoint")]
    assert hooks_only == ["first.on_restore"]  # a restored step; stay runs no hook
    log.clear()
    await chat.say("next")
    # leaving, arriving (on_enter cannot see the move's state), the mid-turn save, then on_crossing
    assert log == ["first.on_restore",
                   "checkpoint at first", "checkpoint at first",  # the tool's started and finished records
                   "first.on_exit", "second.on_enter state=[]", "checkpoint at second",
                   "second.on_crossing(None, first) prompt=yes"]
    request = model.calls[4].request
    assert request.system == "Second, as told."  # with_prompt landed on the destination
    assert [(m.role, m.content) for m in request.messages] == [("user", "arrived from first")]


async def test_a_custom_on_start_replaces_the_default_and_runs_only_on_a_new_session() -> None:
    started: list[str] = []
    step = agent("only", prompt="Hi.", on_start=lambda ctx: started.append("start") or "Begin",
                 on_enter=lambda ctx: started.append("enter"), on_restore=lambda ctx: started.append("restore"))
    model = ScriptedModel(agent=["hello", "again"])
    chat = Chat(Agent("One", flows=[Flow("one", nodes=[step], on=[on_message()])]), model)
    await chat.say("hi")
    await chat.say("more")
    assert started == ["start", "restore"]
    assert [(m.role, m.content) for m in model.calls[0].request.messages] == [("user", "Begin"), ("user", "hi")]


async def test_ctx_config_is_the_stored_config_a_later_request_cannot_change_it() -> None:
    seen: list[Any] = []
    step = agent("only", prompt="Hi.", on_restore=lambda ctx: seen.append(dict(ctx.config)),
                 on_enter=lambda ctx: seen.append(dict(ctx.config)))
    model = ScriptedModel(agent=["hello", "again"])
    bot_ = Agent("Cfg", flows=[Flow("cfg", nodes=[step], on=[on_message()])]).with_model(model)
    runtime = Runtime(bot_, store=MemoryStore(), clock=FakeClock())
    first = await runtime.run("Cfg", message=Message("hi"), config={"tier": "gold"})
    await runtime.run("Cfg", session_id=first.session, message=Message("more"), config={"tier": "basic"})
    assert seen == [{"tier": "gold"}, {"tier": "gold"}]
