"""Every response envelope of ``Runtime.run`` (seed 004), on every store."""

from __future__ import annotations

import json
from collections.abc import Callable

from runtime_helpers import SpyStore, counter_agent, msg
from store_backends import Backend

from tether import Event, Message, Start
from tether.engine.core.session import SESSION_SCHEMA_VERSION, Session
from tether.errors import FlowDefinitionError
from tether.runtime import RunResponse, Runtime
from tether.runtime.window import attach_window
from tether.stores import MemoryStore
from tether.testing import ScriptedModel


async def test_first_request_creates_the_session_with_its_records(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(counter_agent())
    response = await runtime.run("Counter", "hi", config={"plan": "gold"})
    assert response.success and response.completed and response.message == "n=1"
    assert response.content_type == "text/plain" and response.code is None
    # work -> say is a move to another node: the checkpoint creates the session (revision 0) with the
    # records so far, the final save writes the rest (revision 1); each write is document and records together
    assert spy.writes() == [("create", response.session), ("save", response.session)]
    ((_, expected, records),) = spy.saves
    assert expected == 0 and records is not None and [m.text for m in records.messages] == ["n=1"]
    stored = await spy.load(response.session)
    assert stored is not None and stored.revision == 1 and stored.status == "running"
    assert stored.metadata["config"] == {"plan": "gold"} and stored.data["n"] == 1
    assert [m.text for m in await spy.transcript(stored.id)] == ["hi", "n=1"]
    assert [e.type for e in await spy.events(stored.id)][:2] == ["flow-enter", "node-enter"]
    assert stored.messages == [] and stored.window_from == 1  # the window is the transcript records
    assert response.result is not None and response.result.session == await attach_window(spy, stored)
    assert json.loads(response.model_dump_json()) == {
        "success": True, "completed": True, "message": "n=1", "session": stored.id,
        "content_type": "text/plain", "code": None}


async def test_next_request_continues_and_ignores_a_new_config(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(counter_agent())
    first = await runtime.run("Counter", msg(), config={"plan": "gold"})
    second = await runtime.run("Counter", msg(), session_id=first.session, config={"plan": "free"})
    assert second.success and second.session == first.session and second.message == "n=2"
    stored = await spy.load(first.session)
    assert stored is not None
    assert stored.revision == 3  # per request: the checkpoint at work -> say, then the final save (no restore save)
    assert stored.metadata["config"] == {"plan": "gold"}  # a new config cannot reconfigure a running session
    assert second.result is not None and second.result.session is not None
    assert second.result.session.revision == 3  # the in-memory revision follows the store


async def test_unknown_agent_fails_naming_it_without_store_io(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    response = await make_runtime(counter_agent()).run("Ghost", "hi", session_id="s-1")
    assert response.model_dump() == {"success": False, "completed": True, "message": "Agent 'Ghost' not registered.",
                                     "session": "s-1", "content_type": "text/plain", "code": "agent-not-registered"}
    assert spy.calls == []


async def test_bad_model_selection_fails_before_any_session_io(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    unknown = counter_agent("Unknown", model="gpt-4o-mini")
    no_adapter = counter_agent("NoAdapter", model="nowhere:model-x")
    not_a_model = counter_agent("NotAModel", model=42)
    runtime = make_runtime([unknown, no_adapter, not_a_model])
    malformed = "Model selection 'gpt-4o-mini' is not of the form 'provider:model'"
    no_route = ("no adapter is registered for provider 'nowhere' (model 'nowhere:model-x'); for any "
                "OpenAI-compatible server use openai-compatible:<model>")
    for agent_id, fragment in [("Unknown", malformed),
                               ("NoAdapter", no_route),
                               ("NotAModel", "neither a 'provider:model' name nor a Model")]:
        response = await runtime.run(agent_id, "hi", session_id="s-1")
        assert not response.success and response.completed and response.code == "model-configuration"
        assert fragment in response.message and response.session == "s-1"
    assert spy.calls == []  # no load, no create: the store was never touched


async def test_a_model_object_passes_validation(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime(counter_agent(model=ScriptedModel()))
    assert (await runtime.run("Counter", "hi")).success


async def test_missing_completed_and_aborted_ids_get_a_new_session(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(counter_agent())
    missing = await runtime.run("Counter", msg(), session_id="no-such-session")
    assert missing.success and missing.session not in ("", "no-such-session")
    assert await spy.load("no-such-session") is None

    done = await runtime.run("Counter", msg())
    completed = await runtime.complete(done.session)
    assert completed is not None and completed.status == "completed"
    again = await runtime.run("Counter", msg(), session_id=done.session)
    assert again.success and again.session != done.session and again.message == "n=1"
    kept = await spy.load(done.session)
    assert kept is not None and kept.status == "completed" and kept.revision == completed.revision

    # tether writes ``aborted`` no more; a document an older version stored so is not resumed either
    older = await spy.inner.load(again.session)
    assert older is not None
    aborted = await spy.inner.save(older.model_copy(update={"status": "aborted"}), older.revision)
    fresh = await runtime.run("Counter", msg(), session_id=again.session)
    assert fresh.success and fresh.session != again.session and fresh.message == "n=1"
    assert await spy.load(again.session) == aborted


async def test_agent_mismatch_fails_and_leaves_the_document_untouched(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime([counter_agent("A"), counter_agent("B")])
    first = await runtime.run("A", "hi")
    before = await spy.load(first.session)
    spy.calls.clear()
    response = await runtime.run("B", "hi", session_id=first.session)
    assert not response.success and response.completed and response.code == "SESSION_FLOW_MISMATCH"
    assert response.message == f"Session {first.session!r} belongs to agent 'A', not 'B'."
    assert response.session == first.session
    assert spy.writes() == []
    assert await spy.load(first.session) == before


async def test_malformed_document_fails_with_invariant_and_stays_untouched(
    make_runtime: Callable[..., Runtime], spy: SpyStore, backend: Backend
) -> None:
    runtime = make_runtime(counter_agent())
    first = await runtime.run("Counter", "hi")
    await backend.corrupt(first.session, json.dumps({"id": first.session, "agent": "", "created_at": "nope"}))
    spy.calls.clear()
    response = await runtime.run("Counter", "hi", session_id=first.session)
    assert not response.success and response.completed and response.code == "SESSION_FLOW_INVARIANT"
    assert response.session == first.session
    assert spy.writes() == []


async def test_conflict_is_replayed_on_the_fresh_document(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(counter_agent())
    first = await runtime.run("Counter", msg())
    interfered: list[int] = []

    async def other_writer(session: Session, expected: int) -> None:
        if not interfered and spy.saves and len(spy.saves) == 2:  # the turn's save of the second request
            doc = await spy.inner.load(session.id)
            assert doc is not None
            doc.data["other"] = "writer"
            interfered.append((await spy.inner.save(doc, doc.revision)).revision)

    spy.before_save = other_writer
    second = await runtime.run("Counter", Message("again", id="m-replayed"), session_id=first.session)
    assert interfered == [2]
    assert second.success and second.message == "n=2"  # a fresh run, not a duplicate-input
    stored = await spy.load(first.session)
    assert stored is not None and stored.data == {"n": 2, "other": "writer"}
    assert stored.revision == 4  # first request 0-1, other writer 2 (our checkpoint lost), replay 3-4
    assert [m.text for m in await spy.transcript(first.session)] == ["hello", "n=1", "again", "n=2"]


async def test_conflict_is_rejected_under_the_reject_policy(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(counter_agent(), conflict_policy="reject")
    first = await runtime.run("Counter", msg())

    async def other_writer(session: Session, expected: int) -> None:
        doc = await spy.inner.load(session.id)
        assert doc is not None and doc.revision == expected
        await spy.inner.save(doc, doc.revision)

    spy.before_save = other_writer
    response = await runtime.run("Counter", msg(), session_id=first.session)
    assert response.model_dump() == {
        "success": False, "completed": True, "content_type": "text/plain", "code": "SESSION_CONFLICT",
        "message": f"Session {first.session!r} was changed or removed by another request.", "session": first.session}
    stored = await spy.load(first.session)
    assert stored is not None and stored.revision == 2 and stored.data == {"n": 1}  # only the other writer's save


async def test_replays_are_bounded(make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime(counter_agent(), max_replays=2)
    first = await runtime.run("Counter", msg())

    async def always_first(session: Session, expected: int) -> None:
        doc = await spy.inner.load(session.id)
        assert doc is not None
        await spy.inner.save(doc, doc.revision)

    spy.before_save = always_first
    spy.saves.clear()
    response = await runtime.run("Counter", msg(), session_id=first.session)
    assert not response.success and response.code == "SESSION_CONFLICT"
    assert len(spy.saves) == 3  # the first attempt and two replays, each losing its first save (a checkpoint)


async def test_a_store_failure_fails_the_turn_and_writes_nothing_more(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(counter_agent())
    first = await runtime.run("Counter", msg())
    spy.fail_saves = "disk full"
    spy.calls.clear()
    response = await runtime.run("Counter", msg(), session_id=first.session)
    assert not response.success and response.completed and response.code == "SESSION_STORE_ERROR"
    assert response.message == "disk full"
    assert spy.writes() == [("save", first.session)]  # the failed checkpoint, and no save of an abort after it
    stored = await spy.inner.load(first.session)
    assert stored is not None and stored.status == "running" and stored.revision == 1


async def test_other_inputs_run_through_the_same_path(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime(counter_agent())
    first = await runtime.run("Counter", msg())
    started = await runtime.run("Counter", session_id=first.session, start=Start("count", key="k1"))
    assert started.success and started.session == first.session and started.message == "n=2"
    evented = await runtime.run("Counter", session_id=first.session, event=Event("ping", key="e1"))
    assert evented.success and evented.session == first.session
    nothing = await runtime.run("Counter", session_id="nobody", wake="some-key")
    assert nothing.success and nothing.session == "" and nothing.code == "no-session"
    both = await runtime.run("Counter", "hi", wake="k")
    assert not both.success and both.code == "invalid-request"
    assert not (await runtime.run("Counter")).success


async def test_duplicate_agent_ids_are_rejected_at_construction() -> None:
    store = MemoryStore()
    for agents in ([counter_agent("A"), counter_agent("A")], {"B": counter_agent("A")}):
        try:
            Runtime(agents, store=store)
        except FlowDefinitionError as exc:
            assert exc.code in ("duplicate-agent-id", "agent-key-mismatch")
        else:
            raise AssertionError("expected FlowDefinitionError")
    assert set(Runtime({"A": counter_agent("A")}, store=store).agents) == {"A"}


def test_run_sync_runs_a_turn_in_a_fresh_loop(tmp_path: object) -> None:
    store = MemoryStore()
    runtime = Runtime(counter_agent(), store=store)
    first = runtime.run_sync("Counter", msg())
    second = runtime.run_sync("Counter", msg(), session_id=first.session)
    assert isinstance(second, RunResponse) and second.message == "n=2" and second.session == first.session


async def test_a_document_with_a_field_this_tether_does_not_know_is_the_newer_version_error(
    make_runtime: Callable[..., Runtime], spy: SpyStore, backend: Backend
) -> None:
    runtime = make_runtime(counter_agent())
    first = await runtime.run("Counter", "hi")
    stored = await spy.inner.load(first.session)
    assert stored is not None
    newer = {**json.loads(stored.model_dump_json(exclude_none=True)), "mood": "cheerful"}  # same version number
    newer["usage"] = {**newer["usage"], "cache_tokens": 3}
    await backend.corrupt(first.session, json.dumps(newer))
    spy.calls.clear()
    response = await runtime.run("Counter", "hi", session_id=first.session)
    assert not response.success and response.code == "SESSION_VERSION_UNSUPPORTED"
    assert response.message == (
        f"Session {first.session!r} holds fields this tether does not know (mood, usage.cache_tokens) at schema "
        f"version {SESSION_SCHEMA_VERSION}: a newer tether wrote it; upgrade tether to continue it.")
    assert spy.writes() == []  # neither run nor replaced
