"""The ``you>`` prompt of ``tether chat``: lines read so that Ctrl-C always interrupts the wait.

``input()`` writes the prompt, then blocks in ``read()``, and notices a signal only when that read
fails with ``EINTR``. A SIGINT that lands in between (the prompt is on screen, the read has not
started), or on another thread of the process (the SQLite store has one), only marks Python's
handler as due: the ``KeyboardInterrupt`` comes once a whole line has arrived, and the chat looks
hung. So :class:`PromptReader` waits with ``select`` on stdin's descriptor and on a pipe that the
interpreter writes a byte to for every caught signal (``signal.set_wakeup_fd``): a Ctrl-C at any
moment ends the wait, and its handler raises ``KeyboardInterrupt`` as the loop goes round.

The bytes are read from the descriptor as they come: a terminal in its canonical mode hands over
one line per read (editing the line is still the terminal's), a pipe may hand over several (the
rest is kept for the next prompt). When stdin has no descriptor (a test runner's stream), this is
not the main thread (the only one that may set the wake-up descriptor) or not a POSIX system
(``select`` takes no console there), lines come from ``input()``.
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import signal
import sys
import threading
from collections.abc import Iterator
from typing import TextIO

__all__ = ["PromptReader"]

_CHUNK = 65536


class PromptReader:
    """Shows a prompt and reads the next line of stdin (``sys.stdin``/``sys.stdout`` unless given)."""

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self._stdin = sys.stdin if stdin is None else stdin
        self._stdout = sys.stdout if stdout is None else stdout
        self._pending = b""  # read past the last line returned

    def read(self, prompt: str) -> str:
        """Show ``prompt`` and return the next line (without its line ending).

        Raises ``EOFError`` at the end of input (Ctrl-D on an empty line) and ``KeyboardInterrupt``
        on Ctrl-C, whenever it is pressed.
        """
        fd = _descriptor(self._stdin)
        if fd is None or os.name != "posix" or threading.current_thread() is not threading.main_thread():
            return input(prompt)
        self._stdout.write(prompt)
        self._stdout.flush()
        while b"\n" not in self._pending:
            chunk = _read_when_ready(fd)
            if not chunk:  # the end of input, or Ctrl-D after some text: that text is a line
                if not self._pending:
                    raise EOFError
                break
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.removesuffix(b"\r").decode(self._stdin.encoding or "utf-8", "replace")


def _descriptor(stream: TextIO) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):  # closed, or a stream with no descriptor
        return None


def _read_when_ready(fd: int) -> bytes:
    """What ``fd`` has to give (b"" at its end), once it has it; a caught signal's Python handler
    runs meanwhile (for SIGINT: raises ``KeyboardInterrupt``) instead of waiting for the data."""
    with _signal_wakeup() as woken:
        while True:
            ready, _, _ = select.select([fd, woken], [], [])
            if woken in ready:
                _drain(woken)  # the handler of the signal that wrote it runs here, at the latest
                continue
            return os.read(fd, _CHUNK)


def _drain(fd: int) -> None:
    with contextlib.suppress(BlockingIOError):
        while os.read(fd, 512):
            pass


@contextlib.contextmanager
def _signal_wakeup() -> Iterator[int]:
    """A pipe the interpreter writes a byte to on every caught signal, for the body; its read end."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.set_blocking(write_end, False)
    try:
        previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        try:
            yield read_end
        finally:
            signal.set_wakeup_fd(previous)
    finally:
        os.close(read_end)
        os.close(write_end)
