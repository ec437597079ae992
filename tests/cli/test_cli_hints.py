"""Every command ``tether`` prints as a hint works when pasted: the chat's and the workflow
run's "resume with:" lines are run here as printed, by the installed ``tether`` script."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from cli_helpers import EXAMPLES, SUPPORT, Done, child_env

TETHER = Path(sys.executable).with_name("tether")
RESUME = re.compile(r"^resume with: (.+)$", re.MULTILINE)
PARKED = re.compile(r"run (\S+) is parked; resume with: (.+)$", re.MULTILINE)


def run(*args: str | Path, stdin: str = "", cwd: Path) -> Done:
    """The installed ``tether`` script, run as a user types it."""
    proc = subprocess.run([str(a) for a in args], input=stdin, capture_output=True, text=True, cwd=cwd,
                          env=child_env(), timeout=60)
    return Done(proc.returncode, proc.stdout, proc.stderr)


def pasted(line: str, *, stdin: str = "", cwd: Path) -> Done:
    """The hint ``line``, run as a shell would run it when pasted."""
    return run(*shlex.split(line), stdin=stdin, cwd=cwd)


def test_the_chat_resume_hint_keeps_the_store_and_resumes_from_anywhere(tmp_path: Path) -> None:
    db = tmp_path / "stores" / "support.db"
    first = run(TETHER, "chat", SUPPORT, "--db", db, stdin="where is my order\n/quit\n", cwd=tmp_path)
    assert first.code == 0, first.err
    hint = RESUME.search(first.out)
    assert hint, first.out
    assert hint.group(1) == f"{TETHER} chat {SUPPORT} --session {first.session} --db {db}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = pasted(hint.group(1), stdin="A-1002\n", cwd=elsewhere)
    assert again.code == 0, again.err
    assert f"session {first.session} (resumed)" in again.out and "not found" not in again.out
    assert "Order A-1002 is processing" in again.out


def test_the_chat_resume_hint_with_the_default_store(tmp_path: Path) -> None:
    first = run(TETHER, "chat", SUPPORT, stdin="where is my order\n", cwd=tmp_path)
    hint = RESUME.search(first.out)
    assert hint and hint.group(1) == f"{TETHER} chat {SUPPORT} --session {first.session}", first.out
    again = pasted(hint.group(1), stdin="A-1002\n", cwd=tmp_path)
    assert f"session {first.session} (resumed)" in again.out, again.out


def test_the_parked_workflow_hint_is_a_command_that_resumes_the_run(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    first = run(TETHER, "workflow", "run", EXAMPLES / "release.yaml", "--input", "version=2.0.0", "--db", "runs.db",
                "--workspace", "ws", stdin="q\n", cwd=tmp_path)
    assert first.code == 0, first.err
    parked = PARKED.search(first.out)
    assert parked, first.out
    run_id, hint = parked.groups()
    assert hint == (f"{TETHER} workflow run {EXAMPLES / 'release.yaml'} --run {run_id} --db {tmp_path / 'runs.db'} "
                    f"--workspace {workspace}")
    again = pasted(hint, stdin="a\nship it\n", cwd=Path("/"))
    assert again.code == 0, again.err
    assert f"run {run_id} complete" in again.out


def test_a_banner_names_the_agent_once_when_its_id_is_its_name(tmp_path: Path) -> None:
    done = run(TETHER, "chat", SUPPORT, "--db", "t.db", stdin="/quit\n", cwd=tmp_path)
    assert done.out.splitlines()[0] == "tether chat · Sam · /help for commands, /quit to leave"
