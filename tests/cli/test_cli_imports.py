"""The ``tether`` command loads what a command needs when it runs: building the command line (all
that ``tether --help`` does) imports none of the workflow engine, the flow-file dialect, the
stores, the runtime, the server or the testing helpers."""

from __future__ import annotations

import subprocess
import sys

from cli_helpers import child_env

HEAVY = ("tether.workflow", "tether.workflow_host", "tether.dialect", "tether.stores", "tether.runtime",
         "tether.server", "tether.testing", "tether.cli._chat", "tether.apps", "tether.cli._workflow_run")


def test_building_the_command_line_imports_no_command_body() -> None:
    watched = (*HEAVY, "tether.cli._app")  # the probe must see the module it imported
    probe = f"import sys, tether.cli._app\nprint(*sorted(m for m in sys.modules if m.startswith({watched!r})))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=child_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["tether.cli._app"]
