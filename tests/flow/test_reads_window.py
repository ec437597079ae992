"""Whether an agent's model calls can read the conversation window beyond its latest messages
(``reads_window``), decided once from its definition: compaction folds the window into a summary
only for an agent that can. Only understand and speak calls read the window; extract and decide
read the latest four messages, agent steps their own memory, actions their prompt."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from tether import Agent, Field, Flow, action, agent, collect, decide, end, goto, on_mention, on_message, reply, router
from tether.flow.nodes import branch


class _Triage(BaseModel):
    priority: str


def _fields(extract: str | None = "asked") -> dict[str, Field]:
    return {"device": Field("string", description="The device", extract=extract),  # type: ignore[arg-type]
            "problem": Field("string", description="What is wrong", extract=extract)}  # type: ignore[arg-type]


def _nodes(*, opened: Any = None, details: Any = None) -> list[Any]:
    return [
        details or collect("details", fields=["device", "problem"], ask="Which device, and what is wrong?"),
        decide("triage", schema=_Triage, instructions="How urgent is the ${device}: ${problem}?",
               decide=lambda d, s: goto("opened")),
        opened or reply("opened", response="Ticket opened for your ${device}.", next=end("opened")),
    ]


def _intake(*, nodes: list[Any] | None = None, on: list[Any] | None = None, extract: str | None = "asked",
            **flow: Any) -> Agent:
    intake = Flow("intake", "Report a broken device", nodes=nodes or _nodes(),
                  on=on or [on_message(repeat="always")], **flow)
    return Agent("Iris", fields=_fields(extract), flows=[intake], idle="silent")


def test_an_intake_form_of_extract_and_decide_calls_reads_only_the_latest_messages() -> None:
    assert _intake().reads_window is False
    # code, routing, agent steps and actions: none reads the conversation window
    fixed = [router("route", when=lambda s: True, then="details", else_="details"), *_nodes(),
             action("log", run=lambda ctx: None)]
    assert _intake(nodes=fixed).reads_window is False
    steps = Agent("Iris", flows=[Flow("chat", "Chat", nodes=[agent("helper", prompt="Help.")],
                                      on=[on_message(repeat="always")])], idle="silent")
    assert steps.reads_window is False


READERS: dict[str, Callable[[], Agent]] = {
    "an idle voice (speak)": lambda: Agent("Iris", fields=_fields(), flows=list(_intake().flows)),
    "a reply the model phrases (speak)": lambda: _intake(
        nodes=_nodes(opened=reply("opened", instructions="Confirm the ticket.", next=end("opened")))),
    "a question the model phrases (speak)": lambda: _intake(
        nodes=_nodes(details=collect("details", fields=["device", "problem"], prompt="Ask about the device."))),
    "a staying flow (speak)": lambda: _intake(on_end="stay"),
    "a scored trigger (understand)": lambda: _intake(on=[on_message("my device is broken", repeat="always")]),
    "a mention (understand)": lambda: _intake(on=[on_message(repeat="always"), on_mention("urgent")]),
    "a branch the model judges (understand)": lambda: _intake(nodes=_nodes(details=collect(
        "details", fields=["device", "problem"], ask="Which device?",
        branches=[branch(end("gave-up"), when="the customer gives up")]))),
    "a field extracted anywhere (understand)": lambda: _intake(extract=None),
}


@pytest.mark.parametrize("reader", list(READERS))
def test_a_call_that_reads_the_window_is_seen_in_the_definition(reader: str) -> None:
    assert READERS[reader]().reads_window is True


def test_new_flows_decide_it_again_and_a_retired_version_still_counts() -> None:
    form = _intake()
    chat = Flow("chat", "Chat", nodes=[reply("talk", instructions="Chat.")], on=[on_message("hello")])
    assert form.with_flows(chat).reads_window is True
    speaking = READERS["a reply the model phrases (speak)"]()
    assert speaking.reads_window is True
    fixed = speaking.with_flows(_intake().flows[0])
    # a run parked on the replaced version finishes on it, and may still speak
    assert fixed.retired_flows and fixed.reads_window is True
    assert form.with_retired_flows(speaking.flows[0]).reads_window is True
