"""The window's fold is part of the turn that decided it: a worker SIGKILLed after the understand
call carried the summary, before the save, leaves the stored session as it was (the summary's
inputs are all still in the window), and the retried message folds exactly once, ending where a
run that never crashed ends. A failing save does the same on every backend."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fold_worker import MESSAGES, FoldModel, fold_agent
from runtime_helpers import SpyStore
from test_runtime_processes import assert_integrity, kill_when_marked

from tether import Message
from tether.runtime import Runtime
from tether.stores import SQLiteStore, Store
from tether.testing import FakeClock

WORKER = Path(__file__).with_name("fold_worker.py")


async def _state(store: Store, session_id: str) -> tuple[Any, ...]:
    """What a fold changes: the summary and where the window starts; and the transcript."""
    stored = await store.load(session_id)
    assert stored is not None
    texts = [m.text for m in await store.transcript(session_id)]
    return stored.summary, stored.window_from, texts


async def _reference(tmp_path: Path) -> list[tuple[Any, ...]]:
    """The state after each message of a run that never crashed."""
    runtime = Runtime(fold_agent(FoldModel()), store=SQLiteStore(tmp_path / "reference.db"), clock=FakeClock())
    states = []
    try:
        session_id = None
        for i, text in enumerate(MESSAGES):
            result = await runtime.run("Ava", Message(text, id=f"m{i}"), session_id=session_id)
            assert result.success, result
            session_id = result.session
            states.append(await _state(runtime.store, session_id))
    finally:
        await runtime.close()
    return states


@pytest.mark.slow
async def test_a_worker_killed_between_the_carried_summary_and_the_save_folds_once_on_retry(tmp_path: Path) -> None:
    expected = await _reference(tmp_path)
    folds = [i for i in range(1, len(expected)) if expected[i][0] != expected[i - 1][0]]
    assert len(folds) >= 2, expected  # the conversation folds more than once
    killed = folds[1]  # the second fold: the first summary is merged into the second
    db = tmp_path / "tether.db"
    marker = tmp_path / "marker"
    runtime = Runtime(fold_agent(FoldModel()), store=SQLiteStore(db), clock=FakeClock())
    try:
        session_id = None
        for i, text in enumerate(MESSAGES[:killed]):
            result = await runtime.run("Ava", Message(text, id=f"m{i}"), session_id=session_id)
            session_id = result.session
        assert session_id is not None
        before = await _state(runtime.store, session_id)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(WORKER), str(db), session_id, MESSAGES[killed], f"m{killed}", str(marker),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        await kill_when_marked(proc, marker)  # the understand call carried the summary; nothing is saved yet
        await runtime.close()

        runtime = Runtime(fold_agent(FoldModel()), store=SQLiteStore(db), clock=FakeClock())  # the restart
        assert await _state(runtime.store, session_id) == before  # nothing lost, nothing folded
        for i in range(killed, len(MESSAGES)):  # the client retries its message, then goes on
            result = await runtime.run("Ava", Message(MESSAGES[i], id=f"m{i}"), session_id=session_id)
            assert result.success, result
            assert await _state(runtime.store, session_id) == expected[i]  # folded once, as if never killed
    finally:
        await runtime.close()
    assert_integrity(db)


async def test_a_failed_save_folds_nothing_and_the_retry_folds_once(
        make_runtime: Callable[..., Runtime], spy: SpyStore, tmp_path: Path) -> None:
    expected = await _reference(tmp_path)
    runtime = make_runtime(fold_agent(FoldModel()))
    session_id = None
    for i, text in enumerate(MESSAGES):
        if session_id is not None:
            before = await _state(spy, session_id)
            spy.fail_writes(1)  # every turn's first write fails: nothing of the turn is stored
            failed = await runtime.run("Ava", Message(text, id=f"m{i}"), session_id=session_id)
            assert (failed.success, failed.code) == (False, "SESSION_STORE_ERROR")
            assert await _state(spy, session_id) == before
        result = await runtime.run("Ava", Message(text, id=f"m{i}"), session_id=session_id)
        assert result.success, result
        session_id = result.session
        assert await _state(spy, session_id) == expected[i]  # folded once, as if no save had failed
    assert len({state[0] for state in expected}) >= 3  # None and at least two summaries: it folded twice
