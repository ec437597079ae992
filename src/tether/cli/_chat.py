"""``tether chat``: a terminal conversation with an agent through the ``Runtime``.

Lines are read outside the event loop (``_prompt.PromptReader``: Ctrl-C and Ctrl-D end the prompt
at once, whenever they are pressed; stdin may be a pipe); each turn runs on one long-lived
``asyncio.Runner``.
Wakes of the session that fell due while the user was away (a "still there?" timer) are fired
before the next message is sent, so the store never keeps stale wakes.

On start a banner names the agent; a new session lets the agent speak first when it has an opening
(a flow with ``on_event("start")``); a resumed one reprints the last bot message. Replies stream
as they are generated. An empty line is ignored: ``/quit``, Ctrl-D and Ctrl-C leave.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import uuid
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from rich.console import Console
from rich.text import Text

from tether.agent import Agent
from tether.apps import LoadedApp
from tether.cli._output import CliError, command, one_line
from tether.cli._prompt import PromptReader
from tether.cli._render import active_run, info_line, print_failure, print_reply, state_json
from tether.cli._store import DEFAULT_DB, db_argument, open_db
from tether.cli._stream import ReplyPrinter, opening
from tether.engine.core.inputs import Event, Message, Start, TurnInput, TurnOptions
from tether.engine.core.session import Session
from tether.errors import AppLoadError
from tether.models import UncatalogedModelWarning, default_model_from_env
from tether.runtime import Runtime, check_model_selections
from tether.stores import Store

__all__ = ["HELP", "Chat", "PresetIds", "pick_model", "resume_command", "run_chat"]

PROMPT = "you> "
HELP = """commands:
  /state   the session data and runs (flow, node, status) as JSON
  /graph   the mermaid graph of the active flow (the first flow if none is active)
  /reset   start a new session
  /quit    leave (so do Ctrl-D and Ctrl-C; an empty line is ignored)
  /help    this list"""


class PresetIds:
    """Session ids for the runtime: the id reserved last (so it can be shown before the first
    turn creates the session), then random UUID v4 strings."""

    def __init__(self) -> None:
        self._reserved: str | None = None

    def reserve(self) -> str:
        """Reserve and return the id the next new session gets."""
        self._reserved = str(uuid.uuid4())
        return self._reserved

    def new_id(self) -> str:
        """The reserved id (once), else a fresh UUID v4."""
        reserved, self._reserved = self._reserved, None
        return reserved or str(uuid.uuid4())


def pick_model(model: str | None) -> str | None:
    """The model selection to serve the chat: ``--model``, else ``TETHER_MODEL``, else None.

    Raises ``CliError`` (exit 2) for an invalid selection.
    """
    from tether.models import validate_selection

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UncatalogedModelWarning)
        if model is not None:
            try:
                validate_selection(model)
            except Exception as exc:
                raise CliError(f"invalid --model {model!r}: {one_line(str(exc))}") from None
            chosen: str | None = model
        else:
            try:
                chosen = default_model_from_env()
            except Exception as exc:
                raise CliError(f"invalid TETHER_MODEL: {one_line(str(exc))}") from None
    for warning in caught:  # said once here, not again on every turn
        print(f"warning: {warning.message}", file=sys.stderr)
    if caught:
        warnings.filterwarnings("ignore", category=UncatalogedModelWarning)
    return chosen


def serve_agents(app: LoadedApp, model: str | None) -> list[Agent]:
    """The app's agents, each served by ``model`` when one is chosen (else its own model)."""
    agents = [agent.with_model(model) if model is not None else agent for agent in app.agents]
    for agent in agents:
        try:
            check_model_selections(agent)
            for tier in agent.model_selections:
                agent.model_for(tier)  # builds the client now: a missing key or SDK fails here, not mid-chat
        except Exception as exc:
            raise CliError(f"invalid model: {one_line(str(exc))}") from None
    return agents


class Chat:
    """One terminal conversation: the runtime, the current session and what to print."""

    def __init__(self, agents: Sequence[Agent], agent: Agent, store: Store, console: Console) -> None:
        self.ids = PresetIds()
        self.runtime = Runtime(list(agents), store=store, ids=self.ids)
        self.agent = agent
        self.console = console
        self.session_id = ""
        self.session: Session | None = None
        self.failures = 0

    # ------------------------------------------------------------------ sessions

    def _dim(self, text: str) -> None:
        self.console.print(Text(text, style="dim"))

    def new_session(self, note: str = "") -> None:
        """Start a new session: reserve its id and show it."""
        self.session_id = self.ids.reserve()
        self.session = None
        self._dim(f"session {self.session_id}{note}")

    async def open(self, session_id: str | None) -> None:
        """Resume ``session_id`` when it is stored and running, else start a new session."""
        if session_id is None:
            self.new_session()
            return
        doc = await self.runtime.store.load(session_id)
        if doc is None or doc.status not in ("running", "handed_off"):
            why = "not found" if doc is None else doc.status
            self._dim(f"session {session_id} {why}; starting a new one")
            self.new_session()
            return
        agent = self.runtime.agents.get(doc.agent)
        if agent is None:
            raise CliError(f"session {session_id} belongs to agent {doc.agent!r}, which this app does not define")
        self.agent, self.session_id, self.session = agent, doc.id, doc
        self._dim(f"session {doc.id} (resumed)")
        said = [m for m in await self.runtime.store.transcript(doc.id) if m.role == "assistant"]
        if said:
            self.console.print(Text.assemble((f"{agent.name}> ", "bold cyan"), said[-1].text))
        self._dim(info_line(None, doc))
        await self.fire_due_wakes()

    async def reload(self) -> Session | None:
        """The stored document of the current session (None before its first turn)."""
        doc = await self.runtime.store.load(self.session_id)
        if doc is not None:
            self.session = doc
        return doc

    # ------------------------------------------------------------------ turns

    def _adopt(self, session_id: str) -> None:
        if session_id and session_id != self.session_id:
            self.session_id = session_id
            self._dim(f"session {session_id} (new)")

    async def send(self, text: str) -> bool:
        """Send one message and print the replies; returns whether the turn succeeded."""
        await self.fire_due_wakes()
        return await self._turn(Message(text))

    async def greet(self) -> bool:
        """Let the agent speak first in a new session, when it has an opening."""
        first = opening(self.agent)
        if self.session is not None or first is None:
            return False
        return await self._turn(first)

    async def _turn(self, turn_input: TurnInput) -> bool:
        """Run one turn, streaming its replies; returns whether it succeeded."""
        printer = ReplyPrinter(self.console, self.agent.name)
        response = await self.runtime.run(
            self.agent.id,
            turn_input if isinstance(turn_input, Message) else None,
            session_id=self.session_id,
            event=turn_input if isinstance(turn_input, Event) else None,
            start=turn_input if isinstance(turn_input, Start) else None,
            options=TurnOptions(on_delta=printer.delta),
        )
        printer.finish()
        self._adopt(response.session)
        if not response.success or response.result is None:
            print_failure(self.console, one_line(response.message), response.code)
            self.failures += 1
            return False
        self.session = response.result.session
        print_reply(self.console, self.agent.name, response.result, streamed=printer.streamed)
        return True

    async def fire_due_wakes(self) -> int:
        """Fire the current session's wakes that are due (printing their messages); how many ran."""
        if self.session is None:
            return 0
        store, now = self.runtime.store, self.runtime.clock.now()
        fired = 0
        for wake in await store.pending_wakes(self.session_id):
            if wake.at > now:
                continue
            response = await self.runtime.run(self.agent.id, session_id=self.session_id, wake=wake.key)
            await store.complete_wake(wake)
            fired += 1
            if response.success and response.result is not None:
                self.session = response.result.session
                if response.result.messages:
                    print_reply(self.console, self.agent.name, response.result)
        return fired

    async def close(self) -> None:
        """Close the runtime and its store."""
        await self.runtime.close()

    # ------------------------------------------------------------------ commands

    def graph(self) -> str:
        """The mermaid of the active flow (the agent's first flow if none is active)."""
        run = active_run(self.session)
        flow = self.agent.flows_by_id.get(run.flow) if run is not None else None
        if flow is None and self.agent.flows:
            flow = self.agent.flows[0]
        if flow is None:
            return "%% no flows"
        return f"%% flow {flow.id}\n{flow.to_mermaid().rstrip()}"


def _handle(chat: Chat, runner: asyncio.Runner, line: str) -> bool:
    """Run one line (a message or a slash command); False when the chat should end."""
    command = line.strip()
    if not command.startswith("/"):
        runner.run(chat.send(line))
        return True
    name = command.split()[0].lower()
    if name in ("/quit", "/exit", "/q"):
        return False
    if name == "/help":
        chat.console.print(HELP, markup=False)
    elif name == "/state":
        doc = runner.run(chat.reload())
        chat.console.print(state_json(doc, chat.session_id), markup=False)
    elif name == "/graph":
        chat.console.print(chat.graph(), markup=False)
    elif name == "/reset":
        chat.new_session()
        runner.run(chat.greet())
    else:
        print_failure(chat.console, f"unknown command {name} (try /help)", None)
    return True


def _lines(echo: bool) -> Iterable[str]:
    """Lines typed at the ``you>`` prompt until EOF; echoed when stdin is not a terminal."""
    reader = PromptReader()
    while True:
        try:
            line = reader.read(PROMPT)
        except EOFError:
            print()
            return
        if echo:
            print(line)
        yield line


@contextmanager
def _no_log_lines() -> Iterator[None]:
    """The chat says every failed turn itself (its error line): the log lines a server writes for
    it (``tether.turn``, a traceback on ``tether.runtime``) are not printed into the conversation
    by Python's last-resort handler. Handlers the user configured still get them."""
    logger = logging.getLogger("tether")
    quiet = logging.NullHandler()
    logger.addHandler(quiet)
    try:
        yield
    finally:
        logger.removeHandler(quiet)


def run_chat(app: LoadedApp, *, agent_id: str | None, session: str | None, model: str | None, db: str,
             messages: Sequence[str], console: Console) -> int:
    """Hold the conversation (interactive, or the scripted ``messages`` then exit).

    Raises ``CliError`` for a bad model, store or agent; returns the exit code on /quit, EOF or
    Ctrl-C: 0, or 1 when a scripted ``messages`` turn failed.
    """
    agents = serve_agents(app, pick_model(model))
    try:
        chosen = app.agent(agent_id)
    except AppLoadError as exc:
        raise CliError(exc.message) from None
    agent = next(a for a in agents if a.id == chosen.id)
    store = open_db(db)
    with asyncio.Runner() as runner, _no_log_lines():
        chat = Chat(agents, agent, store, console)
        named = agent.name if agent.name == agent.id else f"{agent.name} ({agent.id})"
        console.print(Text.assemble(("tether chat", "bold"), f" · {named}",
                                    (" · /help for commands, /quit to leave", "dim")))
        try:
            runner.run(chat.open(session))
            runner.run(chat.greet())
            lines: Iterable[str] = messages if messages else _lines(echo=not sys.stdin.isatty())
            for line in lines:
                if not messages and not line.strip():
                    continue  # an empty line at the prompt is not a message, and does not quit
                if not _handle(chat, runner, line):
                    break
        except KeyboardInterrupt:
            print()
        finally:
            try:
                runner.run(chat.close())
            except KeyboardInterrupt:  # a second Ctrl-C while closing: every turn is saved already
                print()
        if chat.session is not None:
            hint = resume_command(app.spec, chat.session_id, db=db, agent_id=agent_id, model=model)
            console.print(Text(f"resume with: {hint}", style="dim"))
    return 1 if messages and chat.failures else 0


def resume_command(app_spec: str, session_id: str, *, db: str, agent_id: str | None, model: str | None) -> str:
    """The ``tether chat`` command that resumes ``session_id`` with the options this chat was given
    (its store made absolute)."""
    words = ["chat", app_spec, "--session", session_id]
    if db != DEFAULT_DB:
        words += ["--db", db_argument(db)]
    if agent_id is not None:
        words += ["--agent", agent_id]
    if model is not None:
        words += ["--model", model]
    return command(*words)
