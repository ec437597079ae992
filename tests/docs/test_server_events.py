"""docs/server.md's session event stream names the events the server sends: the table lists every
event type the engine defines, the sample frame uses one of them, and a real conversation's
records are all in the table."""

from __future__ import annotations

import importlib
import pkgutil
import re

from doc_samples import ROOT

import tether.engine
from example_modules import load_example
from tether.engine.core.events import FlowEvent
from tether.runtime import Runtime
from tether.stores import MemoryStore

PAGE = ROOT / "docs" / "server.md"


def _section() -> str:
    text = PAGE.read_text()
    return text.split("## The session event stream", 1)[1].split("\n## ", 1)[0]


def documented() -> list[str]:
    return re.findall(r"^\| `([a-z-]+)` \|", _section(), re.MULTILINE)


def defined() -> set[str]:
    for module in pkgutil.walk_packages(tether.engine.__path__, "tether.engine."):
        importlib.import_module(module.name)  # every event class, wherever it lives
    found: set[str] = set()
    classes = [FlowEvent]
    while classes:
        for subclass in classes.pop().__subclasses__():
            found.add(subclass.type)
            classes.append(subclass)
    return found


def test_the_table_lists_every_event_type_once() -> None:
    assert sorted(documented()) == sorted(defined())


def test_the_sample_frame_uses_an_event_name_the_server_sends() -> None:
    frame = re.search(r"^event: (\S+)\ndata: (.*)$", _section(), re.MULTILINE)
    assert frame is not None
    names = re.findall(r'"type":"([^"]+)"', frame.group(2))
    assert frame.group(1) in defined() and set(names) == {frame.group(1)}


async def test_a_conversation_s_records_are_all_in_the_table() -> None:
    agent = load_example("support").agent
    async with Runtime([agent], store=MemoryStore()) as runtime:
        first = await runtime.run(agent.id, "where is my order")
        await runtime.run(agent.id, "A-1002", session_id=first.session)
        records = await runtime.store.events(first.session)
    seen = {record.type for record in records}
    assert {"flow-enter", "node-enter", "collect-update"} <= seen
    assert seen <= set(documented())
