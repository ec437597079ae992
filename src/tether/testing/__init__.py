"""Test doubles: scripted models (and ``understood``, a reply builder), a strict fake model that says only
what a request offers, a fake clock, sequential ids."""

from tether.testing._clock import FakeClock, SequentialIds, parse_duration
from tether.testing._models import (
    FunctionModel,
    ScriptedCall,
    ScriptedModel,
    ScriptExhausted,
    to_response,
    tool_calls,
)
from tether.testing._network import (
    NetworkModelsSwitch,
    RealModelCallBlocked,
    allow_network_models,
    block_network_models,
)
from tether.testing._strict import Meaning, StrictModel, Unsaid
from tether.testing._understand import understood

__all__ = [
    "FakeClock",
    "FunctionModel",
    "Meaning",
    "NetworkModelsSwitch",
    "RealModelCallBlocked",
    "ScriptExhausted",
    "ScriptedCall",
    "ScriptedModel",
    "SequentialIds",
    "StrictModel",
    "Unsaid",
    "allow_network_models",
    "block_network_models",
    "parse_duration",
    "to_response",
    "tool_calls",
    "understood",
]
