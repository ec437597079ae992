"""``tether chat`` in a real pseudo-terminal (pexpect): the banner, the agent speaking first, an
empty line that does not quit, replies streaming as they are generated, the resumed session's last
bot message, and waits and handoffs in the status line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cli_helpers import ROOT, child_env

pexpect = pytest.importorskip("pexpect")

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


def spawn(tmp_path: Path, *args: str | Path) -> pexpect.spawn:
    env = child_env()
    env["GATE"] = str(tmp_path / "gate")
    env["TERM"] = "dumb"  # plain text: no styles to match around
    child = pexpect.spawn(sys.executable, ["-m", "tether.cli", "chat", *map(str, args)], env=env, cwd=str(ROOT),
                          encoding="utf-8", timeout=30, dimensions=(40, 200))
    return child


def test_banner_opening_stream_empty_line_and_resume(tmp_path: Path, app: Path) -> None:
    db = tmp_path / "chat.db"
    child = spawn(tmp_path, app, "--agent", "Gus", "--db", db)
    child.expect(r"tether chat · Gus \(Gus\) · /help for commands, /quit to leave")
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
    child.expect_exact(f"resume with: tether chat {app} --session {session}")
    child.expect(pexpect.EOF)

    again = spawn(tmp_path, app, "--agent", "Gus", "--db", db, "--session", session)
    again.expect_exact(f"session {session} (resumed)")
    again.expect_exact("Gus> Hello there, friend!")  # the last bot message, reprinted
    again.expect_exact("you> ")
    again.sendeof()  # Ctrl-D leaves
    again.expect(pexpect.EOF)
    again.close()
    assert again.exitstatus == 0


def test_a_wait_shows_in_the_status_line(tmp_path: Path, app: Path) -> None:
    child = spawn(tmp_path, f"{app}:waiter", "--db", tmp_path / "wait.db")
    child.expect_exact("you> ")  # no opening: the agent waits for the user
    child.sendline("where is my parcel?")
    child.expect_exact("Wendy> One moment, checking.")
    child.expect(r"\[pause/hold · 0 calls · pause waits for timer until \d{4}-\d\d-\d\d \d\d:\d\d\]")
    child.expect_exact("you> ")
    child.sendcontrol("c")  # Ctrl-C leaves
    child.expect(pexpect.EOF)


def test_a_handoff_shows_in_the_status_line_and_then_the_bot_is_quiet(tmp_path: Path, app: Path) -> None:
    child = spawn(tmp_path, f"{app}:passer", "--db", tmp_path / "handoff.db")
    child.expect_exact("you> ")
    child.sendline("I want a person")
    child.expect_exact("Hank> A person will take it from here.")
    child.expect_exact("[- · 0 calls · handoff to human: needs a person]")
    child.expect_exact("you> ")
    child.sendline("hello?")
    child.expect_exact("[- · 0 calls · handed off to a human: the bot stays quiet]")
    child.expect_exact("you> ")
    child.sendline("/quit")
    child.expect(pexpect.EOF)
