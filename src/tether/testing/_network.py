"""Keep tests off real model providers.

:func:`block_network_models` makes every real adapter (``OpenAIModel``, ``AnthropicModel``) raise
:class:`RealModelCallBlocked` before a request to any host but the local machine (``127.0.0.1``,
``localhost``, ``::1``), so tests that run a fake provider server on 127.0.0.1 keep working while a
stray call to a real provider fails loudly. :func:`allow_network_models` lifts the block (for
opt-in live tests). Both work as a plain call (the setting stays) or as a context manager (the
previous setting comes back on exit). A whole suite is blocked with one autouse fixture::

    @pytest.fixture(autouse=True)
    def _no_real_models() -> Iterator[None]:
        with block_network_models():
            yield
"""

from __future__ import annotations

from types import TracebackType

from tether.models._guard import RealModelCallBlocked, is_blocked, set_blocked

__all__ = ["NetworkModelsSwitch", "RealModelCallBlocked", "allow_network_models", "block_network_models"]


class NetworkModelsSwitch:
    """The result of :func:`block_network_models` / :func:`allow_network_models`: already applied;
    as a context manager it restores the previous setting on exit."""

    def __init__(self, blocked: bool) -> None:
        self.previous = set_blocked(blocked)
        self.blocked = blocked

    def __enter__(self) -> NetworkModelsSwitch:
        set_blocked(self.blocked)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        set_blocked(self.previous)

    def __bool__(self) -> bool:
        return is_blocked()


def block_network_models() -> NetworkModelsSwitch:
    """Block real model calls (only local base URLs go through)."""
    return NetworkModelsSwitch(True)


def allow_network_models() -> NetworkModelsSwitch:
    """Allow real model calls again."""
    return NetworkModelsSwitch(False)
