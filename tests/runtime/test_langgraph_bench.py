"""``bench/langgraph_turns.py`` runs: its tether side says the booking, it skips cleanly without
LangGraph (not a tether dependency), and with LangGraph installed both sides say the same replies.
No timings are checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import langgraph_turns
from langgraph_turns import EXPECTED, converse, tether_runtime

from tether.stores import MemoryStore, SQLiteStore, Store

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_the_tether_side_says_the_booking(backend: str, tmp_path: Path) -> None:
    store: Store = MemoryStore() if backend == "memory" else SQLiteStore(tmp_path / "bench.db")
    runtime, turn = tether_runtime(store)
    timings: list[tuple[float, float]] = []
    try:
        for conversation in range(2):
            await converse(turn, conversation, timings)  # checks each reply against EXPECTED
    finally:
        await runtime.close()
    assert len(timings) == 2 * len(EXPECTED)


def test_without_langgraph_the_bench_says_how_to_install_it_and_exits_0() -> None:
    hide = ("import runpy, sys; sys.modules['langgraph'] = None; sys.argv = ['langgraph_turns.py', '--rounds', '1']; "
            f"runpy.run_path({str(BENCH / 'langgraph_turns.py')!r}, run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "LangGraph is not installed" in done.stdout
    assert "pip install langgraph langgraph-checkpoint-sqlite" in done.stdout
    assert "tether memory" not in done.stdout  # nothing was measured


async def test_with_langgraph_one_round_measures_every_system(tmp_path: Path) -> None:
    if langgraph_turns.MISSING is not None:
        pytest.skip(f"LangGraph is not installed ({langgraph_turns.INSTALL})")
    results = await langgraph_turns.measure(1, 1, "async", tmp_path)  # each reply checked against EXPECTED
    assert results.turns == len(EXPECTED)
    assert all(len(measured) == 1 for measured in results.rounds.values())
    assert {name: commits.count > 0 for name, commits in results.commits.items()} == {
        langgraph_turns.TETHER_SQLITE: True, langgraph_turns.LANGGRAPH_SQLITE: True,
        langgraph_turns.LANGGRAPH_SQLITE_ASYNC: True}
    assert all(pragmas.startswith("journal_mode=wal") for pragmas in results.pragmas.values())
