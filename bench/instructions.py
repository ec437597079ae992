"""The hosted turn against the pure turn in instructions executed, not in time.

On a shared machine the time of a turn moves by 2x between runs (other tenants, a busy host), and
the hosted/pure ratio of ``bench/runtime_turns.py`` with it. The instructions a turn executes do
not: this bench runs the same booking conversations as ``runtime_turns.py`` under valgrind's
callgrind (``Agent.turn`` alone, then ``Runtime`` + ``MemoryStore``), each once with its
conversations and once with none, and divides the difference by the turns, so the interpreter's
start and the imports drop out. PYTHONHASHSEED is fixed: two runs of one version print the same
counts. It takes a few minutes (callgrind runs Python about 50 times slower).

``--langgraph`` counts instead the 4-turn bookings of ``bench/langgraph_turns.py`` (each a new
conversation): tether's ``Runtime`` + ``MemoryStore`` against LangGraph's ``ainvoke`` with
``InMemorySaver``. It is a stable ratio to compare versions of tether by, not the goal's: in one
run it was 0.37x in instructions while the CPU time ratio was 0.26x (LangGraph's turn runs fewer
instructions per cycle).

    python bench/instructions.py [--conversations 2]
    python bench/instructions.py --langgraph [--bookings 30]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
TURNS = 100


def child(mode: str, conversations: int) -> None:
    """Run in the child: warm up, then ``conversations`` x ``TURNS`` turns of ``mode``."""
    import asyncio

    sys.path.insert(0, str(HERE))
    from runtime_turns import hosted, pure

    from tether.stores import MemoryStore

    async def main() -> None:
        if mode in ("tether-bookings", "langgraph-bookings"):
            await bookings(mode, conversations)
        elif mode == "pure":
            await pure(1, 8)
            if conversations:
                await pure(conversations, TURNS)
        else:
            await hosted(lambda c: MemoryStore(), 1, 8)
            if conversations:
                await hosted(lambda c: MemoryStore(), conversations, TURNS)

    asyncio.run(main())


async def bookings(mode: str, count: int) -> None:
    """``count`` 4-turn bookings of ``bench/langgraph_turns.py`` on tether or LangGraph, after 5 to warm up."""
    import langgraph_turns

    from tether.stores import MemoryStore

    runtime = None
    if mode == "tether-bookings":
        runtime, turn = langgraph_turns.tether_runtime(MemoryStore())
    else:
        saver = langgraph_turns.InMemorySaver()
        turn = langgraph_turns.langgraph_async(langgraph_turns.langgraph_booking(saver), "async")
    for conversation in range(-5, count):
        await langgraph_turns.converse(turn, conversation, [])
    if runtime is not None:
        await runtime.close()


def instructions(mode: str, conversations: int) -> int:
    """The instructions callgrind counted for the child run (``Collected : N``)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__,
         "--child", mode, str(conversations)],
        env=env, capture_output=True, text=True, check=True)
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def side_by_side(count: int) -> None:
    """Instructions per turn of tether's and LangGraph's bookings (``--langgraph``)."""
    modes = ("tether-bookings", "langgraph-bookings")
    runs = [(mode, n) for mode in modes for n in (0, count)]
    with ThreadPoolExecutor(len(runs)) as pool:
        counts = dict(zip(runs, pool.map(lambda run: instructions(*run), runs), strict=True))
    tether, langgraph = ((counts[(mode, count)] - counts[(mode, 0)]) / (4 * count) for mode in modes)
    print(f"booking: {count} bookings x 4 turns per system, instructions per turn (callgrind)")
    print(f"{'Runtime + MemoryStore':<36} {tether:>14,.0f}")
    print(f"{'LangGraph ainvoke + InMemorySaver':<36} {langgraph:>14,.0f}")
    print(f"{'tether / LangGraph':<36} {tether / langgraph:>14.3f}x  (instructions; the goal is on CPU time: "
          "bench/langgraph_turns.py)")


def main(conversations: int) -> None:
    runs = [(mode, n) for mode in ("pure", "hosted") for n in (0, conversations)]
    with ThreadPoolExecutor(len(runs)) as pool:
        counts = dict(zip(runs, pool.map(lambda run: instructions(*run), runs), strict=True))
    turns = conversations * TURNS
    per_turn = {mode: (counts[(mode, conversations)] - counts[(mode, 0)]) / turns for mode in ("pure", "hosted")}
    print(f"booking conversation: {conversations} x {TURNS} turns, instructions per turn (callgrind)")
    print(f"{'Agent.turn, pure (floor)':<36} {per_turn['pure']:>14,.0f}")
    print(f"{'Runtime + MemoryStore':<36} {per_turn['hosted']:>14,.0f}  "
          f"{per_turn['hosted'] / per_turn['pure']:.3f}x pure (goal <= 2)")
    print(f"{'  of which the hosting':<36} {per_turn['hosted'] - per_turn['pure']:>14,.0f}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--langgraph", action="store_true", help="tether's bookings against LangGraph's")
    parser.add_argument("--bookings", type=int, default=30, help="with --langgraph: bookings per system")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("skipped: valgrind is not installed (apt-get install valgrind)")
    elif args.langgraph:
        sys.path.insert(0, str(HERE))
        from langgraph_turns import INSTALL, MISSING

        if MISSING is not None:
            print(f"LangGraph is not installed (no module {MISSING!r}): skipped. To run it: {INSTALL}")
        else:
            side_by_side(args.bookings)
    else:
        main(args.conversations)
