"""``tether chat`` in a real pseudo-terminal (pexpect): the banner, the agent speaking first, an
empty line that does not quit, replies streaming as they are generated, the resumed session's last
bot message, waits and handoffs in the status line, and Ctrl-C leaving at once, at the prompt or
during a model call. Every wait for the child is bounded: a hang fails with what it showed."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_helpers import ROOT, child_env

pexpect = pytest.importorskip("pexpect")
Spawn = Callable[..., "pexpect.spawn"]

APP = '''
import asyncio
import os
from pathlib import Path

from tether import Agent, Flow, end, handoff, on_event, on_message, reply, wait
from tether.testing import ScriptedModel


class GatedModel(ScriptedModel):
    """Streams each reply in two pieces and holds the second until the file GATE exists."""

    async def stream(self, request):
        response = await self.complete(request)
        cut = response.text.index(",")
        yield type(self).chunk(delta=response.text[:cut])
        while not Path(os.environ["GATE"]).exists():
            await asyncio.sleep(0.01)
        yield type(self).chunk(delta=response.text[cut:])
        yield type(self).chunk(done=True, response=response)


from tether.models import StreamChunk

GatedModel.chunk = StreamChunk
welcome = Flow("welcome", "greets", nodes=[reply("hello", response="Hi, I'm Gus. How can I help?", next=end("done"))],
               on=[on_event("start")])
talk = Flow("talk", "talks", nodes=[reply("talk", instructions="Answer.")], on=[on_message()])
agent = Agent("Gus", flows=[welcome, talk], idle="silent",
              model=GatedModel(speak=['{"message": "Hello there, friend!"}'] * 5))

pause = Flow("pause", "waits", nodes=[
    reply("moment", response="One moment, checking.", next="hold"),
    wait("hold", timer="1h", then=end("done")),
], on=[on_message()])
waiter = Agent("Wendy", flows=[pause], idle="silent")

human = Flow("human", "hands off", nodes=[
    reply("bye", response="A person will take it from here.", next=handoff("human", "needs a person")),
], on=[on_message()])
passer = Agent("Hank", flows=[human], idle="silent")
'''


@pytest.fixture
def app(tmp_path: Path) -> Path:
    path = tmp_path / "gus_app.py"
    path.write_text(APP)
    return path


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Spawn]:
    """Starts ``tether chat ARGS`` in a pseudo-terminal. Every wait for its output is bounded (the
    spawn's ``timeout``), and every child is closed after the test (killed if it still runs)."""
    children: list[pexpect.spawn] = []

    def start(*args: str | Path) -> pexpect.spawn:
        env = child_env()
        env["GATE"] = str(tmp_path / "gate")
        env["TERM"] = "dumb"  # plain text: no styles to match around
        child = pexpect.spawn(sys.executable, ["-m", "tether.cli", "chat", *map(str, args)], env=env,
                              cwd=str(ROOT), encoding="utf-8", timeout=30, dimensions=(40, 200))
        children.append(child)
        return child

    yield start
    for child in children:
        child.close(force=True)


def exits(child: pexpect.spawn, after: str, *, saying: str = "") -> None:
    """The chat ends (within the spawn's timeout) after ``after``, its last words ``saying``, with
    exit status 0."""
    if child.expect_exact([saying, pexpect.TIMEOUT]) == 1 or child.expect([pexpect.EOF, pexpect.TIMEOUT]) == 1:
        pytest.fail(f"tether chat still ran {child.timeout}s after {after}; it last showed {child.before[-300:]!r}")
    child.close()
    assert child.exitstatus == 0, f"tether chat ended with {child.exitstatus or child.signalstatus} after {after}"


def test_banner_opening_stream_empty_line_and_resume(tmp_path: Path, app: Path, spawn: Spawn) -> None:
    db = tmp_path / "chat.db"
    child = spawn(app, "--agent", "Gus", "--db", db)
    child.expect_exact("tether chat · Gus · /help for commands, /quit to leave")  # one name: id and name agree
    child.expect(r"session ([0-9a-f-]{36})")
    session = child.match.group(1)
    child.expect_exact("Gus> Hi, I'm Gus. How can I help?")  # the agent speaks first (its start event)
    child.expect_exact("you> ")
    child.sendline("")  # an empty line does not quit
    child.expect_exact("you> ")
    child.sendline("hello")
    child.expect_exact("Gus> Hello there")  # the first piece is on screen while the model still holds the rest
    assert not (tmp_path / "gate").exists()
    (tmp_path / "gate").touch()
    child.expect_exact(", friend!")
    child.expect(r"\[talk/talk · 1 call")
    child.expect_exact("you> ")
    child.sendline("/quit")
    exits(child, "/quit", saying=f"resume with: tether chat {app} --session {session} --db {db} --agent Gus")

    again = spawn(app, "--agent", "Gus", "--db", db, "--session", session)
    again.expect_exact(f"session {session} (resumed)")
    again.expect_exact("Gus> Hello there, friend!")  # the last bot message, reprinted
    again.expect_exact("you> ")
    again.sendeof()  # Ctrl-D leaves
    exits(again, "Ctrl-D")


def test_a_wait_shows_in_the_status_line(tmp_path: Path, app: Path, spawn: Spawn) -> None:
    child = spawn(f"{app}:waiter", "--db", tmp_path / "wait.db")
    child.expect_exact("you> ")  # no opening: the agent waits for the user
    child.sendline("where is my parcel?")
    child.expect_exact("Wendy> One moment, checking.")
    child.expect(r"\[pause/hold · 0 calls · pause waits for timer until \d{4}-\d\d-\d\d \d\d:\d\d\]")
    child.expect_exact("you> ")
    child.sendcontrol("c")  # Ctrl-C leaves, however soon after the prompt it comes
    exits(child, "Ctrl-C at the prompt", saying="resume with: tether chat ")


def test_a_handoff_shows_in_the_status_line_and_then_the_bot_is_quiet(tmp_path: Path, app: Path, spawn: Spawn) -> None:
    child = spawn(f"{app}:passer", "--db", tmp_path / "handoff.db")
    child.expect_exact("you> ")
    child.sendline("I want a person")
    child.expect_exact("Hank> A person will take it from here.")
    child.expect_exact("[- · 0 calls · handoff to human: needs a person]")
    child.expect_exact("you> ")
    child.sendline("hello?")
    child.expect_exact("[- · 0 calls · handed off to a human: the bot stays quiet]")
    child.expect_exact("you> ")
    child.sendline("/quit")
    exits(child, "/quit")


def test_ctrl_c_during_a_model_call_leaves_and_the_session_resumes(tmp_path: Path, app: Path, spawn: Spawn) -> None:
    db = tmp_path / "chat.db"
    child = spawn(app, "--agent", "Gus", "--db", db)
    child.expect(r"session ([0-9a-f-]{36})")
    session = child.match.group(1)
    child.expect_exact("you> ")
    child.sendline("hello")
    child.expect_exact("Gus> Hello there")  # the model holds the rest of its reply
    child.sendcontrol("c")
    exits(child, "Ctrl-C during a model call",
          saying=f"resume with: tether chat {app} --session {session} --db {db} --agent Gus")

    again = spawn(app, "--agent", "Gus", "--db", db, "--session", session)
    again.expect_exact(f"session {session} (resumed)")
    again.expect_exact("you> ")
    (tmp_path / "gate").touch()
    again.sendline("hello again")
    again.expect_exact("Gus> Hello there, friend!")
    again.expect_exact("you> ")
    again.sendeof()
    exits(again, "Ctrl-D")
