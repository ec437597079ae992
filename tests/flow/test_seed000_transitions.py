"""Seed 000, "Transitions": every return value is normalised into goto/end/handoff/escalate/stay
(plus start_flow); anything else raises TransitionError naming the flow, the node and the value."""

from __future__ import annotations

import pytest

from tether import NEXT, Flow, TransitionError, action, end, escalate, goto, handoff, reply, start_flow, stay
from tether.flow.transitions import End, Escalate, Goto, Handoff, StartFlow, Stay, normalize

a = reply("a", response="A", next=lambda turn, state: stay)
b = reply("b", response="B")
FLOW = Flow("f", start=a, nodes=[a, b])


def norm(value: object) -> object:
    return normalize(value, flow="f", node="a", nodes=FLOW.by_id)


def test_registered_node_object_is_a_goto_to_it() -> None:
    assert norm(b) == Goto("b")


def test_goto_with_data_keeps_the_data() -> None:
    assert norm(goto("b", {"x": 1})) == Goto("b", {"x": 1})


def test_goto_accepts_a_registered_node() -> None:
    assert goto(b) == Goto("b")


def test_end_handoff_escalate_start_flow_and_stay_pass_through() -> None:
    assert norm(end("done")) == End("done")
    assert norm(handoff("billing", "needs invoice")) == Handoff("billing", "needs invoice")
    assert norm(escalate("angry")) == Escalate("angry")
    assert norm(start_flow("other", {"k": 1})) == StartFlow("other", {"k": 1})
    assert isinstance(norm(stay), Stay)


def test_the_string_stay_is_stay() -> None:
    assert isinstance(norm("stay"), Stay)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"goto": "b"}, Goto("b")),
        ({"goto": "b", "data": {"x": 1}}, Goto("b", {"x": 1})),
        ({"end": "booked"}, End("booked")),
        ({"handoff": "billing", "reason": "invoice"}, Handoff("billing", "invoice")),
        ({"handoff": "billing"}, Handoff("billing", None)),
        ({"escalate": "angry"}, Escalate("angry")),
    ],
)
def test_the_seed_dict_forms(value: dict[str, object], expected: object) -> None:
    assert norm(value) == expected


@pytest.mark.parametrize("value", [None, 42, "b", "nonsense", {}, {"goto": 3}, ["b"], object()])
def test_anything_else_raises_naming_flow_node_and_value(value: object) -> None:
    with pytest.raises(TransitionError) as info:
        norm(value)
    message = str(info.value)
    assert "'f'" in message and "'a'" in message
    assert repr(value)[:20] in message


def test_goto_an_unknown_id_raises() -> None:
    with pytest.raises(TransitionError, match="'nope'"):
        norm(goto("nope"))
    with pytest.raises(TransitionError, match="'nope'"):
        norm({"goto": "nope"})


def test_returning_an_unregistered_inline_node_raises_inline_transition_target() -> None:
    inline = reply("b", response="an impostor with a registered id")
    with pytest.raises(TransitionError) as info:
        norm(inline)
    assert info.value.code == "inline-transition-target"
    assert "inline-transition-target" in str(info.value)


def test_returning_a_thunk_raises_inline_transition_target() -> None:
    with pytest.raises(TransitionError) as info:
        norm(lambda: b)
    assert info.value.code == "inline-transition-target"


def test_transition_error_is_a_runtime_error_with_a_stable_code() -> None:
    with pytest.raises(RuntimeError) as info:
        norm(42)
    assert info.value.code == "invalid-transition"  # type: ignore[attr-defined]


def test_next_resolves_to_the_following_node_then_end_after_the_last() -> None:
    x = action("x", lambda s, c: None)
    y = action("y", lambda s, c: None)
    flow = Flow("g", nodes=[x, y])
    assert flow.resolve_static("x", NEXT) == Goto("y")
    assert flow.resolve_static("y", NEXT) == End("end")


def test_goto_rejects_bad_targets_and_bad_data_at_construction() -> None:
    with pytest.raises(TypeError):
        goto("")
    with pytest.raises(TypeError):
        goto("b", data=[1, 2])  # type: ignore[arg-type]
