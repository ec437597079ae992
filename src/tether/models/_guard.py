"""The switch that keeps tests from calling real model providers.

The adapters call :func:`check_call_allowed` before every request. While calls are blocked
(:func:`tether.testing.block_network_models`), only base URLs on the local machine (``127.0.0.1``,
``localhost``, ``::1``) go through; anything else raises :class:`RealModelCallBlocked`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["LOCAL_HOSTS", "RealModelCallBlocked", "check_call_allowed", "is_blocked", "set_blocked"]

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_state = {"blocked": False}


class RealModelCallBlocked(AssertionError):
    """A real model call was attempted while calls are blocked (in tests).

    An ``AssertionError``, like ``ScriptExhausted``, so that no provider-error handling (retries,
    fallbacks) mistakes it for a provider failure: the test fails loudly.
    """


def set_blocked(blocked: bool) -> bool:
    """Block (or allow) real model calls; returns the previous setting."""
    previous = _state["blocked"]
    _state["blocked"] = blocked
    return previous


def is_blocked() -> bool:
    """Whether real model calls are blocked."""
    return _state["blocked"]


def check_call_allowed(model: str, base_url: str) -> None:
    """Raise :class:`RealModelCallBlocked` when calls are blocked and ``base_url`` is not local."""
    if not _state["blocked"]:
        return
    host = (urlsplit(base_url).hostname or "").lower()
    if host not in LOCAL_HOSTS:
        raise RealModelCallBlocked(
            f"real model calls are blocked in tests ({model} at {base_url}); use tether.testing.ScriptedModel"
        )
