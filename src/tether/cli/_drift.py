"""``tether drift APP --db URL``: before a deploy, what the new code would do with every parked run.

The app given is the code about to be deployed; the store is the one the running version writes.
Every live run of every running (or handed-off) session of the app's agents is judged as the next
turn would judge it (:func:`tether.engine.core.drift_plan.plan_drift`), with the stored flow
versions loaded as ``tether serve`` loads them: ``unchanged``, ``continue``, ``migrate``,
``restart``, ``error`` or ``end``, each with its reason. The exit code is 1 when any run would fail
(``error``), else 0.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from tether.cli._output import CliError, one_line, stdout_console
from tether.cli._store import open_db

if TYPE_CHECKING:
    from tether.apps import LoadedApp
    from tether.engine.core.drift_plan import DriftPlan
    from tether.stores import Store

__all__ = ["ParkedRun", "drift_report", "run_drift"]

_LIVE = ("running", "handed_off")
_EVERY = 1_000_000_000  # the store lists at most this many sessions per status: all of them


@dataclass(frozen=True)
class ParkedRun:
    """One parked run and what the new code would do with it."""

    session: str
    agent: str
    plan: DriftPlan


async def drift_report(app: LoadedApp, store: Store) -> list[ParkedRun]:
    """The verdict for every live run stored for ``app``'s agents, oldest session first."""
    from tether.engine.core.drift_plan import DriftPlan, plan_drift
    from tether.runtime import Runtime
    from tether.runtime.stored_flows import load_stored_flows

    runtime = Runtime(list(app.agents), store=store)
    await load_stored_flows(runtime)  # as tether serve does at boot: published versions are served too
    found: list[ParkedRun] = []
    for agent_id, agent in runtime.agents.items():
        summaries = [row for status in _LIVE for row in await store.list(agent=agent_id, status=status, limit=_EVERY)]
        for summary in sorted(summaries, key=lambda row: row.saved_at):
            session = await store.load(summary.id)
            if session is None:
                continue
            for run in session.runs:
                if run.digest in agent.retired_flows:
                    plan = DriftPlan(run.id, run.flow, run.node, run.digest, run.digest, "unchanged",
                                     "its version is kept (a stored or replaced version): the run finishes on it",
                                     run.node)
                else:
                    journal = await store.journal(session.id, run_id=run.id)
                    plan = plan_drift(run, agent.flows_by_id.get(run.flow), journal, try_migration=True)
                found.append(ParkedRun(session.id, agent_id, plan))
    return found


def run_drift(app: LoadedApp, db: str) -> int:
    """Print the report for ``app`` against the store at ``db``; the exit code (1 if any run
    would fail)."""
    if "://" not in db and db != "memory:" and not Path(db).expanduser().is_file():
        raise CliError(f"no session store at {db}", 1)
    store = open_db(db)

    async def work() -> list[ParkedRun]:
        try:
            return await drift_report(app, store)
        finally:
            await store.close()

    try:
        parked = asyncio.run(work())
    except CliError:
        raise
    except Exception as exc:
        raise CliError(f"store {db}: {one_line(str(exc))}", 1) from None
    console = stdout_console()
    if not parked:
        console.print("no parked runs", markup=False)
        return 0
    table = Table("session", "run", "flow", "node", "verdict", "why")
    for item in parked:
        plan = item.plan
        table.add_row(Text(item.session), Text(plan.run), Text(plan.flow), Text(plan.at or "-"),
                      Text(plan.verdict if plan.node in (None, plan.at) else f"{plan.verdict} -> {plan.node}"),
                      Text(plan.reason))
    console.print(table)
    counts = Counter(item.plan.verdict for item in parked)
    summary = ", ".join(f"{counts[v]} {v}" for v in ("unchanged", "continue", "migrate", "restart", "end", "error")
                        if counts[v])
    console.print(f"{len(parked)} parked run(s): {summary}", markup=False)
    if counts["error"]:
        console.print(f"{counts['error']} run(s) would fail with flow-drift after this deploy", markup=False)
        return 1
    return 0
