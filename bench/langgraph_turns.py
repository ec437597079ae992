"""Side by side with LangGraph: CPU per hosted booking turn, in memory and on SQLite.

The same four-message booking of ``bench/booking.py`` (no model) runs on tether's ``Runtime`` and
on a LangGraph ``StateGraph`` written for it here, each persisting its state per turn:

* in memory: tether ``Runtime`` + ``MemoryStore`` vs LangGraph + ``InMemorySaver``
  (``MemorySaver``) (goal: tether <= 0.2x LangGraph);
* on SQLite, on a file in a temporary directory: tether ``Runtime`` + ``SQLiteStore`` vs LangGraph
  + ``SqliteSaver`` / ``AsyncSqliteSaver`` (package ``langgraph-checkpoint-sqlite``) (goal: tether
  <= 0.3x LangGraph). Both run in WAL mode at ``synchronous = FULL`` (the bench reads the pragmas
  off each connection and prints them): tether flushes a turn's final save and its journal writes,
  and commits a checkpoint at a move without a flush; LangGraph's saver commits (and flushes) each
  checkpoint and each batch of pending writes. Commits per turn are printed beside the times.

The LangGraph graph is the idiom of LangGraph's persistence docs for a multi-turn chat: the graph is
compiled with a checkpointer, and each customer message is one invocation with the conversation's
``thread_id`` (``{"configurable": {"thread_id": ...}}``); the checkpointer holds the state between
messages (a ``messages`` channel with the ``add_messages`` reducer, as ``MessagesState`` has, and the
booking's fields). Its nodes are tether's: ``details`` (the collect node) parses the last message
with the same regexes (a field is read when its pattern finds exactly one distinct value; a message
with no booking under way starts one, clearing the fields) and asks for the missing fields, or,
once none is missing, ``reserve`` calls the ``reserve`` function and ``confirm`` says the same
confirmation. Every reply is checked against tether's. LangGraph runs at its default
durability (``"async"``: a step's checkpoint is written while the next step runs; ``invoke``
returns after all of them are committed), or ``--durability sync``.

LangGraph is measured both ways it is called: ``invoke`` with the sync savers, and ``ainvoke`` with
``InMemorySaver`` / ``AsyncSqliteSaver``; the goal ratio divides by the ``ainvoke`` turn, the same
execution model as ``Runtime.run`` (a coroutine on the event loop, the way an asyncio server calls
either), and the ``invoke`` ratio is printed beside it. Each round runs ``--conversations``
bookings of each system in turn, a block each (as a process serving one framework would), starting
with the next system each round, so a change of the machine's load hits all of them alike.
Alternating booking by booking instead leaves each system's code cold in the caches, and that
costs tether's short turn the most (in one such run, 1.8x its CPU per turn here against 1.35x for
LangGraph's). The ratios are taken
on the process's CPU time (``time.process_time``: all threads, so the savers' and aiosqlite's
threads count); wall times are printed beside them. A turn's figure is the mean over a 4-turn
booking (the turns differ: the first creates the session, the last books and confirms), the
median over rounds; each ratio is the median of the rounds' ratios.

    pip install langgraph langgraph-checkpoint-sqlite
    python bench/langgraph_turns.py [--rounds 15] [--conversations 10] [--durability sync|async|exit]
    python bench/langgraph_turns.py --tether-only sqlite [--bookings 1000]   # tether alone, to profile
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path
from string import Template
from typing import Annotated, Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))

from booking import ASK, CONFIRMATION, CYCLE, PATTERNS, booking_agent, booking_message, reference

from tether.runtime import Runtime
from tether.stores import MemoryStore, SQLiteStore, Store
from tether.testing import FakeClock

try:
    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
except ImportError as error:  # LangGraph is not a tether dependency
    MISSING: str | None = f"{error.name or error}"
else:
    MISSING = None

INSTALL = "pip install langgraph langgraph-checkpoint-sqlite"
Turn = Callable[[str, int], Awaitable[str]]  # (message, conversation) -> reply
Timings = list[tuple[float, float]]  # (CPU ms, wall ms) per turn

RESOLVERS = {field: re.compile(regex, re.IGNORECASE) for field, regex in PATTERNS.items()}


# -- the LangGraph side ----------------------------------------------------------------------------

if MISSING is None:
    class BookingState(TypedDict, total=False):
        """The thread's state: the conversation and the booking under way."""

        messages: Annotated[list[AnyMessage], add_messages]
        booking: bool
        day: str | None
        party: str | None
        name: str | None
        ref: str | None


def details(state: dict[str, Any]) -> dict[str, Any]:
    """The collect node: read the booking's fields from the customer's message (a message with no
    booking under way starts one, its fields cleared, as tether's ``clear_on_start``), and ask for
    every field still missing (tether's collect says the same questions)."""
    update: dict[str, Any] = {}
    known = dict(state)
    if not state.get("booking"):
        update = {"booking": True, "day": None, "party": None, "name": None, "ref": None}
        known.update(update)
    text = str(state["messages"][-1].content)
    for field, regex in RESOLVERS.items():
        if known.get(field) is None:
            found = {m.group(1) for m in regex.finditer(text)}
            if len(found) == 1:
                update[field] = known[field] = found.pop()
    missing = [question for field, question in ASK.items() if known.get(field) is None]
    if missing:
        update["messages"] = [AIMessage(" ".join(missing))]
    return update


def complete(state: dict[str, Any]) -> str:
    """``reserve`` once every field is known, else the invocation ends (the question is said)."""
    return END if any(state.get(field) is None for field in ASK) else "reserve"


def reserve(state: dict[str, Any]) -> dict[str, Any]:
    """Book the table (the same ``reserve`` as tether's tool)."""
    return {"ref": reference(state["day"], state["party"], state["name"])}


def confirm(state: dict[str, Any]) -> dict[str, Any]:
    """Say the confirmation; the booking is over."""
    text = Template(CONFIRMATION).substitute({field: state[field] for field in ("day", "party", "name", "ref")})
    return {"messages": [AIMessage(text)], "booking": False}


def langgraph_booking(checkpointer: Any) -> Any:
    """The booking as a LangGraph ``StateGraph``, compiled with ``checkpointer``."""
    graph = StateGraph(BookingState)
    graph.add_node("details", details)
    graph.add_node("reserve", reserve)
    graph.add_node("confirm", confirm)
    graph.add_edge(START, "details")
    graph.add_conditional_edges("details", complete, ["reserve", END])
    graph.add_edge("reserve", "confirm")
    graph.add_edge("confirm", END)
    return graph.compile(checkpointer=checkpointer)


def langgraph_sync(graph: Any, durability: str) -> Turn:
    """A turn: one ``invoke`` of the graph with the conversation's thread."""
    async def turn(text: str, conversation: int) -> str:
        config = {"configurable": {"thread_id": f"c{conversation}"}}
        state = graph.invoke({"messages": [HumanMessage(text)]}, config, durability=durability)
        return str(state["messages"][-1].content)
    return turn


def langgraph_async(graph: Any, durability: str) -> Turn:
    """A turn: one ``ainvoke`` of the graph with the conversation's thread."""
    async def turn(text: str, conversation: int) -> str:
        config = {"configurable": {"thread_id": f"c{conversation}"}}
        state = await graph.ainvoke({"messages": [HumanMessage(text)]}, config, durability=durability)
        return str(state["messages"][-1].content)
    return turn


# -- the tether side -------------------------------------------------------------------------------

FIVE_SECONDS = timedelta(seconds=5)


def tether_turns(runtime: Runtime, clock: FakeClock) -> Turn:
    """A turn: ``Runtime.run`` with the conversation's session."""
    sessions: dict[int, str] = {}

    async def turn(text: str, conversation: int) -> str:
        clock.advance(FIVE_SECONDS)  # a timedelta: no duration text parsed inside the measured turn
        turn_no = CYCLE.index(text) + 1
        response = await runtime.run("Booker", booking_message(turn_no, conversation),
                                     session_id=sessions.get(conversation))
        assert response.success, response.message
        sessions[conversation] = response.session
        return response.message or ""
    return turn


def tether_runtime(store: Store) -> tuple[Runtime, Turn]:
    clock = FakeClock()
    runtime = Runtime(booking_agent(), store=store, clock=clock)
    return runtime, tether_turns(runtime, clock)


# -- measuring -------------------------------------------------------------------------------------

EXPECTED = ("Which day would you like? For how many people? Under which name?",
            "For how many people? Under which name?", "Under which name?",
            "Booked for 4 on friday under Ada: reference R-FRI-4-A.")


async def converse(turn: Turn, conversation: int, timings: Timings) -> None:
    """One booking (four turns), each timed on the process's CPU clock and the wall clock."""
    for i, text in enumerate(CYCLE):
        cpu, wall = time.process_time(), time.perf_counter()
        said = await turn(text, conversation)
        timings.append(((time.process_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000))
        assert said == EXPECTED[i], (said, EXPECTED[i])


class Commits:
    """Counts the commits made on SQLite connections, and those that flush (made while the
    connection is at ``synchronous = FULL``: tether sets ``NORMAL`` around a checkpoint's commit)."""

    def __init__(self) -> None:
        self.count = self.flushed = 0
        self.full = True

    def watch(self, conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(self.traced)

    def traced(self, statement: str) -> None:
        """The trace callback: sees each statement run on the connection."""
        said = statement.strip().upper()
        if said.startswith("PRAGMA SYNCHRONOUS"):
            self.full = said.replace(" ", "").endswith(("=FULL", "=2", "=EXTRA", "=3"))
        elif said.startswith(("COMMIT", "END")):
            self.count += 1
            self.flushed += self.full

    def reset(self) -> None:
        self.count = self.flushed = 0


def settings(conn: sqlite3.Connection) -> str:
    (mode,), (sync,) = conn.execute("PRAGMA journal_mode").fetchone(), conn.execute("PRAGMA synchronous").fetchone()
    return f"journal_mode={mode}, synchronous={ {0: 'OFF', 1: 'NORMAL', 2: 'FULL', 3: 'EXTRA'}[sync]}"


async def async_settings(conn: Any) -> str:
    """``settings`` of an aiosqlite connection."""
    async with conn.execute("PRAGMA journal_mode") as mode, conn.execute("PRAGMA synchronous") as sync:
        (journal,), (level,) = await mode.fetchone(), await sync.fetchone()
    return f"journal_mode={journal}, synchronous={ {0: 'OFF', 1: 'NORMAL', 2: 'FULL', 3: 'EXTRA'}[level]}"


TETHER_MEMORY, LANGGRAPH_MEMORY, LANGGRAPH_MEMORY_ASYNC = (
    "tether memory", "LangGraph memory (invoke)", "LangGraph memory (ainvoke)")
TETHER_SQLITE, LANGGRAPH_SQLITE, LANGGRAPH_SQLITE_ASYNC = (
    "tether SQLite", "LangGraph SQLite (invoke)", "LangGraph SQLite (ainvoke)")
COMPARED = ((TETHER_MEMORY, (LANGGRAPH_MEMORY, LANGGRAPH_MEMORY_ASYNC), 0.2),
            (TETHER_SQLITE, (LANGGRAPH_SQLITE, LANGGRAPH_SQLITE_ASYNC), 0.3))


class Results:
    """What a run measured, per system: each round's mean (CPU ms, wall ms) per turn, each turn's
    (CPU ms, wall ms) by its place in the booking, and the SQLite systems' commits and pragmas."""

    def __init__(self, names: list[str]) -> None:
        self.rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
        self.by_turn: dict[str, list[Timings]] = {name: [[] for _ in CYCLE] for name in names}
        self.commits: dict[str, Commits] = {}
        self.pragmas: dict[str, str] = {}
        self.turns = 0

    def per_turn(self, name: str, column: int = 0) -> float:
        """The median over rounds of the mean per turn (``column`` 0: CPU, 1: wall)."""
        return statistics.median(r[column] for r in self.rounds[name])

    def ratio(self, name: str, against: str, column: int = 0) -> float:
        """The median of the rounds' ratios ``name`` / ``against``."""
        return statistics.median(a[column] / b[column]
                                 for a, b in zip(self.rounds[name], self.rounds[against], strict=True))


async def measure(rounds: int, conversations: int, durability: str, directory: Path) -> Results:
    """Bookings of every system, alternating, in ``rounds`` rounds of ``conversations`` each."""
    async with AsyncExitStack() as stack:
        turns: dict[str, Turn] = {}
        results = Results([TETHER_MEMORY, LANGGRAPH_MEMORY, LANGGRAPH_MEMORY_ASYNC,
                           TETHER_SQLITE, LANGGRAPH_SQLITE, LANGGRAPH_SQLITE_ASYNC])
        runtime, turns[TETHER_MEMORY] = tether_runtime(MemoryStore())
        stack.push_async_callback(runtime.close)
        turns[LANGGRAPH_MEMORY] = langgraph_sync(langgraph_booking(InMemorySaver()), durability)
        turns[LANGGRAPH_MEMORY_ASYNC] = langgraph_async(langgraph_booking(InMemorySaver()), durability)

        store = SQLiteStore(directory / "tether.db")
        await store.list()  # the database is opened (and its tables made) before timing
        conn = store._connection("bench")
        results.commits[TETHER_SQLITE] = Commits()
        results.commits[TETHER_SQLITE].watch(conn)
        runtime, turns[TETHER_SQLITE] = tether_runtime(store)
        stack.push_async_callback(runtime.close)
        saver = stack.enter_context(SqliteSaver.from_conn_string(str(directory / "langgraph.db")))
        saver.setup()
        results.commits[LANGGRAPH_SQLITE] = Commits()
        results.commits[LANGGRAPH_SQLITE].watch(saver.conn)
        turns[LANGGRAPH_SQLITE] = langgraph_sync(langgraph_booking(saver), durability)
        async_saver = await stack.enter_async_context(
            AsyncSqliteSaver.from_conn_string(str(directory / "langgraph-async.db")))
        await async_saver.setup()
        results.commits[LANGGRAPH_SQLITE_ASYNC] = Commits()
        await async_saver.conn.set_trace_callback(results.commits[LANGGRAPH_SQLITE_ASYNC].traced)
        turns[LANGGRAPH_SQLITE_ASYNC] = langgraph_async(langgraph_booking(async_saver), durability)

        for turn in turns.values():  # warm up: imports, compiled patterns, the tables
            await converse(turn, -1, [])
        for commits in results.commits.values():
            commits.reset()
        conversation = 0
        order = list(turns)
        for r in range(rounds):
            timings: dict[str, Timings] = {name: [] for name in turns}
            # in turn, so load changes hit all of them; each round starts with the next system
            for name in order[r % len(order):] + order[:r % len(order)]:
                turn = turns[name]
                for c in range(conversation, conversation + conversations):
                    booking: Timings = []
                    await converse(turn, c, booking)
                    timings[name] += booking
                    for place, timing in enumerate(booking):
                        results.by_turn[name][place].append(timing)
            conversation += conversations
            for name, measured in timings.items():
                results.rounds[name].append((statistics.fmean(t[0] for t in measured),
                                             statistics.fmean(t[1] for t in measured)))
        results.turns = rounds * conversations * len(CYCLE)
        results.pragmas = {TETHER_SQLITE: settings(conn), LANGGRAPH_SQLITE: settings(saver.conn),
                           LANGGRAPH_SQLITE_ASYNC: await async_settings(async_saver.conn)}
    return results


def report(results: Results, durability: str) -> None:
    print(f"LangGraph durability={durability!r}; {results.turns} turns per system; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'per turn (mean of a booking; median of rounds)':<48} {'CPU ms':>8} {'wall ms':>8}  "
          f"CPU ms by turn 1/2/3/4 (medians)")
    for name, by_turn in results.by_turn.items():
        places = "/".join(f"{statistics.median(t[0] for t in place):.2f}" for place in by_turn)
        print(f"  {name:<46} {results.per_turn(name):>8.3f} {results.per_turn(name, 1):>8.3f}  {places}")
    for name, commits in results.commits.items():
        print(f"  {name}: {commits.count / results.turns:.2f} commits per turn, "
              f"{commits.flushed / results.turns:.2f} flushed; {results.pragmas[name]}")
    print("tether / LangGraph (median of the rounds' ratios; the goal on CPU against ainvoke):")
    for tether, langgraphs, goal in COMPARED:
        for langgraph in langgraphs:
            cpu, wall = results.ratio(tether, langgraph), results.ratio(tether, langgraph, 1)
            verdict = f"  goal <= {goal}: {'met' if cpu <= goal else 'not met'}" if "ainvoke" in langgraph else ""
            print(f"  {tether} / {langgraph}: CPU {cpu:.3f}x, wall {wall:.3f}x{verdict}")


async def tether_only(backend: str, bookings: int) -> None:
    """Tether's bookings alone, on ``memory`` or ``sqlite`` (LangGraph not needed): for a profiler,
    ``py-spy record -r 500 -f raw -o sqlite.txt -- python bench/langgraph_turns.py --tether-only sqlite``."""
    with tempfile.TemporaryDirectory() as tmp:
        store: Store = MemoryStore() if backend == "memory" else SQLiteStore(Path(tmp) / "tether.db")
        runtime, turn = tether_runtime(store)
        timings: Timings = []
        try:
            await converse(turn, -1, [])
            loop_cpu, before = time.thread_time(), resource.getrusage(resource.RUSAGE_SELF)
            for conversation in range(bookings):
                await converse(turn, conversation, timings)
            loop_cpu, after = time.thread_time() - loop_cpu, resource.getrusage(resource.RUSAGE_SELF)
        finally:
            await runtime.close()
    n = len(timings)
    cpu, wall = statistics.fmean(t[0] for t in timings), statistics.fmean(t[1] for t in timings)
    print(f"tether {backend}: {n} turns, per turn (mean): CPU {cpu:.3f} ms (the event loop's thread "
          f"{loop_cpu * 1000 / n:.3f} ms; user {(after.ru_utime - before.ru_utime) * 1000 / n:.3f} ms, "
          f"kernel {(after.ru_stime - before.ru_stime) * 1000 / n:.3f} ms), wall {wall:.3f} ms; "
          f"context switches per turn: {(after.ru_nvcsw - before.ru_nvcsw) / n:.1f} voluntary (the process "
          f"slept), {(after.ru_nivcsw - before.ru_nivcsw) / n:.1f} involuntary")


async def main(rounds: int, conversations: int, durability: str) -> None:
    if MISSING is not None:
        print(f"LangGraph is not installed (no module {MISSING!r}): the side-by-side bench is skipped. "
              f"To run it: {INSTALL}")
        return
    print(f"booking: {rounds} rounds x {conversations} conversations x {len(CYCLE)} turns per system")
    with tempfile.TemporaryDirectory() as tmp:
        results = await measure(rounds, conversations, durability, Path(tmp))
    report(results, durability)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--conversations", type=int, default=10, help="bookings per system per round")
    parser.add_argument("--durability", choices=["sync", "async", "exit"], default="async",
                        help="LangGraph's durability mode (its default: async)")
    parser.add_argument("--tether-only", choices=["memory", "sqlite"],
                        help="run only tether's bookings on this store (for a profiler)")
    parser.add_argument("--bookings", type=int, default=1000, help="with --tether-only: how many")
    args = parser.parse_args()
    if args.tether_only:
        asyncio.run(tether_only(args.tether_only, args.bookings))
    else:
        asyncio.run(main(args.rounds, args.conversations, args.durability))
