"""The chat's ``you>`` prompt (``tether.cli._prompt.PromptReader``) on a real pseudo-terminal and
on a pipe: the lines typed, Ctrl-D, and a Ctrl-C caught while the reading thread was not there to
notice it (the signal went to another thread, as it may with the store's thread running, or came
between the prompt and the read), which must still end the prompt, not wait for another line."""

from __future__ import annotations

import os
import select
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import pytest

from tether.cli._prompt import PromptReader

pty = pytest.importorskip("pty")
pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads thread states from /proc")

BOUND = 20.0
"""Seconds any wait here is allowed before it counts as a hang (a failure, never a stall)."""


@dataclass
class Ends:
    """Both ends of a program's stdin and stdout: what a user types into and sees, what it uses."""

    keyboard: int
    screen: int
    stdin: TextIO
    stdout: TextIO

    def type(self, data: bytes) -> None:
        os.write(self.keyboard, data)

    def close_keyboard(self) -> None:
        """The end of input (a pipe's writer is gone)."""
        if self.keyboard >= 0:
            os.close(self.keyboard)
            self.keyboard = -1

    def shows(self, text: bytes) -> bytes:
        """What the screen shows, read until ``text`` appears (fails after ``BOUND`` seconds)."""
        seen = b""
        while text not in seen:
            ready, _, _ = select.select([self.screen], [], [], BOUND)
            assert ready, f"the screen never showed {text!r}; it showed {seen!r}"
            seen += os.read(self.screen, 4096)
        return seen


@pytest.fixture
def terminal() -> Iterator[Ends]:
    main, replica = pty.openpty()
    stdin = open(replica, encoding="utf-8", closefd=False)  # noqa: SIM115 - closed below
    stdout = open(replica, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    try:
        yield Ends(main, main, stdin, stdout)
    finally:
        stdin.close()
        stdout.close()
        os.close(replica)
        os.close(main)


@pytest.fixture
def pipes() -> Iterator[Ends]:
    typed, keyboard = os.pipe()
    screen, shown = os.pipe()
    stdin, stdout = open(typed, encoding="utf-8"), open(shown, "w", encoding="utf-8")  # noqa: SIM115
    ends = Ends(keyboard, screen, stdin, stdout)
    try:
        yield ends
    finally:
        stdin.close()
        stdout.close()
        os.close(screen)
        ends.close_keyboard()


def test_lines_typed_at_a_terminal_and_ctrl_d(terminal: Ends) -> None:
    reader = PromptReader(terminal.stdin, terminal.stdout)
    terminal.type("où est mon colis ?\n".encode())
    assert reader.read("you> ") == "où est mon colis ?"
    terminal.shows(b"you> ")
    terminal.type(b"half a line\x04\x04")  # Ctrl-D after some text hands it over, a second one ends it
    assert reader.read("you> ") == "half a line"
    terminal.type(b"\x04")  # Ctrl-D on an empty line: the end of input
    with pytest.raises(EOFError):
        reader.read("you> ")
    terminal.type(b"still there\n")  # a terminal may go on after a Ctrl-D
    assert reader.read("you> ") == "still there"


def test_lines_from_a_pipe_one_at_a_time(pipes: Ends) -> None:
    reader = PromptReader(pipes.stdin, pipes.stdout)
    pipes.type(b"first\r\nsecond\nlast without a newline")
    assert reader.read("you> ") == "first"
    assert pipes.shows(b"you> ") == b"you> "
    assert reader.read("you> ") == "second"
    pipes.close_keyboard()
    assert reader.read("you> ") == "last without a newline"
    with pytest.raises(EOFError):
        reader.read("you> ")


def _asleep(thread_id: int) -> bool:
    stat = Path(f"/proc/self/task/{thread_id}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "S"


@pytest.mark.parametrize("kind", ["terminal", "pipes"])
def test_a_ctrl_c_caught_on_another_thread_ends_the_prompt(kind: str, request: pytest.FixtureRequest) -> None:
    ends: Ends = request.getfixturevalue(kind)
    reader_thread = threading.get_native_id()
    assert threading.current_thread() is threading.main_thread()  # where Python runs signal handlers
    finished = threading.Event()
    unblocked: list[str] = []

    def press_ctrl_c_elsewhere() -> None:
        ends.shows(b"you> ")  # the prompt is out: the reader is about to wait, or waits
        for _ in range(int(BOUND * 100)):
            if _asleep(reader_thread):
                break
            finished.wait(0.01)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # caught here, on this thread
        if not finished.wait(BOUND):
            unblocked.append("a line had to be typed")
            ends.type(b"typed much later\n")

    helper = threading.Thread(target=press_ctrl_c_elsewhere, name="ctrl-c", daemon=True)
    helper.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            PromptReader(ends.stdin, ends.stdout).read("you> ")
    finally:
        finished.set()
        helper.join(BOUND)
    assert not unblocked, f"the prompt ignored the Ctrl-C until {unblocked[0]}"
