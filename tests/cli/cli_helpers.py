"""Running ``tether`` with no model configured: in-process through typer's ``CliRunner`` (fast),
or, with ``process=True``, as ``python -m tether.cli`` in a subprocess: the user's real path,
which every command keeps at least one test on."""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from typer.testing import CliRunner

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
           env: dict[str, str] | None = None, process: bool = False) -> Done:
    """Run ``tether ARGS`` with ``stdin`` piped in (``env`` adds variables): in-process, or in a
    subprocess (``python -m tether.cli``) when ``process``."""
    if not process:
        return _in_process([str(a) for a in args], stdin, cwd, env or {})
    command = [sys.executable, "-m", "tether.cli", *map(str, args)]
    try:
        proc = subprocess.run(command, input=stdin, capture_output=True, text=True, cwd=cwd,
                              env={**child_env(), **(env or {})}, timeout=timeout)
    except subprocess.TimeoutExpired as exc:  # the child is killed by then
        raise AssertionError(f"tether {' '.join(command[3:])} still ran after {timeout}s (killed); "
                             f"stdout so far: {_text(exc.stdout)!r}; stderr: {_text(exc.stderr)!r}") from None
    return Done(proc.returncode, proc.stdout, proc.stderr)


def _text(captured: str | bytes | None) -> str:
    if isinstance(captured, bytes):
        return captured.decode(errors="replace")
    return captured or ""


class Lines:
    """The lines a child writes to a pipe, read on a thread of their own, so that a test waits
    for each one with a bound: a child that hangs fails the test with what it wrote so far."""

    def __init__(self, stream: IO[str], name: str) -> None:
        self.name = name
        self.seen: list[str] = []
        self._lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        threading.Thread(target=self._pump, args=(stream,), name=f"lines of {name}", daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        with stream:
            for line in stream:
                self._lines.put(line)
        self._lines.put(None)

    def next(self, timeout: float = 30) -> str:
        """The next line ("" at the end of the stream)."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line on {self.name} within {timeout}s; "
                                 f"it wrote {''.join(self.seen)!r}") from None
        if line is None:
            self._lines.put(None)  # the end, for every later call too
            return ""
        self.seen.append(line)
        return line

    def rest(self, timeout: float = 30) -> str:
        """Every line up to the end of the stream."""
        lines = []
        while line := self.next(timeout):
            lines.append(line)
        return "".join(lines)


def _in_process(args: list[str], stdin: str, cwd: Path | None, env: dict[str, str]) -> Done:
    """``tether ARGS`` through ``CliRunner``, in the environment a child gets. What the command
    imports from outside tether and the installed packages (the app under test) is forgotten
    afterwards, and ``sys.path`` restored, so the next call imports its app afresh. An exception
    that escapes the command is raised here (a subprocess would print a traceback)."""
    from tether.cli._app import app

    scrubbed: dict[str, str | None] = {k: None for k in os.environ
                                       if k.startswith(("TETHER_", "OPENAI_", "ANTHROPIC_")) or k == "FORCE_COLOR"}
    path, modules, here = list(sys.path), set(sys.modules), Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        result = CliRunner().invoke(app, args, input=stdin, env={**scrubbed, "NO_COLOR": "1", **env},
                                    catch_exceptions=False, prog_name="tether")
    finally:
        os.chdir(here)
        sys.path[:] = path
        for name in set(sys.modules) - modules:
            if not _kept(sys.modules[name]):
                del sys.modules[name]
    return Done(result.exit_code, result.stdout, result.stderr)


_KEPT_ROOTS = tuple(str(p) for p in {ROOT / "src", Path(sys.prefix), Path(sys.base_prefix)})


def _kept(module: object) -> bool:
    file = getattr(module, "__file__", None)
    return file is None or str(file).startswith(_KEPT_ROOTS)


def chat(app: Path, db: Path, *lines: str, cwd: Path | None = None, extra: tuple[str, ...] = (),
         process: bool = False) -> Done:
    """``tether chat APP --db DB`` fed ``lines`` (then EOF)."""
    stdin = "".join(line + "\n" for line in lines)
    return tether("chat", app, "--db", db, *extra, stdin=stdin, cwd=cwd, process=process)


def copy_support(folder: Path) -> Path:
    """``examples/support.py`` and its data, byte for byte, in ``folder`` (a release directory)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(SUPPORT, folder / "support.py")
    shutil.copytree(EXAMPLES / "data", folder / "data")
    return folder / "support.py"
