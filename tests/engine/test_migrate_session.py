"""``migrate_session`` (seed 003 Load, falai reference §1.10): a blob from the seed's previous major
version (3.x) becomes a current session, a current document passes through validated, and
anything else is refused naming the session, never turned into a fresh conversation."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from tether import Agent, Field, Flow, Message, Session, collect, end, migrate_session, on_message, reply
from tether.errors import SessionFlowInvariant, SessionFlowMismatch
from tether.testing import FakeClock, ScriptedModel, SequentialIds

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def legacy_blob() -> dict[str, Any]:
    """A 3.x ``SessionState`` as its stores wrote it (JSON: dates are ISO text or epoch ms)."""
    return {
        "id": "s1",
        "version": 7,
        "data": {"name": "Ana", "size": 3},
        "currentFlow": {"id": "old-booking", "enteredAt": "2025-12-01T10:00:00.000Z"},
        "currentStep": {"id": "ask_date"},
        "flowHistory": [
            {"flowId": "welcome", "completed": True, "enteredAt": "2025-11-30T09:00:00Z",
             "exitedAt": "2025-11-30T09:05:00Z"},
            {"flowId": "survey", "completed": False, "enteredAt": "2025-11-30T09:06:00Z"},
        ],
        "signals": {"triggers": {"upsell": {"firstTriggeredAt": 1764500000000, "lastTriggeredAt": 1764600000000}}},
        "pendingDirective": {"type": "goto", "step": "x"},
        "metadata": {"channel": "whatsapp", "seen": datetime(2025, 11, 29, 8, 0, tzinfo=UTC)},
        "history": [
            {"role": "user", "content": "I want to book a table"},
            {"role": "assistant", "content": "For which date?"},
            {"role": "tool", "content": "{}"},
        ],
    }


def renamed(key: str) -> str:
    return {"old-booking": "booking"}.get(key, key)


def test_a_3x_blob_becomes_a_current_session() -> None:
    session = migrate_session(legacy_blob(), session_id="s1", agent="Bot", flow_id_of=renamed, now=NOW)
    assert isinstance(session, Session)
    assert (session.id, session.agent, session.revision, session.status) == ("s1", "Bot", 7, "running")
    assert session.data == {"name": "Ana", "size": 3}
    (run,) = session.runs
    assert (run.id, run.flow, run.node, run.status) == ("booking#legacy", "booking", "ask_date", "asking")
    assert (run.anchor, run.dedupe_key, run.trigger.kind, run.trigger.key) == ("s1", "booking:s1:", "message", "legacy")
    assert run.started_at == datetime(2025, 12, 1, 10, 0, tzinfo=UTC)
    assert {key: claim.at for key, claim in session.claims.items()} == {
        "welcome:s1:": datetime(2025, 11, 30, 9, 5, tzinfo=UTC),  # completed: claimed at its exit
        "upsell:s1:": datetime.fromtimestamp(1764600000, tz=UTC),  # fired: claimed at its last firing
        "booking:s1:": datetime(2025, 12, 1, 10, 0, tzinfo=UTC),  # the live run's own claim
    }
    assert session.inputs == []
    assert session.metadata == {"channel": "whatsapp", "seen": "2025-11-29T08:00:00+00:00"}
    assert [(m.seq, m.role, m.text) for m in session.messages] == [
        (1, "user", "I want to book a table"), (2, "assistant", "For which date?")]
    assert session.message_seq == 2
    assert "pendingDirective" not in session.model_dump_json()
    json.loads(session.model_dump_json())  # the result round-trips through JSON


def test_a_flow_entered_before_its_first_step_is_a_fresh_running_run() -> None:
    blob = {"data": {}, "currentFlow": "booking"}
    (run,) = migrate_session(blob, session_id="s1", agent="Bot", now=NOW).runs
    assert (run.node, run.status, run.started_at) == (None, "running", NOW)


def test_a_bare_3x_blob_defaults_version_and_stamps_with_now() -> None:
    blob = {"data": {"x": 1}, "flowHistory": [{"flowId": "welcome", "completed": True}]}
    session = migrate_session(blob, session_id="s1", agent="Bot", now=NOW)
    assert session.revision == 0 and session.runs == [] and session.messages == []
    assert session.claims["welcome:s1:"].at == NOW


def test_a_current_document_passes_through_without_store_bookkeeping() -> None:
    original = migrate_session(legacy_blob(), session_id="s1", agent="Bot", now=NOW)
    stored = json.loads(original.model_dump_json()) | {"_id": "row-9", "_rev": "3-abc"}
    again = migrate_session(stored, session_id="s1", agent="Bot", now=NOW)
    assert again == original


def test_a_current_document_of_another_agent_is_a_mismatch() -> None:
    stored = json.loads(migrate_session({"data": {}}, session_id="s1", agent="Bot", now=NOW).model_dump_json())
    with pytest.raises(SessionFlowMismatch):
        migrate_session(stored, session_id="s1", agent="Other", now=NOW)


@pytest.mark.parametrize(
    ("blob", "why"),
    [
        ([], "expected an object"),
        ("text", "expected an object"),
        ({"runs": []}, "data is null"),
        ({"data": []}, "data is a list"),
        ({"data": {}, "version": -1}, "version is -1"),
        ({"data": {}, "version": "7"}, "version is '7'"),
        ({"data": {}, "metadata": []}, "metadata is a list"),
        ({"data": {}, "history": {}}, "history is an object"),
        ({"data": {}, "flowHistory": [{"completed": True}]}, "flowHistory[0]"),
        ({"data": {}, "signals": {"triggers": []}}, "signals"),
        ({"data": {}, "currentFlow": 42}, "currentFlow is 42"),
        ({"schema_version": 1, "id": "s1", "agent": "Bot"}, "created_at"),
        ({"schema_version": 1, "id": "other", "agent": "Bot", "created_at": "2026-01-01T00:00:00Z"}, "id is 'other'"),
    ],
)
def test_an_unreadable_blob_is_refused_naming_the_session(blob: Any, why: str) -> None:
    with pytest.raises(SessionFlowInvariant) as info:
        migrate_session(blob, session_id="s1", agent="Bot", now=NOW)
    assert "'s1'" in info.value.message and why in info.value.message
    assert info.value.code == "SESSION_FLOW_INVARIANT"


async def test_a_migrated_session_continues_the_conversation_at_its_step() -> None:
    """The legacy run asks at its step: the customer's answer completes it, no field is asked again."""
    ask_date = collect("ask_date", fields=["date"], ask="For which date?")
    done = reply("done", response="Booked ${name} for ${date}.", next=end("booked"))
    booking = Flow("booking", nodes=[ask_date, done], on=[on_message("book a table")])
    agent = Agent("Bot", fields={"name": Field("string"), "date": Field("string")}, flows=[booking], idle="silent")
    agent = agent.with_clock(FakeClock(), SequentialIds("s")).with_model(ScriptedModel(extract=[{"date": "Friday"}]))
    session = migrate_session(legacy_blob(), session_id="s1", agent="Bot", flow_id_of=renamed, now=NOW)
    result = await agent.turn(session, Message("Friday please"))
    assert result.text == "Booked Ana for Friday."
    assert [(e.flow, e.reason) for e in result.ended] == [("booking", "booked")]
