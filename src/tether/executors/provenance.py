"""Where a bound input value came from, and what that makes a ``check`` verdict worth.

Every value a ``function`` or ``check`` node receives is a :class:`Binding`: the raw ``value``
plus the :class:`Origin` records that explain it. Origins form a tree: an origin of kind
``node-output`` carries, in its own ``origins``, the input origins that the producing node
recorded when it ran. That makes the taint check **transitive** — a deterministic function that
merely passes an agent's value through stays agent-obtained and cannot launder it.

Provenance is *derived* from these records only. Nothing on a request lets a caller claim a
value is verified.

Reading one origin (and, recursively, each of its ancestors):

==============  ==========================  ===============================================
``kind``        ``obtained_by``             reads as
==============  ==========================  ===============================================
literal         missing or ``"runtime"``    runtime-obtained (authored in the flow)
default         missing or ``"runtime"``    runtime-obtained (authored default)
flow-input      missing or ``"runtime"``    runtime-obtained (the run's own input)
node-output     ``"runtime"``               runtime-obtained **iff** its recorded ``origins``
                                            exist (not ``None``) and are all runtime-obtained
node-output     missing                     agent-obtained (fail-closed: a producer recorded
                                            before origins existed)
node-output     any, ``origins=None``       agent-obtained (fail-closed, nothing recorded)
agent           anything                    agent-obtained (model output; a ``subprompt``
                                            output is recorded as ``agent`` too)
any kind        ``"agent"``                 agent-obtained
==============  ==========================  ===============================================

An origin's nested ``origins``, when present, are always walked, whatever its kind. A binding
with no origins at all is agent-obtained (fail-closed).

A ``check`` verdict's ``provenance`` is ``"verified"`` when every compared binding is
runtime-obtained, ``"asserted"`` when at least one is agent-obtained, and absent (``None``)
when nothing was compared. Its orthogonal ``inputs`` axis is ``"flow-local"`` only when every
origin (transitively) of every compared binding is ``literal``/``default``/``flow-input``, and
``"live"`` otherwise — including when nothing was compared, since a check that runs a process
may observe anything. Neither axis is a reproducibility guarantee.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = [
    "AUTHORED_KINDS",
    "Binding",
    "InputsLocality",
    "ObtainedBy",
    "Origin",
    "OriginKind",
    "Provenance",
    "derive_inputs",
    "derive_provenance",
    "is_flow_local",
    "is_runtime_obtained",
]

OriginKind = Literal["literal", "default", "flow-input", "node-output", "agent"]
ObtainedBy = Literal["runtime", "agent"]
Provenance = Literal["verified", "asserted"]
InputsLocality = Literal["live", "flow-local"]

AUTHORED_KINDS: frozenset[str] = frozenset({"literal", "default", "flow-input"})
"""Kinds whose value is the flow's own authored state (or its run input)."""


class Origin(BaseModel):
    """One provenance record for a bound value.

    Attributes:
        kind: where the value came from (see the module table).
        node: the producing node id, for ``node-output`` and ``agent`` origins.
        path: optional path inside the producer's output (e.g. ``fields.report``) or run input.
        obtained_by: ``"runtime"`` or ``"agent"``; ``None`` means unknown and reads fail-closed
            for ``node-output``.
        origins: for ``node-output``, the input origins the producer recorded when it ran;
            ``None`` when it recorded none (fail-closed). Walked transitively for every kind.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: OriginKind
    node: str | None = None
    path: str | None = None
    obtained_by: ObtainedBy | None = None
    origins: tuple[Origin, ...] | None = None


class Binding(BaseModel):
    """A resolved input value and the origins that explain it.

    The ``value`` reaches the process as an environment variable; the ``origins`` never do —
    they stay on the request and are echoed on the result.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    value: JsonValue
    origins: tuple[Origin, ...] = Field(default=())


def _walk(origins: Iterable[Origin]) -> Iterable[Origin]:
    """Every origin in the trees rooted at ``origins`` (iterative, depth-first)."""
    stack = list(origins)
    while stack:
        origin = stack.pop()
        yield origin
        if origin.origins:
            stack.extend(origin.origins)


def _origin_is_runtime(origin: Origin) -> bool:
    """This one record (not its ancestors) reads as runtime-obtained."""
    if origin.obtained_by == "agent":
        return False
    if origin.kind in AUTHORED_KINDS:
        return True
    if origin.kind == "node-output":
        return origin.obtained_by == "runtime" and origin.origins is not None
    return False  # "agent", and anything unforeseen: fail-closed


def is_runtime_obtained(binding: Binding) -> bool:
    """True iff the binding has origins and every origin, with all ancestors, is runtime-obtained."""
    if not binding.origins:
        return False
    return all(_origin_is_runtime(origin) for origin in _walk(binding.origins))


def is_flow_local(binding: Binding) -> bool:
    """True iff the binding has origins and every one of them, transitively, is an authored kind."""
    if not binding.origins:
        return False
    return all(origin.kind in AUTHORED_KINDS for origin in _walk(binding.origins))


def derive_provenance(compared: Mapping[str, Binding]) -> Provenance | None:
    """``"verified"``/``"asserted"`` for the compared bindings; ``None`` when there are none."""
    if not compared:
        return None
    return "verified" if all(is_runtime_obtained(b) for b in compared.values()) else "asserted"


def derive_inputs(compared: Mapping[str, Binding]) -> InputsLocality:
    """``"flow-local"`` only when every compared binding is flow-local; ``"live"`` otherwise."""
    if compared and all(is_flow_local(b) for b in compared.values()):
        return "flow-local"
    return "live"
