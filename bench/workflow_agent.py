"""Agent turn overhead: a chain of N agent nodes, each started and completed by a scripted agent
through the flow tools, in memory and on SQLite.

Reports the median wall time per tool call (the model is scripted, so this is tether's own cost:
the tool, its CAS save with the journal entry, the drain after it), the saves per tool call, and
the ratio of the last nodes' median to the first nodes' (goal: about 1, the cost does not grow
with the run; in memory the first calls also pay one-time warm-up).

    python bench/workflow_agent.py [--nodes 60]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import tempfile
import time
from pathlib import Path

from tether.models.types import ModelRequest, ModelResponse, ToolCall
from tether.stores import SQLiteStore
from tether.testing import FunctionModel
from tether.workflow import agent_node, edge, workflow
from tether.workflow_host import WorkflowRun


def scripted_agent(stamps: list[float]) -> FunctionModel:
    """Starts, then completes, the first ready node; stamps the time of each call."""
    def reply(request: ModelRequest) -> ModelResponse | str:
        stamps.append(time.perf_counter())
        last = request.messages[-1]
        ready = json.loads(last.content).get("ready_agent_nodes", [])
        if not ready:
            return "all done"
        name = "complete_node" if last.role == "tool" and '"status": "running"' in last.content else "start_node"
        arguments = {"node_id": ready[0], "summary": "done", "fields": {"n": 1}}
        if name == "start_node":
            arguments = {"node_id": ready[0]}
        return ModelResponse(tool_calls=(ToolCall(id=f"c{len(stamps)}", name=name, arguments=arguments),))
    return FunctionModel(reply)


async def measure(nodes: int, store_path: Path | None) -> tuple[list[float], int]:
    ids = [f"n{i}" for i in range(nodes)]
    definition = workflow("chain", nodes=[agent_node(i, "do it") for i in ids],
                          edges=[edge(a, b) for a, b in itertools.pairwise(ids)])
    store = SQLiteStore(str(store_path)) if store_path else None
    stamps: list[float] = []
    try:
        run = WorkflowRun(definition, store=store, model=scripted_agent(stamps), max_tool_rounds=2 * nodes + 1)
        await run.advance()
        assert run.status == "complete", run.status
        revision = run.revision or 0
    finally:
        if store is not None:
            await store.close()
    return [b - a for a, b in itertools.pairwise(stamps)], revision


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for label, path in (("memory", None), ("sqlite", Path(tmp) / "bench.db")):
            gaps, revision = await measure(args.nodes, path)
            calls = 2 * args.nodes
            first, last = statistics.median(gaps[:20]), statistics.median(gaps[-20:])
            print(f"{label:7} {args.nodes} agent nodes, {calls} tool calls: "
                  f"median {statistics.median(gaps) * 1000:.2f} ms/tool call, "
                  f"first 20 {first * 1000:.2f}, last 20 {last * 1000:.2f} (ratio {last / first:.2f})"
                  + (f", {revision / calls:.1f} saves per tool call" if path else ""))


if __name__ == "__main__":
    asyncio.run(main())
