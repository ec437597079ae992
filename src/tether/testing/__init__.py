"""Test doubles: scripted models, a fake clock, sequential ids."""

from tether.testing._clock import FakeClock, SequentialIds, parse_duration
from tether.testing._models import FunctionModel, ScriptedCall, ScriptedModel, ScriptExhausted, to_response

__all__ = [
    "FakeClock",
    "FunctionModel",
    "ScriptExhausted",
    "ScriptedCall",
    "ScriptedModel",
    "SequentialIds",
    "parse_duration",
    "to_response",
]
