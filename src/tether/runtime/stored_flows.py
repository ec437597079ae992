"""Persisted hot registration: flows registered at run time are stored, and loaded at boot.

``publish_flows`` validates the bundle against the agent (nothing is stored when it is refused),
stores every flow of it in one transaction (a store failure leaves no row of the bundle, and the
agent unchanged), then serves it. A runtime runs the publishes of one agent one after another:
each validates, stores and serves against the same agent, so what it serves is what is stored
active (another worker on the same store serves it when it next loads the stored flows).

``load_stored_flows`` rebuilds, after a restart, what the publishing process served: each
agent's active stored versions, registered as one bundle (each replaces, and so keeps for its
parked runs, the agent's own definition of the flow; when a row is bad, each is registered on its
own, oldest first), and every superseded stored version, kept by digest for the runs parked on
it. A superseded row is built rather than registered: it never becomes the version new runs take,
even when the active row of its flow is skipped. A row that no longer parses or validates is
skipped with a warning and reported, never fatal. Another process on the same store sees the
flows when it loads them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tether.errors import DefinitionIssue, FlowDefinitionError
from tether.stores.flow_versions import FlowVersion, StoredFlow

if TYPE_CHECKING:
    from tether.agent import Agent
    from tether.flow.flow import Flow
    from tether.runtime.runtime import Runtime

__all__ = ["load_stored_flows", "publish_flows"]

log = logging.getLogger("tether.runtime")


async def publish_flows(runtime: Runtime, agent_id: str, documents: Sequence[Mapping[str, Any]],
                        registry: Any = None) -> Agent:
    """Register ``documents`` (``{"flow": ...}``) on agent ``agent_id`` and store them, so a
    restart serves them too. A second publish for the same agent waits for this one to finish.

    Raises:
        KeyError: no agent ``agent_id`` is registered.
        FlowDefinitionError: the bundle is refused (nothing is stored, the agent is unchanged).
        StoreError: the store failed (nothing of the bundle is stored, the agent is unchanged).
    """
    from tether.dialect.files import register_flows

    async with runtime.flow_locks.hold(agent_id):  # validate, store and serve against one agent
        candidate = register_flows(runtime.agents[agent_id], documents, registry)  # refuses before storing
        bundle: list[FlowVersion] = []
        for document in documents:
            flow = candidate.flows_by_id[document["flow"]["id"]]
            bundle.append(FlowVersion(flow.id, flow.version, flow.digest, json.dumps(dict(document), sort_keys=True)))
        await runtime.store.put_flows(agent_id, bundle)
        return runtime.register_flows(agent_id, documents, registry)


async def load_stored_flows(runtime: Runtime, registry: Any = None) -> list[DefinitionIssue]:
    """Serve every agent's active stored flow versions, and keep its superseded ones for the runs
    parked on them; returns the rows skipped, each as a ``stored-flow-skipped`` issue naming the
    agent, flow and why (also logged as a warning)."""
    skipped: list[DefinitionIssue] = []
    for agent_id in runtime.agents:
        async with runtime.flow_locks.hold(agent_id):
            skipped += await _load_agent(runtime, agent_id, registry)
    return skipped


_ROW_ERRORS = (ValueError, TypeError, KeyError, FlowDefinitionError)


async def _load_agent(runtime: Runtime, agent_id: str, registry: Any) -> list[DefinitionIssue]:
    from tether.dialect.files import build_flows

    active = await runtime.store.active_flows(agent_id)
    superseded = await runtime.store.superseded_flows(agent_id)
    skipped: list[DefinitionIssue] = []
    try:  # one bundle: a flow may start one whose active row is newer (or in the same bundle)
        runtime.register_flows(agent_id, [_document(row) for row in active], registry)
    except _ROW_ERRORS:  # a bad row: each on its own, to serve the others and name it
        for row in active:
            try:
                runtime.register_flows(agent_id, [_document(row)], registry)
            except _ROW_ERRORS as exc:
                skipped.append(_skipped(agent_id, row, exc))
    retired: list[Flow] = []
    for row in superseded:
        try:  # checked against the agent as it now stands: a parked run resumes in today's agent
            retired += build_flows(runtime.agents[agent_id], [_document(row)], registry)
        except _ROW_ERRORS as exc:
            skipped.append(_skipped(agent_id, row, exc))
    runtime.retire_flows(agent_id, retired)
    return skipped


def _document(row: StoredFlow) -> dict[str, Any]:
    document = json.loads(row.document)
    if not isinstance(document, dict):  # a string would be read as a file path
        raise ValueError(f"the stored document is a JSON {type(document).__name__}, not an object")
    return document


def _skipped(agent_id: str, row: StoredFlow, exc: Exception) -> DefinitionIssue:
    reason = "; ".join(str(i) for i in exc.issues) if isinstance(exc, FlowDefinitionError) else str(exc)
    if row.status == "active":
        what, hint = "stored version", "register a valid version of the flow (PUT it again)"
    else:
        what, hint = "superseded stored version", ("runs parked on this version meet the version served now and "
                                                   "fail with flow-drift, unless the flow declares on_drift")
    issue = DefinitionIssue("stored-flow-skipped", f"agent {agent_id!r}: {what} {row.seq} of flow {row.flow!r} "
                            f"was skipped: {reason}", flow=row.flow, hint=hint, severity="warning")
    log.warning("%s", issue)
    return issue
