"""Scenario files: a conversation, its scripted model and what each turn must do, as data.

A ``*.scenario.yaml`` names the agent (a flow file or a Python file, relative to the scenario),
scripts the model's replies per call name, and lists the steps::

    scenario: a parcel to a house number
    agent: shipping.yaml
    model: {summary: ["Wants a shipment to 1 Main St."], speak: ["Booked! Tracking trk_9."]}
    steps:
      - user: ship to 1 Main St
        expect:
          reply: Booked! Tracking trk_9.
          calls: [summary, speak]
          ended: [booked]

A step is one of ``user`` (a message), ``event`` (``{name, payload}``), ``clock`` (move the clock,
``10m``; no turn) or ``wake`` (fire the wake the last turn scheduled, ``true``). ``context`` gives
the turn's host context. ``expect`` may check ``reply`` (the exact text), ``reply_matches`` (a
regular expression that must match the whole text), ``calls`` (the model call kinds, in order; a
number checks only the count), ``codes`` (outcome codes), ``ended`` (end reasons), ``status``,
``node`` (the ``flow/node`` runs that wait for the customer) and ``fields`` (session fields that
must hold these values). The model scripted for a scenario must be used up by its end.

``model: strict`` runs the scenario with a :class:`~tether.testing.StrictModel` instead: a ``user``
step says what the customer ``means`` (``values``, ``flows``, ``intent``, ``asks``, ``branches``,
``mentions``, and ``reply``, what a speak call answers), the model says only what each request
offers, and a step whose meaning no call could say fails, unless its ``expect`` lists those items
under ``unsaid`` (``[values.size, intent]``)::

    model: strict
    steps:
      - user: actually make it medium
        means: {values: {size: medium}}
        expect: {calls: [understand], fields: {size: medium}}

A file may hold many conversations of one agent (a *suite*: a corpus of the ways customers talk),
each with its own name, sharing ``agent`` and ``model``::

    agent: ../shipping.py
    scenarios:
      - scenario: a house number
        steps: [{user: ship to 1 Main St}, {user: "yes"}]
      - scenario: a cancel at the confirmation
        steps: [{user: ship to 1 Main St}, {user: never mind}]

Every scenario runs against a fresh import of its agent's Python file, so what the module keeps
(a database a tool changes) never leaks from one scenario into the next.

:func:`run_scenario` runs one (:func:`run_file` every scenario of a file); ``tether test PATH``
runs them all and a pytest plugin collects them (``-p tether.testing.pytest_plugin``). ``tether
test --record`` writes what each turn did as its ``expect`` (:func:`record_file`): record a corpus
once, review the file, and any later change of a reply shows as a failed scenario with its diff.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from tether.agent import Agent
from tether.engine.core.inputs import Event, Message, Wake
from tether.engine.core.session import Session
from tether.testing._clock import FakeClock, SequentialIds
from tether.testing._models import ScriptedModel
from tether.testing._strict import Meaning, StrictModel

__all__ = [
    "SCENARIO_SUFFIX",
    "Mismatch",
    "ScenarioError",
    "ScenarioResult",
    "find_scenarios",
    "read_scenarios",
    "record_file",
    "run_file",
    "run_scenario",
]

SCENARIO_SUFFIX = ".scenario.yaml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Expect(_Strict):
    reply: str | None = None
    reply_matches: str | None = None
    calls: list[str] | int | None = None
    codes: list[str] | None = None
    ended: list[str] | None = None
    status: Literal["ended", "handoff", "awaiting_user", "awaiting_approval"] | None = None
    node: list[str] | str | None = None
    fields: dict[str, JsonValue] | None = None
    unsaid: list[str] | None = None


class Means(_Strict):
    values: dict[str, JsonValue] = {}
    flows: dict[str, float] = {}
    intent: str | None = None
    asks: bool | None = None
    branches: dict[str, bool] = {}
    mentions: dict[str, bool] = {}
    reply: str | None = None


class EventStep(_Strict):
    name: str
    payload: JsonValue = None


class Step(_Strict):
    user: str | None = None
    event: EventStep | None = None
    clock: str | None = None
    wake: bool | None = None
    context: dict[str, JsonValue] = {}
    means: Means | None = None
    expect: Expect | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Step:
        given = [k for k in ("user", "event", "clock", "wake") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"a step is exactly one of user, event, clock, wake (got {', '.join(given) or 'none'})")
        if self.clock is not None and self.expect is not None:
            raise ValueError("a clock step makes no turn: it has nothing to expect")
        if self.means is not None and self.user is None:
            raise ValueError("only a user step has a meaning (means)")
        return self


class Scenario(_Strict):
    scenario: str
    agent: str
    model: dict[str, list[JsonValue]] | Literal["strict"] | None = None
    steps: list[Step] = Field(min_length=1)

    @model_validator(mode="after")
    def _means_needs_strict(self) -> Scenario:
        if self.model != "strict":
            if any(step.means is not None for step in self.steps):
                raise ValueError("a step says what the customer means: that needs model: strict")
            if any(step.expect is not None and step.expect.unsaid is not None for step in self.steps):
                raise ValueError("expect.unsaid needs model: strict")
        return self


class SuiteEntry(_Strict):
    scenario: str
    steps: list[Step] = Field(min_length=1)


class Suite(_Strict):
    agent: str
    model: dict[str, list[JsonValue]] | Literal["strict"] | None = None
    scenarios: list[SuiteEntry] = Field(min_length=1)


class ScenarioError(ValueError):
    """A scenario file that cannot be read or run (not a failed expectation)."""


@dataclass(frozen=True)
class Mismatch:
    """One expectation a turn did not meet."""

    step: int
    key: str
    expected: Any
    actual: Any

    def diff(self) -> str:
        """The expectation against what happened, as a readable diff."""
        if self.key == "reply_matches":
            return f"  reply does not match /{self.expected}/:\n    {self.actual!r}"
        left = _lines(self.expected)
        right = _lines(self.actual)
        body = "\n".join("    " + line.rstrip("\n") for line in difflib.unified_diff(
            left, right, "expected", "actual", lineterm="", n=2))
        return f"  {self.key}:\n{body}"


def _lines(value: Any) -> list[str]:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False,
                                                           default=str)
    return text.splitlines() or [""]


@dataclass
class ScenarioResult:
    """What running a scenario found."""

    name: str
    path: Path
    turns: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    unused: dict[str, int] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.mismatches and not self.unused

    def report(self) -> str:
        """Every mismatch with its diff, step by step."""
        lines = []
        for mismatch in self.mismatches:
            lines.append(f"step {mismatch.step + 1}: {mismatch.key} differs")
            lines.append(mismatch.diff())
        if self.unused:
            lines.append(f"scripted model replies never used: {self.unused}")
        return "\n".join(lines)


def read_scenarios(path: Path) -> list[Scenario]:
    """The scenarios of the file at ``path`` (one, or a suite's); ScenarioError naming the file
    and what is wrong (a suite's entry by its place: ``scenarios.3.steps.1.user``)."""
    return _read(path)[1]


def _read(path: Path) -> tuple[dict[str, Any], list[Scenario]]:
    """The file at ``path`` as data, and its scenarios (see :func:`read_scenarios`)."""
    from tether.dialect.text import parse_text
    from tether.errors import FlowDefinitionError

    try:
        data = parse_text(path.read_text(encoding="utf-8"), source=str(path))
        if not (isinstance(data, dict) and "scenarios" in data):
            return data, [Scenario.model_validate(data)]
        suite = Suite.model_validate(data)
        scenarios = [Scenario.model_validate({"scenario": entry.scenario, "agent": suite.agent, "model": suite.model,
                                              "steps": entry.steps}) for entry in suite.scenarios]
    except FlowDefinitionError as exc:
        raise ScenarioError(str(exc)) from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors())
        raise ScenarioError(f"{path}: {problems}") from None
    names = [s.scenario for s in scenarios]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ScenarioError(f"{path}: two scenarios are named {', '.join(map(repr, twice))}: each needs its own name")
    return data, scenarios


def _load_agent(scenario: Scenario, path: Path) -> Agent:
    target = (path.parent / scenario.agent).resolve()
    if target.suffix in (".yaml", ".yml", ".json"):
        from tether.dialect.files import load

        loaded = load(target)
        if not isinstance(loaded, Agent):
            raise ScenarioError(f"{path}: {scenario.agent} holds a flow, not an agent")
        return loaded
    from tether.apps import load_app
    from tether.errors import AppLoadError

    try:
        return load_app(str(target), fresh=True).agent()
    except AppLoadError as exc:
        raise ScenarioError(f"{path}: {exc.message}") from None


def _check(step: int, expect: Expect, result: Any, calls: list[str]) -> list[Mismatch]:
    session: Session | None = result.session
    actual: dict[str, Any] = {
        "reply": result.text,
        "calls": calls if isinstance(expect.calls, list) else len(calls),
        "codes": result.codes(),
        "ended": [e.reason for e in result.ended],
        "status": result.status,
        "node": _asking(session),
    }
    found: list[Mismatch] = []
    for key in ("reply", "calls", "codes", "ended", "status", "node"):
        wanted = getattr(expect, key)
        if key == "node" and isinstance(wanted, str):
            wanted = [wanted]
        if wanted is not None and wanted != actual[key]:
            found.append(Mismatch(step, key, wanted, actual[key]))
    if expect.reply_matches is not None and re.fullmatch(expect.reply_matches, result.text, re.DOTALL) is None:
        found.append(Mismatch(step, "reply_matches", expect.reply_matches, result.text))
    if expect.fields is not None:
        data = dict(session.data) if session else {}
        held = {k: data.get(k) for k in expect.fields}
        if held != expect.fields:
            found.append(Mismatch(step, "fields", expect.fields, held))
    return found


async def run_scenario(path: str | Path, name: str | None = None) -> ScenarioResult:
    """Run the scenario at ``path`` (``name``: which one, in a file that holds several) against its
    agent, with a fake clock and a scripted model.

    Raises:
        ScenarioError: the file cannot be read, names an agent that cannot be loaded, holds several
            scenarios and ``name`` is not one of them.
    """
    path = Path(path)
    scenarios = read_scenarios(path)
    if name is None and len(scenarios) == 1:
        return await _run(scenarios[0], path)
    for scenario in scenarios:
        if scenario.scenario == name:
            return await _run(scenario, path)
    known = ", ".join(repr(s.scenario) for s in scenarios)
    wanted = "name one" if name is None else f"none is named {name!r}"
    raise ScenarioError(f"{path} holds {len(scenarios)} scenarios ({known}): {wanted}")


async def run_file(path: str | Path) -> list[ScenarioResult]:
    """Run every scenario of the file at ``path``, in order (ScenarioError as :func:`run_scenario`)."""
    path = Path(path)
    return [await _run(scenario, path) for scenario in read_scenarios(path)]


async def record_file(path: str | Path) -> list[ScenarioResult]:
    """Run every scenario of the file at ``path`` and write it back with each turn's ``expect``
    replaced by what the turn did: its ``reply``, the ``node`` runs that wait for the customer, the
    runs it ``ended`` (when any), the model ``calls`` (when the scenario has a model) and, with
    ``model: strict``, what no call could say (``unsaid``). Comments in the file are not kept.
    The results are those of the run (their expectations are the file's old ones)."""
    path = Path(path)
    data, scenarios = _read(path)
    results, recorded = [], []
    for scenario in scenarios:
        seen: list[dict[str, Any]] = []
        results.append(await _run(scenario, path, seen))
        recorded.append(_with_expects(scenario, seen))
    if "scenarios" in data:
        data["scenarios"] = [{"scenario": s["scenario"], "steps": s["steps"]} for s in recorded]
    else:
        data["steps"] = recorded[0]["steps"]
    path.write_text(_yaml_text(data), encoding="utf-8")
    return results


def _yaml_text(data: Any) -> str:
    """``data`` as YAML to read: block style, a text of several lines as a literal block."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, text)
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=1_000_000,
                     default_flow_style=False)


def _with_expects(scenario: Scenario, seen: list[dict[str, Any]]) -> dict[str, Any]:
    """``scenario`` as data, each turn's ``expect`` the one recorded in ``seen`` (one per turn)."""
    turns = iter(seen)
    steps = []
    for step in scenario.steps:
        data = step.model_dump(exclude_none=True, exclude_defaults=True, exclude={"expect"})
        if step.clock is None:
            data["expect"] = next(turns)
        steps.append(data)
    return {"scenario": scenario.scenario, "steps": steps}


async def _run(scenario: Scenario, path: Path, record: list[dict[str, Any]] | None = None) -> ScenarioResult:
    """Run ``scenario`` (read from ``path``); with ``record``, append what each turn did to it."""
    agent = _load_agent(scenario, path)
    model: ScriptedModel | StrictModel | None = None
    if scenario.model == "strict":
        model = StrictModel()
    elif scenario.model is not None:
        model = ScriptedModel()
        for call, replies in scenario.model.items():
            model.add(call, *replies)
    clock = FakeClock()
    agent = (agent.with_model(model) if model is not None else agent).with_clock(clock, SequentialIds("s"))
    result = ScenarioResult(scenario.scenario, path)
    session: Session | None = None
    schedule: list[Any] = []
    for index, step in enumerate(scenario.steps):
        if step.clock is not None:
            clock.advance(step.clock)
            continue
        before = len(model.calls) if model is not None else 0
        if step.user is not None:
            turn_input: Any = Message(step.user)
            if isinstance(model, StrictModel):
                model.means(step.user, Meaning(**step.means.model_dump()) if step.means else Meaning())
        elif step.event is not None:
            turn_input = Event(step.event.name, step.event.payload, key=f"scenario-{index}")
        else:
            if not schedule:
                raise ScenarioError(f"{path}: step {index + 1} fires a wake, but no turn scheduled one")
            turn_input = Wake(schedule[0].key)
        turn = await agent.turn(session, turn_input, context=dict(step.context))
        result.turns += 1
        session = turn.session if turn.session is not None else session
        schedule = turn.schedule or schedule
        calls = [c.call for c in model.calls[before:]] if model is not None else []
        if step.expect is not None:
            result.mismatches += _check(index, step.expect, turn, calls)
        unsaid: list[str] = []
        if isinstance(model, StrictModel) and step.user is not None:
            unsaid = [u.item for u in model.unsaid(step.user)]
            wanted = step.expect.unsaid if step.expect is not None and step.expect.unsaid is not None else []
            if sorted(unsaid) != sorted(wanted):
                result.mismatches.append(Mismatch(index, "unsaid", wanted, [str(u) for u in model.unsaid(step.user)]))
        if record is not None:
            record.append(_what_happened(turn, calls if model is not None else None, unsaid))
    result.unused = model.unused() if model is not None else {}
    return result


def _what_happened(turn: Any, calls: list[str] | None, unsaid: list[str]) -> dict[str, Any]:
    """A turn's recorded ``expect``."""
    waiting = _asking(turn.session)
    done: dict[str, Any] = {"reply": turn.text, "node": waiting[0] if len(waiting) == 1 else waiting}
    ended = [e.reason for e in turn.ended]
    if ended:
        done["ended"] = ended
    if calls is not None:
        done["calls"] = calls
    if unsaid:
        done["unsaid"] = unsaid
    return done


def _asking(session: Session | None) -> list[str]:
    """The ``flow/node`` runs of ``session`` that wait for the customer."""
    return [f"{r.flow}/{r.node}" for r in session.runs if r.status == "asking"] if session else []


def find_scenarios(path: str | Path) -> list[Path]:
    """The scenario files at ``path`` (a file, or every ``*.scenario.yaml`` under a directory)."""
    path = Path(path)
    if path.is_file():
        return [path]
    return sorted(path.rglob(f"*{SCENARIO_SUFFIX}"))
