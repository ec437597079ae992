"""Running ``tether`` in a subprocess with no model configured."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SHIPPING = EXAMPLES / "shipping.py"
SUPPORT = EXAMPLES / "support.py"
SESSION_LINE = re.compile(r"^session ([0-9a-f-]{36})", re.MULTILINE)


@dataclass
class Done:
    """A finished ``tether`` process."""

    code: int
    out: str
    err: str

    @property
    def session(self) -> str:
        """The first session id the chat printed."""
        found = SESSION_LINE.search(self.out)
        assert found, self.out
        return found.group(1)

    def replies(self, name: str) -> list[str]:
        """The agent's replies, in order (the text after ``<name>> ``)."""
        prefix = f"{name}> "
        return [line.split(prefix, 1)[1] for line in self.out.splitlines() if prefix in line]

    def infos(self) -> list[str]:
        """The info lines (``[flow/node · N calls ...]``), in order."""
        return re.findall(r"^\[([^\]]*)\]$", self.out, re.MULTILINE)


def child_env() -> dict[str, str]:
    """The environment of a child: no model, no colours, the source tree importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "OPENAI_", "ANTHROPIC_"))}
    env.pop("FORCE_COLOR", None)
    env["NO_COLOR"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p)
    return env


def tether(*args: str | Path, stdin: str = "", cwd: Path | None = None, timeout: float = 60,
           env: dict[str, str] | None = None) -> Done:
    """Run ``python -m tether.cli ARGS`` with ``stdin`` piped in (``env`` adds variables)."""
    proc = subprocess.run(
        [sys.executable, "-m", "tether.cli", *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**child_env(), **(env or {})},
        timeout=timeout,
    )
    return Done(proc.returncode, proc.stdout, proc.stderr)


def chat(app: Path, db: Path, *lines: str, cwd: Path | None = None, extra: tuple[str, ...] = ()) -> Done:
    """``tether chat APP --db DB`` fed ``lines`` (then EOF)."""
    stdin = "".join(line + "\n" for line in lines)
    return tether("chat", app, "--db", db, *extra, stdin=stdin, cwd=cwd)
