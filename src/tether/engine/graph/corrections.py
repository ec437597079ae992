"""The correction repair pattern, at a collect step (or a decide step waiting for a choice): the
customer gives a new value for a field an earlier step of the same run collected ("actually make
it medium" at the confirmation).

Which fields may be corrected: the agent fields that an earlier collect step of the run's flow
(one the run has visited) collects and that hold a value now, other than the step's own. With no
model, those steps' resolvers read the message (``whole_message`` never does: it takes anything);
with a model, the call that reads the step's answer (the understand call's ``collect`` section, or
the ``extract`` call) offers them too, so a correction costs no extra call. A corrected value is
validated as its own step would, written, recorded (a ``field-corrected`` event with old and new
values, outcome ``corrected``), and the run goes back to the earliest step that collected a
corrected field: everything after it runs again (a confirmation asks again with the new value).
The step's own answer read from the same message is not used: the run asks again.

A message that both answers the step and names a new value ("no, make it medium" at a yes/no
step) is a correction when it carries a correction marker (``Repair.correction_markers``).
"""

from __future__ import annotations

from typing import Any

from tether.engine.core.events import FieldCorrected
from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.engine.graph.extract import validate_value
from tether.flow.fields import is_known
from tether.flow.flow import Flow
from tether.flow.nodes import Collect, Node
from tether.flow.repair import phrase_in
from tether.flow.resolvers import JsonPath, WholeMessage

__all__ = ["apply_corrections", "correctable", "marked_as_correction", "resolver_corrections"]


def _owners(flow: Flow, run: Run, node: Node) -> dict[str, Collect]:
    """Each correctable field's earliest visited collect step (other than ``node``)."""
    owners: dict[str, Collect] = {}
    for other in flow.nodes:
        if other is node or not isinstance(other, Collect) or not run.visits.get(other.id):
            continue
        for name in other.fields:
            if name in getattr(node, "fields", ()) or (other.schema is not None and name in other.schema.model_fields):
                continue  # a schema field lives in its own step's frame, not in the session
            owners.setdefault(name, other)
    return owners


def correctable(ts: TurnState, run: Run, flow: Flow | None, node: Node) -> list[str]:
    """The fields the customer may correct while ``run`` asks at ``node`` (a collect step, or a
    decide step waiting for a choice)."""
    if flow is None or not ts.agent.repair.on("correction"):
        return []
    return [name for name in _owners(flow, run, node)
            if name in ts.agent.fields and is_known(ts.session.data.get(name))]


def marked_as_correction(ts: TurnState) -> bool:
    """The message says it corrects something ("actually", "instead", ...)."""
    return phrase_in(ts.message_text, ts.agent.repair.correction_markers)


def resolver_corrections(ts: TurnState, run: Run, flow: Flow, node: Node, names: list[str]) -> dict[str, Any]:
    """New values the earlier steps' own resolvers read from the message, for ``names``."""
    if not names:
        return {}
    frame = {"input": run.input, "state": ts.state_view(run), "results": run.state.get("__results", {})}
    found: dict[str, Any] = {}
    for other in flow.nodes:
        if not isinstance(other, Collect) or other is node:
            continue
        for resolver in other.resolvers:
            if resolver.field not in names or resolver.field in found or isinstance(resolver, WholeMessage | JsonPath):
                continue
            result = resolver.resolve(ts.message_text, frame)
            if result.status == "hit":
                found[resolver.field] = result.value
    return _changed(ts, found)


def _changed(ts: TurnState, values: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items()
            if value is not None and value != "" and value != ts.session.data.get(name)}


def apply_corrections(ts: TurnState, run: Run, flow: Flow, node: Node, values: dict[str, Any], *,
                      source: str) -> str | None:
    """Validate and write the corrected values; returns the step to go back to (the earliest step
    that collected a corrected field), or None when no value was a valid change."""
    owners = _owners(flow, run, node)
    back: str | None = None
    order = [n.id for n in flow.nodes]
    for name, raw in _changed(ts, values).items():
        owner = owners.get(name)
        if owner is None:
            continue
        ok, value, code, detail = validate_value(ts, owner, name, raw)
        old = ts.session.data.get(name)
        if not ok:
            ts.outcome(run, code=code, status="skipped", kind="collect", node_id=node.id, detail=detail)
            continue
        if value == old:
            continue
        ts.session.data[name] = value
        ts.emit(FieldCorrected(run_id=run.id, flow=flow.id, at=ts.now, node=owner.id, field=name, old=old, new=value,
                               source=source))
        ts.outcome(run, code="corrected", kind="collect", node_id=node.id, detail=f"{name}: {old!r} -> {value!r}",
                   next=owner.id)
        if back is None or order.index(owner.id) < order.index(back):
            back = owner.id
    return back
