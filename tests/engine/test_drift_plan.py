"""The drift verdict for one parked run (shared by the turn and ``tether drift``): continue at
its node when it still exists with the kind the run needs and its unfinished action's journal
still matches; else the flow's ``on_drift``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tether import Flow, action, collect, reply, wait
from tether.durable.entries import JournalEntry
from tether.engine.core.drift_plan import NODE_KIND, plan_drift
from tether.engine.core.session import Run, RunTrigger, WaitingOn

AT = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def run_at(node: str, *, status: Any = "asking", waiting: str | None = None, kind: str | None = None) -> Run:
    run = Run(id="r1", flow="f", node=node, status=status, trigger=RunTrigger(kind="message", key="k"),
              started_at=AT, digest="sha256:old", visits={node: 1},
              waiting=WaitingOn(kind=waiting, key="w", set_at=AT) if waiting else None)  # type: ignore[arg-type]
    if kind is not None:
        run.state[NODE_KIND] = kind
    return run


def flow(second: Any, on_drift: Any = "error") -> Flow:
    return Flow("f", nodes=[reply("start", response="hi", next=second), second], on_drift=on_drift)


def test_a_run_at_a_node_of_the_same_kind_continues() -> None:
    plan = plan_drift(run_at("ask", kind="collect"), flow(collect("ask", fields=["x"], ask="X?")))
    assert (plan.verdict, plan.node) == ("continue", "ask") and plan.pinned == "sha256:old"


def test_an_unchanged_flow_is_unchanged_and_a_gone_flow_ends() -> None:
    current = flow(collect("ask", fields=["x"], ask="X?"))
    run = run_at("ask")
    run.digest = current.digest
    assert plan_drift(run, current).verdict == "unchanged"
    assert plan_drift(run, None).verdict == "end"


def test_without_a_recorded_kind_the_position_says_which_kind_the_run_needs() -> None:
    timer = run_at("pause", status="waiting", waiting="timer")  # parked before kinds were recorded
    plan = plan_drift(timer, flow(reply("pause", response="now a reply")))
    assert plan.verdict == "error" and "waits on a timer at 'pause', which is now a reply node" in plan.reason
    assert plan_drift(timer, flow(wait("pause", timer="1h"))).verdict == "continue"
    asking = plan_drift(run_at("ask"), flow(action("ask", lambda s, c: None)))
    assert asking.verdict == "error" and "asking at 'ask'" in asking.reason


def test_an_unfinished_action_whose_journal_names_a_tool_it_no_longer_uses_meets_the_policy() -> None:
    entry = JournalEntry(run_id="r1", key="r1:pay:1:0", kind="tool", name="charge_card", at=AT)
    waiting = run_at("pay", status="waiting", waiting="approval", kind="action")
    kept = flow(action("pay", lambda s, c: None, uses=["charge_card", "refund"]), on_drift="restart")
    assert plan_drift(waiting, kept, [entry]).verdict == "continue"
    changed = plan_drift(waiting, flow(action("pay", lambda s, c: None, uses=["refund"]), on_drift="restart"), [entry])
    assert changed.verdict == "restart" and changed.node == "start"
    assert "recorded a call of tool 'charge_card'" in changed.reason and "no longer matches" in changed.reason
    other_visit = entry.model_copy(update={"key": "r1:pay:0:0"})  # an earlier visit: finished, not replayed
    assert plan_drift(waiting, flow(action("pay", lambda s, c: None, uses=["refund"])), [other_visit]).verdict \
        == "continue"


def test_a_migration_is_previewed_on_a_copy_of_the_state() -> None:
    def migrate(node: str | None, state: dict[str, Any]) -> str:
        state["touched"] = True
        return "start"

    run = run_at("gone")
    plan = plan_drift(run, flow(collect("ask", fields=["x"], ask="X?"), on_drift=migrate), try_migration=True)
    assert (plan.verdict, plan.node) == ("migrate", "start") and "touched" not in run.state
    wrong = plan_drift(run, flow(collect("ask", fields=["x"], ask="X?"), on_drift=lambda n, s: "nowhere"),
                       try_migration=True)
    assert wrong.verdict == "error" and "'nowhere'" in wrong.reason
