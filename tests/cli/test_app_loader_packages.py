"""The app loader imports a file inside a package under its package name: ``pkg/app.py`` and
``pkg.app:agent`` are one module, and the file's relative imports work."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.apps import load_app

APP = '''
from tether import Agent, Flow, on_message, reply
from .wording import GREETING

agent = Agent("Pia", flows=[Flow("greet", nodes=[reply("hi", response=GREETING)], on=[on_message()])])
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder holding package ``shop_pkg`` (an app with a relative import), as the working
    directory; what the loader adds to ``sys.path`` and ``sys.modules`` is undone afterwards."""
    package = tmp_path / "shop_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "wording.py").write_text("GREETING = 'Hello from the package.'\n")
    (package / "app.py").write_text(APP)
    monkeypatch.chdir(tmp_path)
    path, modules = list(sys.path), set(sys.modules)
    yield tmp_path
    sys.path[:] = path
    for name in set(sys.modules) - modules:
        del sys.modules[name]


def test_a_file_in_a_package_is_its_package_module(project: Path) -> None:
    by_path = load_app("shop_pkg/app.py")  # was: "attempted relative import with no known parent package"
    by_module = load_app("shop_pkg.app:agent")
    assert by_path.agent() is by_module.agent()
    assert sys.modules["shop_pkg.app"].agent is by_path.agent()
    assert load_app(os.path.join(project, "shop_pkg", "app.py")).agent() is by_path.agent()
