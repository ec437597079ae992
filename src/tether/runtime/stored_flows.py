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
skipped with a warning and reported, never fatal.

Across workers (several processes or hosts on one store), a publish reaches the others two ways.
Both need the runtime to use stored flows: ``load_stored_flows`` and ``publish_flows`` attach a
:class:`StoredFlows` to it (``runtime.stored_flows``), which remembers the node registry the
documents are read with and, per agent, the active digests it last read.

- A run pinned to a digest the agent serves neither as current nor as retired (it started on
  another worker, on a version published there) makes the runtime reload that agent's stored
  flows before the turn (:meth:`StoredFlows.reload`, at most once per request, and once per
  digest: a digest still unknown after a reload is not in the store, being a version registered
  only in another process or another deploy's code), and the turn meets the flow's drift policy
  as before. A turn whose runs are all pinned to known versions reads nothing.
- New runs take another worker's publish after the next refresh (:func:`refresh_stored_flows`,
  every ``interval`` seconds in :class:`StoredFlowRefresh`, which the server runs): it reads each
  agent's active versions, and reloads the agent only when they differ from those it last read.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tether.background import BackgroundTask
from tether.errors import DefinitionIssue, FlowDefinitionError, StoreError
from tether.stores.flow_versions import FlowVersion, StoredFlow

if TYPE_CHECKING:
    from tether.agent import Agent
    from tether.flow.flow import Flow
    from tether.runtime.runtime import Runtime

__all__ = ["StoredFlowRefresh", "StoredFlows", "load_stored_flows", "publish_flows", "refresh_stored_flows"]

log = logging.getLogger("tether.runtime")


class StoredFlows:
    """A runtime's link to its stored flows (``runtime.stored_flows``, attached by
    :func:`load_stored_flows` and :func:`publish_flows`): the node ``registry`` the documents are
    read with (the last one given), and per agent the active digest of each flow it last read."""

    def __init__(self, runtime: Runtime, registry: Any = None) -> None:
        self.runtime = runtime
        self.registry = registry
        self._active: dict[str, dict[str, str]] = {}  # agent -> flow -> the digest last read active
        self._reloaded_for: dict[str, set[str]] = {}  # agent -> digests a reload was made for

    @classmethod
    def of(cls, runtime: Runtime, registry: Any = None) -> StoredFlows:
        """The stored flows attached to ``runtime`` (attached now when none is); a ``registry``
        given replaces the one remembered."""
        stored = runtime.stored_flows
        if not isinstance(stored, StoredFlows):
            stored = cls(runtime, registry)
            runtime.stored_flows = stored
        elif registry is not None:
            stored.registry = registry
        return stored

    async def reload(self, agent_id: str, digests: Collection[str]) -> None:
        """Reload agent ``agent_id``'s stored flows for runs pinned to ``digests``, versions it
        does not serve. Once per digest: a digest a reload was made for is never reloaded for
        again (no store call; still unknown, the store does not hold it). A store failure is
        raised (``StoreError``): the request fails with nothing saved and the next one tries
        again, rather than meeting the drift policy (``on_drift="restart"`` would start the run
        over) for a version the store may well hold. Any other failure is logged."""
        done = self._reloaded_for.setdefault(agent_id, set())
        if done.issuperset(digests):
            return
        try:
            async with self.runtime.flow_locks.hold(agent_id):
                if not done.issuperset(digests) and self._unknown(agent_id, digests):
                    await self._load(agent_id)  # else the reload this one waited for brought them
                done.update(digests)
        except StoreError as exc:
            log.warning("reloading the stored flows of agent %r failed: %s", agent_id, _reason(exc))
            raise
        except Exception:  # a bug: the turn goes on as without the reload, its drift policy decides
            log.exception("reloading the stored flows of agent %r failed", agent_id)

    async def refresh(self) -> list[str]:
        """Reload every agent whose active stored versions differ from those last read (read
        first, each agent on its own); returns the agents reloaded. A store failure is logged."""
        changed: list[str] = []
        for agent_id in self.runtime.agents:
            try:
                active = await self.runtime.store.active_flows(agent_id)
                if _digests(active) == self._active.get(agent_id):
                    continue
                async with self.runtime.flow_locks.hold(agent_id):  # read again: a publish may have run
                    await self._load(agent_id)
            except Exception as exc:
                log.warning("refreshing the stored flows of agent %r failed: %s", agent_id, _reason(exc),
                            exc_info=not isinstance(exc, StoreError))
                continue
            changed.append(agent_id)
        return changed

    def _unknown(self, agent_id: str, digests: Collection[str]) -> bool:
        agent = self.runtime.agents[agent_id]
        served = {flow.digest for flow in agent.flows}
        return any(d not in served and d not in agent.retired_flows for d in digests)

    async def _load(self, agent_id: str) -> list[DefinitionIssue]:
        """Load ``agent_id``'s stored flows (hold its flow lock)."""
        skipped, active = await _load_agent(self.runtime, agent_id, self.registry)
        self._active[agent_id] = _digests(active)  # skipped rows too: they are not read again until they change
        return skipped

    def published(self, agent_id: str, bundle: Sequence[FlowVersion]) -> None:
        """Note the bundle this runtime just stored and serves as the agent's active versions."""
        self._active.setdefault(agent_id, {}).update({f.flow: f.digest for f in bundle})


async def publish_flows(runtime: Runtime, agent_id: str, documents: Sequence[Mapping[str, Any]],
                        registry: Any = None) -> Agent:
    """Register ``documents`` (``{"flow": ...}``) on agent ``agent_id`` and store them, so a
    restart serves them too. A second publish for the same agent waits for this one to finish.
    ``registry`` (default: the one the runtime was last given) is remembered for the reloads.

    Raises:
        KeyError: no agent ``agent_id`` is registered.
        FlowDefinitionError: the bundle is refused (nothing is stored, the agent is unchanged).
        StoreError: the store failed (nothing of the bundle is stored, the agent is unchanged).
    """
    from tether.dialect.files import register_flows

    stored = StoredFlows.of(runtime, registry)
    registry = stored.registry
    async with runtime.flow_locks.hold(agent_id):  # validate, store and serve against one agent
        candidate = register_flows(runtime.agents[agent_id], documents, registry)  # refuses before storing
        bundle: list[FlowVersion] = []
        for document in documents:
            flow = candidate.flows_by_id[document["flow"]["id"]]
            bundle.append(FlowVersion(flow.id, flow.version, flow.digest, json.dumps(dict(document), sort_keys=True)))
        await runtime.store.put_flows(agent_id, bundle)
        served = runtime.register_flows(agent_id, documents, registry)
        stored.published(agent_id, bundle)
        return served


async def load_stored_flows(runtime: Runtime, registry: Any = None) -> list[DefinitionIssue]:
    """Serve every agent's active stored flow versions, and keep its superseded ones for the runs
    parked on them; returns the rows skipped, each as a ``stored-flow-skipped`` issue naming the
    agent, flow and why (also logged as a warning). ``registry`` (default: the one the runtime
    was last given) is remembered for the reloads (see the module notes)."""
    stored = StoredFlows.of(runtime, registry)
    skipped: list[DefinitionIssue] = []
    for agent_id in runtime.agents:
        async with runtime.flow_locks.hold(agent_id):
            skipped += await stored._load(agent_id)
    return skipped


async def refresh_stored_flows(runtime: Runtime) -> list[str]:
    """Serve the active stored versions another worker published since this runtime last read
    them: one read of each agent's active versions, and a reload (active and superseded) of the
    agents where they changed; returns those agents. Runs parked here keep their versions. A
    store failure is logged (a warning on ``tether.runtime``), never raised."""
    return await StoredFlows.of(runtime).refresh()


class StoredFlowRefresh(BackgroundTask):
    """A background asyncio task calling :func:`refresh_stored_flows` every ``interval`` seconds
    (the server runs one; ``interval`` 0 runs none). Errors are logged, never raised."""

    name = "tether-flow-refresh"

    def __init__(self, runtime: Runtime, *, interval: float = 5.0) -> None:
        if interval < 0:
            raise ValueError(f"the stored flow refresh interval must be >= 0 seconds (0: none), not {interval!r}")
        super().__init__()
        self.runtime = runtime
        self.interval = interval

    def start(self) -> None:
        """Start the task in the running event loop (no-op when running already, or ``interval`` is 0)."""
        if self.interval:
            super().start()

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await refresh_stored_flows(self.runtime)
            except Exception:  # refresh logs store failures itself: this is a bug, and the loop goes on
                log.exception("refreshing the stored flows failed")


_ROW_ERRORS = (ValueError, TypeError, KeyError, FlowDefinitionError)


async def _load_agent(runtime: Runtime, agent_id: str, registry: Any) -> tuple[list[DefinitionIssue], list[StoredFlow]]:
    """Serve ``agent_id``'s stored flows; the rows skipped, and the active rows read."""
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
    return skipped, active


def _digests(rows: Sequence[StoredFlow]) -> dict[str, str]:
    return {row.flow: row.digest for row in rows}


def _reason(exc: Exception) -> str:
    return exc.message if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"


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
