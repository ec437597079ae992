"""``tether chat`` on examples/shipping.py with scripted stdin and no model, then resumed."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import SHIPPING, Lines, chat, child_env, tether

from tether.flow.agent_def import DEFAULT_FAILURE_REPLY

ASK = "Which address should the shipment go to?"


def _state(out: str) -> dict[str, object]:
    """The JSON object /state printed (the first ``{`` line to its closing ``}``)."""
    block = re.search(r"^\{$.*?^\}$", out, re.MULTILINE | re.DOTALL)
    assert block, out
    state: dict[str, object] = json.loads(block.group(0))
    return state


def test_conversation_then_resume_in_a_second_process(tmp_path: Path) -> None:
    db = tmp_path / "nested" / "dir" / "tether.db"
    first = chat(SHIPPING, db, "hi", "I want to ship something", "/state", "", cwd=tmp_path, process=True)
    assert first.code == 0, first.err
    assert first.err == ""
    assert db.is_file()  # the directory was created
    assert first.replies("Shippy") == [ASK, ASK]
    assert first.infos() == ["ship/get_address · 0 calls", "ship/get_address · 0 calls"]
    session = first.session
    state = _state(first.out)
    assert state["id"] == session
    assert state["status"] == "running"
    assert state["runs"] == [{"flow": "ship", "node": "get_address", "status": "asking"}]
    assert f"--session {session}" in first.out

    second = chat(SHIPPING, db, "12 Main Street", "/state", "/quit", cwd=tmp_path, extra=("--session", session),
                  process=True)
    assert second.code == 0, second.err
    assert f"session {session} (resumed)" in second.out
    assert second.infos()[0] == "ship/get_address"  # where the first process stopped
    reprinted, reply = second.replies("Shippy")
    assert reprinted == ASK  # the resumed session's last bot message, shown again
    resumed = _state(second.out)
    assert resumed["id"] == session
    if reply == ASK:  # the address was not taken: still asking at the same node
        assert resumed["runs"] == [{"flow": "ship", "node": "get_address", "status": "asking"}]
    else:  # the address was taken: booked through the tool, the flow ended
        assert "12 Main Street" in reply and "trk_14" in reply
        assert resumed["runs"] == []
    assert isinstance(resumed["revision"], int) and isinstance(state["revision"], int)
    assert resumed["revision"] > state["revision"]

    shown = tether("sessions", "show", session, "--db", db)
    assert shown.code == 0, shown.err
    assert "transcript (6 message(s)):" in shown.out  # 2 turns + 1 turn, each a user and an agent message
    assert "user/user: 12 Main Street" in shown.out


def test_unknown_session_starts_a_new_one(tmp_path: Path) -> None:
    done = chat(SHIPPING, tmp_path / "t.db", "hi", extra=("--session", "no-such-session"))
    assert done.code == 0, done.err
    assert "session no-such-session not found; starting a new one" in done.out
    new = re.findall(r"^session ([0-9a-f-]{36})$", done.out, re.MULTILINE)
    assert len(new) == 1
    assert done.replies("Shippy") == [ASK]


def test_slash_commands_and_eof(tmp_path: Path) -> None:
    done = chat(SHIPPING, tmp_path / "t.db", "/help", "/graph", "hi", "/reset", "/nope", "hi")
    assert done.code == 0, done.err  # stdin ends without an empty line: EOF exits cleanly
    assert "/state" in done.out and "/reset" in done.out
    assert "%% flow ship" in done.out and "flowchart" in done.out
    ids = re.findall(r"^session ([0-9a-f-]{36})$", done.out, re.MULTILINE)
    assert len(ids) == 2 and ids[0] != ids[1]
    assert "error: unknown command /nope (try /help)" in done.out
    assert done.replies("Shippy") == [ASK, ASK]


def test_scripted_messages(tmp_path: Path) -> None:
    done = tether("chat", SHIPPING, "--db", tmp_path / "t.db", "--message", "hi", "--message", "/state")
    assert done.code == 0, done.err
    assert done.replies("Shippy") == [ASK]
    assert '"node": "get_address"' in done.out


def test_bad_model_is_a_one_line_error(tmp_path: Path) -> None:
    done = tether("chat", SHIPPING, "--db", tmp_path / "t.db", "--model", "no-colon-here")
    assert done.code == 2
    assert done.err.startswith("error: invalid --model 'no-colon-here'")
    assert len(done.err.strip().splitlines()) == 1
    env = tether("chat", SHIPPING, "--db", tmp_path / "t.db", env={"TETHER_MODEL": "nonsense"})
    assert env.code == 2
    assert env.err.startswith("error: invalid TETHER_MODEL")
    unknown = tether("chat", SHIPPING, "--db", tmp_path / "t.db", "--model", "nosuchprovider:some-model")
    assert unknown.code == 2 and len(unknown.err.strip().splitlines()) == 1
    assert unknown.err.startswith("error: invalid")
    keyless = tether("chat", SHIPPING, "--db", tmp_path / "t.db", "--model", "openai:gpt-4o-mini")
    assert keyless.code == 2 and "No API key for 'openai:gpt-4o-mini'" in keyless.err  # before any turn
    assert not (tmp_path / "t.db").exists()


def test_failed_turn_is_reported_and_the_chat_goes_on(tmp_path: Path) -> None:
    app = tmp_path / "failing.py"
    app.write_text(
        "from tether import Agent, Flow, on_message, reply\n"
        "flow = Flow('f', nodes=[reply('r', response='hello', next=lambda turn, state: 42)],\n"
        "            on=[on_message(repeat='always')])\n"
        "agent = Agent('Failer', flows=[flow])\n"
    )
    done = chat(app, tmp_path / "t.db", "hi", "again", process=True)
    assert done.code == 0, done.err
    assert done.replies("Failer") == ["hello", DEFAULT_FAILURE_REPLY, "hello", DEFAULT_FAILURE_REPLY]
    infos = done.infos()
    assert len(infos) == 2 and all("error: flow 'f', node 'r': TransitionError: returned 42" in i for i in infos)
    assert "(new)" not in done.out and done.err == ""  # the same session goes on; no log line in the chat


def test_ctrl_c_at_the_prompt_exits_cleanly(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether.cli", "chat", str(SHIPPING), "--db", str(tmp_path / "t.db")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = Lines(proc.stdout, "stdout"), Lines(proc.stderr, "stderr")
    try:
        assert out.next().startswith("tether chat · Shippy")  # the banner
        assert out.next().startswith("session ")
        time.sleep(0.3)  # now blocked at the prompt (or about to be: a Ctrl-C must end the chat either way)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)  # stdin stays open: the Ctrl-C alone ends the chat
        except subprocess.TimeoutExpired:
            pytest.fail(f"tether chat still ran 30s after a Ctrl-C at the prompt; it wrote {''.join(out.seen)!r}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        assert proc.stdin is not None
        proc.stdin.close()
    errors = err.rest()
    assert proc.returncode == 0, errors
    assert "Traceback" not in errors


def test_a_second_ctrl_c_while_the_chat_closes_leaves_without_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.cli import _chat

    closing: list[str] = []

    async def interrupted_close(self: _chat.Chat) -> None:
        closing.append("close")
        raise KeyboardInterrupt  # what asyncio.Runner raises when Ctrl-C cancels the closing task

    monkeypatch.setattr(_chat.Chat, "close", interrupted_close)
    done = tether("chat", SHIPPING, "--db", tmp_path / "t.db", "--message", "hi")  # raises if it escapes
    assert closing == ["close"]
    assert done.code == 0 and "resume with: tether chat " in done.out
    again = tether("chat", SHIPPING, "--db", tmp_path / "t.db", "--session", _session(done.out), "--message", "hi")
    assert again.code == 0 and "(resumed)" in again.out  # what the first chat said was saved before it closed


def _session(out: str) -> str:
    found = re.search(r"--session ([0-9a-f-]{36})", out)
    assert found is not None, out
    return found.group(1)
