"""A speak call that fails for good (a fatal provider error, or the retry ladder exhausted) ends the
run, as seed 003 says, and says so: an error event, the session's error log and the agent's failure
reply (DESIGN §9: a customer is never left without a word)."""

from __future__ import annotations

from typing import Any

from tether import Agent, Field, Flow, Message, action, collect, enum_check, goto, on_message, reply
from tether.engine.core.events import ErrorEvent
from tether.errors import ModelError
from tether.models.types import ModelRequest
from tether.testing import FakeClock, FunctionModel

confirm = reply("confirm", instructions="Confirm the booking.")
AGENT = Agent(name="Booker", instructions="You book things.",
              flows=[Flow("book", description="Book a table", start=confirm, nodes=[confirm], on=[on_message()])])


def _failing(kind: str) -> FunctionModel:
    def answer(request: ModelRequest) -> str:
        raise ModelError(f"provider said no ({kind})", kind=kind)  # type: ignore[arg-type]

    return FunctionModel(answer)


async def test_a_fatal_speak_failure_ends_the_run_loudly() -> None:
    result = await AGENT.with_model(_failing("auth")).turn(None, Message("book me a table", id="m1"))
    assert [e.reason for e in result.ended] == ["failed"]
    assert result.text == AGENT.failure_reply
    errors = [e for e in result.events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1 and errors[0].flow == "book" and errors[0].node == "confirm"
    assert "provider said no" in errors[0].error
    (entry,) = result.session.error
    assert entry.level == "error" and "confirm" in entry.message and "provider said no" in entry.message


async def test_a_retryable_speak_failure_stays_quiet_and_retries() -> None:
    result = await AGENT.with_model(_failing("overload")).turn(None, Message("book me a table", id="m1"))
    assert result.ended == [] and result.text == ""
    assert [w.key for w in result.schedule] and not result.session.error


async def test_an_idle_speaker_failure_is_said_not_left_unanswered() -> None:
    idle_only = Agent(name="Idle", instructions="You chat.", flows=[])
    result = await idle_only.with_model(_failing("overload")).turn(None, Message("hello", id="m1"))
    assert result.text == idle_only.failure_reply
    assert [o.status for o in result.outcomes if o.kind == "idle"] == ["failed"]
    assert [e.error for e in result.events if isinstance(e, ErrorEvent)] == [
        "the idle speaker could not reply: provider said no (overload)"]
    assert len(result.session.error) == 1


async def test_a_reply_with_a_fallback_says_it_when_its_speak_call_fails() -> None:
    book = action("book", lambda state, ctx: goto("booked", data={"party": 4}), targets=["booked"])
    booked = reply("booked", instructions="Confirm the booking.", fallback="Booked for ${party}.")
    agent = Agent(name="Booker", instructions="You book things.", fields={"party": Field("integer")},
                  flows=[Flow("book", start=book, nodes=[book, booked], on=[on_message()])])
    for kind in ("overload", "auth"):  # a retry would wait, a fatal error would end: the author's text is said now
        result = await agent.with_model(_failing(kind)).turn(None, Message("book for 4", id="m1"))
        assert result.text == "Booked for 4." and all(r.status != "waiting" for r in result.session.runs), kind
        assert not result.schedule and "could not speak" in result.session.warn[-1].message


async def test_a_side_question_the_model_cannot_answer_leaves_the_steps_question_and_its_task() -> None:
    calls: list[str] = []

    def answer(request: ModelRequest) -> Any:
        calls.append(request.call)
        if request.call == "speak":
            raise ModelError("the answer was refused", kind="content")
        return {"size": None, "_asks": True}

    size = collect("size", fields=["size"], ask="Which size?", resolvers=[enum_check("size", ["small", "large"])])
    done = reply("done", response="A ${size} one.")
    agent = Agent(name="Pia", fields={"size": Field("enum", enum=("small", "large"))},
                  flows=[Flow("order", start=size, nodes=[size, done], on=[on_message()])])
    model = FunctionModel(answer)
    first = await agent.with_model(model).turn(None, Message("a pizza", id="m1"))
    asked = await agent.with_model(model).turn(first.session, Message("how big are they?", id="m2"))
    assert asked.text == "Which size?" and asked.ended == [] and "speak" in calls
    assert [r.node for r in asked.session.runs] == ["size"]
    done_ = await agent.with_model(model).turn(asked.session, Message("large", id="m3"))
    assert done_.text == "A large one."


async def test_a_reply_cut_off_inside_its_json_is_no_message_and_the_fallback_is_said() -> None:
    booked = reply("booked", instructions="Confirm the booking.", fallback="Booked.")
    agent = Agent(name="Booker", flows=[Flow("book", start=booked, nodes=[booked], on=[on_message()])])
    cut = FunctionModel(lambda request: '{"message": "Your table is booked for')
    result = await agent.with_model(cut).turn(None, Message("book it", id="m1"))
    assert result.text == "Booked."  # never the raw JSON fragment


async def test_a_speak_call_is_told_todays_date() -> None:
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> Any:
        seen.append(request)
        return {"message": "Refunds are open for 30 days after delivery."}

    talk = reply("talk", instructions="Answer about refunds.")
    agent = Agent(name="Sam", flows=[Flow("talk", start=talk, nodes=[talk], on=[on_message()])])
    clock = FakeClock("2026-03-06T10:00:00Z")
    await agent.with_model(FunctionModel(answer)).with_clock(clock).turn(None, Message("can I still return it?"))
    assert seen[0].instructions.startswith("Today: Friday 2026-03-06\n\n")  # the per-turn part: the prefix stays
    assert "2026" not in seen[0].system
