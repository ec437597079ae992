"""Fixtures of the model tests: real model calls blocked (only 127.0.0.1 goes through), and a
scripted provider server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from model_server import FakeProvider

from tether.testing import block_network_models


@pytest.fixture(autouse=True)
def _no_real_models() -> Iterator[None]:
    with block_network_models():
        yield


@pytest.fixture(scope="session")
def _provider_server() -> Iterator[FakeProvider]:
    server = FakeProvider()
    yield server
    server.close()


@pytest.fixture
def provider(_provider_server: FakeProvider) -> Iterator[FakeProvider]:
    _provider_server.reset()
    yield _provider_server
    leftover = len(_provider_server.replies)
    _provider_server.reset()
    assert leftover == 0, f"{leftover} scripted provider replies were never requested"


@pytest.fixture
def sleeps() -> list[float]:
    return []
