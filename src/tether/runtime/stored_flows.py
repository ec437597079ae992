"""Persisted hot registration: flows registered at run time are stored, and loaded at boot.

``publish_flows`` validates the bundle against the agent (nothing is stored when it is refused),
stores every flow of it in one transaction (a store failure leaves no row of the bundle, and the
agent unchanged), then serves it. ``load_stored_flows`` serves each agent's active stored
versions, oldest first; a row that no longer parses or validates is skipped with a warning and
reported, never fatal. Another process on the same store sees the flows when it loads them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tether.errors import DefinitionIssue, FlowDefinitionError
from tether.stores.flow_versions import FlowVersion

if TYPE_CHECKING:
    from tether.agent import Agent
    from tether.runtime.runtime import Runtime

__all__ = ["load_stored_flows", "publish_flows"]

log = logging.getLogger("tether.runtime")


async def publish_flows(runtime: Runtime, agent_id: str, documents: Sequence[Mapping[str, Any]],
                        registry: Any = None) -> Agent:
    """Register ``documents`` (``{"flow": ...}``) on agent ``agent_id`` and store them, so a
    restart serves them too.

    Raises:
        KeyError: no agent ``agent_id`` is registered.
        FlowDefinitionError: the bundle is refused (nothing is stored, the agent is unchanged).
        StoreError: the store failed (nothing of the bundle is stored, the agent is unchanged).
    """
    from tether.dialect.files import register_flows

    candidate = register_flows(runtime.agents[agent_id], documents, registry)  # refuses before anything is stored
    bundle: list[FlowVersion] = []
    for document in documents:
        flow = candidate.flows_by_id[document["flow"]["id"]]
        bundle.append(FlowVersion(flow.id, flow.version, flow.digest, json.dumps(dict(document), sort_keys=True)))
    await runtime.store.put_flows(agent_id, bundle)
    return runtime.register_flows(agent_id, documents, registry)


async def load_stored_flows(runtime: Runtime, registry: Any = None) -> list[DefinitionIssue]:
    """Serve every agent's active stored flow versions; returns the rows skipped, each as a
    ``stored-flow-skipped`` issue naming the agent, flow and why (also logged as a warning)."""
    skipped: list[DefinitionIssue] = []
    for agent_id in runtime.agents:
        for row in await runtime.store.active_flows(agent_id):
            try:
                document = json.loads(row.document)
                runtime.register_flows(agent_id, [document], registry)
            except (ValueError, TypeError, KeyError, FlowDefinitionError) as exc:
                reason = "; ".join(str(i) for i in exc.issues) if isinstance(exc, FlowDefinitionError) else str(exc)
                issue = DefinitionIssue("stored-flow-skipped", f"agent {agent_id!r}: stored version {row.seq} of "
                                        f"flow {row.flow!r} was skipped: {reason}", flow=row.flow,
                                        hint="register a valid version of the flow (PUT it again)",
                                        severity="warning")
                log.warning("%s", issue)
                skipped.append(issue)
    return skipped
