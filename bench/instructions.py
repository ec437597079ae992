"""The hosted turn against the pure turn in instructions executed, not in time.

On a shared machine the time of a turn moves by 2x between runs (other tenants, a busy host), and
the hosted/pure ratio of ``bench/runtime_turns.py`` with it. The instructions a turn executes do
not: this bench runs the same booking conversations as ``runtime_turns.py`` under valgrind's
callgrind (``Agent.turn`` alone, then ``Runtime`` + ``MemoryStore``), each once with its
conversations and once with none, and divides the difference by the turns, so the interpreter's
start and the imports drop out. PYTHONHASHSEED is fixed: two runs of one version print the same
counts. It takes a few minutes (callgrind runs Python about 50 times slower).

    python bench/instructions.py [--conversations 2]
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
        if mode == "pure":
            await pure(1, 8)
            if conversations:
                await pure(conversations, TURNS)
        else:
            await hosted(lambda c: MemoryStore(), 1, 8)
            if conversations:
                await hosted(lambda c: MemoryStore(), conversations, TURNS)

    asyncio.run(main())


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


def main(conversations: int) -> None:
    if shutil.which("valgrind") is None:
        print("skipped: valgrind is not installed (apt-get install valgrind)")
        return
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
    main(parser.parse_args().conversations)
