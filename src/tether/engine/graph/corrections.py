"""The correction repair pattern, at a collect step (or a decide step waiting for a choice): the
customer gives a new value for a field an earlier step of the same run collected ("actually make
it medium" at the confirmation), or one the asking step itself was already given ("large", then
"actually make it medium" while the same step asks for the toppings).

Which fields may be corrected: the agent fields that an earlier collect step of the run's flow
(one the run has visited) collects, and the asking collect step's own fields, that hold a value
now. With no model, the resolvers of the step that collects each field read the message
(``whole_message`` never does: it takes anything; instead a field it collects takes the text of a
message marked as a correction at its start or end, less the correction words: "actually make it
14 Main Street"). With a model, the call that reads the step's answer (the understand call's
``collect`` section, or the ``extract`` call) offers them too, so a correction costs no extra call.

A corrected value is validated as its own step would, written and recorded (a
``field-corrected`` event with old and new values, outcome ``corrected``). A value an earlier step
collected sends the run back to the earliest such step: everything after it runs again (a
confirmation asks again with the new value), and the step's own answer read from the same message
is not used: the run asks again. A value of the asking step's own is written where it stands, and
the step goes on with the rest of the message.

A message that both answers the step and names a new value ("no, make it medium" at a yes/no
step) is a correction when it carries a correction marker (``Repair.correction_markers``), when
all it changes is to take values out of a list given before ("no olives" at a yes/no step), or
when its answer to the step is only a yes or a no and it changes a value an earlier step collected
("no, medium": not that, this; "yes please, medium": a confirmation is never taken for what the
same message contradicts; see :func:`yes_or_no`). A free-text value after a refusal ("no, 14 Oak
Avenue, Springfield") is taken only when it restates at least half the words of the value it
replaces (:func:`refused_free_text`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from tether.engine.core.events import FieldCorrected
from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.engine.graph.collect_fields import humanize, resolver_frame
from tether.engine.graph.extract import validate_value
from tether.flow.flow import Flow
from tether.flow.nodes import Collect, Node
from tether.flow.repair import corrected_text, marks_correction, restates_value
from tether.flow.resolvers import JsonPath, WholeMessage
from tether.flow.steps import AgentNode
from tether.spoken import spoken
from tether.templating import fill_names

__all__ = ["Corrections", "apply_corrections", "correctable", "earlier_fields", "marked_as_correction",
           "marked_free_text", "refused_free_text", "resolver_corrections", "yes_or_no"]


def _owners(flow: Flow, run: Run, node: Node) -> dict[str, Collect]:
    """The collect step each correctable field belongs to: ``node`` itself for its own fields,
    else the earliest visited step that collects it."""
    owners: dict[str, Collect] = {}
    for other in flow.nodes:
        if not isinstance(other, Collect) or not (other is node or run.visits.get(other.id)):
            continue
        for name in other.fields:
            if (other is not node and name in getattr(node, "fields", ())) \
                    or (other.schema is not None and name in other.schema.model_fields):
                continue  # a schema field lives in its own step's frame, not in the session
            owners.setdefault(name, other)
    return owners


def correctable(ts: TurnState, run: Run, flow: Flow | None, node: Node) -> list[str]:
    """The fields the customer may correct while ``run`` asks at ``node`` (a collect step, or a
    decide step waiting for a choice)."""
    if flow is None or not ts.agent.repair.on("correction"):
        return []
    return [name for name in _owners(flow, run, node)
            if name in ts.agent.fields and ts.answered(name)]


def earlier_fields(flow: Flow, run: Run, node: Node, names: list[str]) -> list[str]:
    """Those of ``names`` that an earlier step collected (not ``node`` itself)."""
    owners = _owners(flow, run, node)
    return [name for name in names if name in owners and owners[name] is not node]


_YES_NO = ("yes", "no")


def yes_or_no(hits: dict[str, Any]) -> bool:
    """The values a message gave the asking step only answer yes or no (``"yes"``, ``"no"``,
    ``True``, ``False``): a confirmation's answer, which a new value for an earlier step's field
    turns into a correction ("no, medium": not that, this; "yes please, medium": not what was
    read back either, so it is read back again with the new value)."""
    return bool(hits) and all(isinstance(value, bool) or (isinstance(value, str) and value.strip().lower() in _YES_NO)
                              for value in hits.values())



def marked_as_correction(ts: TurnState) -> bool:
    """The message says it corrects something ("actually", "instead", "wait" said as a hold, ...)."""
    return marks_correction(ts.message_text, ts.agent.repair.correction_markers)


def resolver_corrections(ts: TurnState, run: Run, flow: Flow, node: Node, names: list[str]) -> dict[str, Any]:
    """New values for ``names`` read from the message, each by the resolvers of the step it belongs
    to (see :func:`correctable`)."""
    if not names:
        return {}
    frame = resolver_frame(ts, run)
    owners = _owners(flow, run, node)
    found: dict[str, Any] = {}
    for other in flow.nodes:
        if not isinstance(other, Collect):
            continue
        for resolver in other.resolvers:
            if resolver.field not in names or owners.get(resolver.field) is not other or resolver.field in found \
                    or isinstance(resolver, WholeMessage | JsonPath):
                continue
            result = resolver.resolve(ts.message_text, frame)
            if result.status == "hit":
                found[resolver.field] = result.value
    return _changed(ts, found)


def marked_free_text(ts: TurnState, run: Run, flow: Flow, node: Node, names: list[str]) -> dict[str, Any]:
    """With no model, the new value a marked correction gives the one field of ``names`` its step
    collects as free text (``whole_message``): the message without its correction words ("actually
    make it 14 Main Street"). Nothing when several such fields could take it."""
    return _free_text(ts, run, flow, node, names, ts.agent.repair.correction_markers, restates=False)


_REFUSALS = ("no", "nope", "nah")
"""The words a refusal that gives a free-text value instead starts with ("no, 14 Oak Avenue")."""


def refused_free_text(ts: TurnState, run: Run, flow: Flow, node: Node, names: list[str]) -> dict[str, Any]:
    """With no model, the new value a refusal gives the one field of ``names`` its step collects as
    free text: the message without its refusal and its correction words ("no, 14 Oak Avenue,
    Springfield", "no wait, make it 6 Main St"), taken only when it restates the value it replaces
    (:func:`~tether.flow.repair.restates_value`), so a refusal that explains itself ("no, I don't
    want to", "no, leave it as Main St", "no wait, Main St is right") stays a refusal."""
    return _free_text(ts, run, flow, node, names, (*_REFUSALS, *ts.agent.repair.correction_markers), restates=True)


def _free_text(ts: TurnState, run: Run, flow: Flow, node: Node, names: list[str], markers: tuple[str, ...], *,
               restates: bool) -> dict[str, Any]:
    owners = _owners(flow, run, node)
    free = [(name, resolver) for name in names if (owner := owners.get(name)) is not None
            for resolver in owner.resolvers if isinstance(resolver, WholeMessage) and resolver.field == name]
    if len(free) != 1 or (text := corrected_text(ts.message_text, markers)) is None:
        return {}
    name, resolver = free[0]
    if restates and not restates_value(str(ts.session.data.get(name, "")), text):
        return {}
    found = resolver.resolve(text, {})
    return {name: found.value} if found.status == "hit" else {}


def _changed(ts: TurnState, values: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items()
            if value is not None and value != "" and value != ts.session.data.get(name)}


class Corrections(NamedTuple):
    """What :func:`apply_corrections` did."""

    back: str | None
    """The earliest earlier step that collected a corrected field: the run goes back there (None: none)."""
    fields: tuple[str, ...]
    """Every field whose value changed, the asking step's own included."""


def apply_corrections(ts: TurnState, run: Run, flow: Flow, node: Node, values: dict[str, Any], *,
                      source: str) -> Corrections:
    """Validate and write the corrected values (the module notes say which fields and where the run
    goes next)."""
    owners = _owners(flow, run, node)
    back: str | None = None
    changed: list[str] = []
    order = [n.id for n in flow.nodes]
    for name, raw in _changed(ts, values).items():
        owner = owners.get(name)
        if owner is None or not ts.answered(name):
            continue  # not a field collected before (a model may offer any name)
        ok, value, code, detail = validate_value(ts, owner, name, raw)
        old = ts.session.data.get(name)
        if not ok:
            ts.outcome(run, code=code, status="skipped", kind="collect", node_id=node.id, detail=detail)
            continue
        if value == old:
            continue
        ts.session.data[name] = value
        changed.append(name)
        ts.emit(FieldCorrected(run_id=run.id, flow=flow.id, at=ts.now, node=owner.id, field=name, old=old, new=value,
                               source=source))
        ts.outcome(run, code="corrected", kind="collect", node_id=node.id, detail=f"{name}: {old!r} -> {value!r}",
                   next=owner.id)
        if owner is not node and (back is None or order.index(owner.id) < order.index(back)):
            back = owner.id
    if changed and not (isinstance(node, AgentNode) or getattr(node, "phrased_by_model", False)):
        _acknowledge(ts, run, node, changed)  # a step the model speaks for says it in its own words
    return Corrections(back, tuple(changed))


def _acknowledge(ts: TurnState, run: Run, node: Node, names: list[str]) -> None:
    """Say ``Repair.corrected`` for the changed fields (a step the engine phrases would otherwise
    ask on as if nothing had been heard)."""
    changes = [f"the {humanize(ts, name)} to {spoken(ts.session.data.get(name)) or 'none'}" for name in names]
    text = fill_names(ts.agent.repair.corrected, {"changes": spoken(changes)})
    ts.say(text, kind="verbatim", key=f"repair:correction:{ts.key(run, node.id)}", run=run, node_id=node.id)
