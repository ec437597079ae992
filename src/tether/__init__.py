"""tether: deterministic, durable LLM agents.

Flows are graphs of typed nodes; the model is used only where language is needed; every turn is
saved with compare-and-swap; side effects are journaled so nothing runs twice.
"""

from tether.errors import (
    FlowDefinitionError,
    FlowRuntimeError,
    ModelError,
    OscillationError,
    SessionConflict,
    StoreError,
    TetherError,
    TransitionError,
)

__all__ = [
    "FlowDefinitionError",
    "FlowRuntimeError",
    "ModelError",
    "OscillationError",
    "SessionConflict",
    "StoreError",
    "TetherError",
    "TransitionError",
]
