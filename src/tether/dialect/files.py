"""The thin outer layer of :mod:`tether.dialect`: reading flow files and importing their code.

Everything else in the package is pure (it parses what it is given). Here a path is read, the
YAML or JSON parsed, an agent file's ``code:`` module imported for its ``registry``, the document
validated (every issue, with its line) and built.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from tether.agent import Agent
from tether.dialect.build import agent_options, build_flow
from tether.dialect.parse import parse_document
from tether.dialect.registry import Registry
from tether.dialect.spec import AgentSpec, FlowSpec
from tether.dialect.text import parse_text
from tether.dialect.validate import Surface, validate_flow, validate_spec
from tether.errors import DefinitionIssue, FlowDefinitionError
from tether.flow import Flow
from tether.pyfiles import import_python_file

__all__ = ["FLOW_FILE_SUFFIXES", "build_flows", "is_flow_document", "is_flow_file", "line_of", "load",
           "load_registry", "read_document", "register_flows"]

FLOW_FILE_SUFFIXES = (".yaml", ".yml", ".json")


def is_flow_file(path: str | Path) -> bool:
    """Whether ``path`` names a flow file (by its suffix)."""
    return str(path).lower().endswith(FLOW_FILE_SUFFIXES)


def is_flow_document(path: str | Path) -> bool:
    """Whether ``path`` is a flow file: a YAML/JSON file holding one ``agent`` or one ``flow``."""
    if not is_flow_file(path) or not Path(path).is_file():
        return False
    try:
        data, _ = read_document(path)
    except FlowDefinitionError:
        return False
    return isinstance(data, dict) and len(data) == 1 and next(iter(data)) in ("agent", "flow")


def read_document(path: str | Path) -> tuple[Any, str]:
    """The parsed YAML/JSON document at ``path`` and its text.

    Raises:
        FlowDefinitionError: ``dialect-syntax`` naming the file and line.
    """
    text = Path(path).read_text(encoding="utf-8")
    data = parse_text(text, json_only=str(path).lower().endswith(".json"), source=str(path))
    return data, text


def line_of(text: str, path: str | None) -> int:
    """The 1-based line of the dotted ``path`` in YAML/JSON ``text`` (the nearest existing parent)."""
    try:
        node: Any = yaml.compose(text)
    except yaml.YAMLError:
        return 1
    line = 1 if node is None else node.start_mark.line + 1
    for part in (path or "").split("."):
        if node is None or part in ("", "<root>"):
            break
        child = None
        if isinstance(node, yaml.MappingNode):
            child = next((value for key, value in node.value if getattr(key, "value", None) == part), None)
            if child is not None:
                key_node = next(key for key, value in node.value if value is child)
                line = key_node.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            child = node.value[int(part)]
            line = child.start_mark.line + 1
        node = child
    return line


def load_registry(code: str, relative_to: Path) -> Registry:
    """The ``registry`` of the module ``code`` names: a ``.py`` path (relative to the flow file)
    or a module name."""
    if code.endswith(".py"):
        file = (relative_to / code).resolve()
        name = f"_tether_flow_code_{abs(hash(str(file)))}"
        module = sys.modules.get(name)
        if module is None:
            module = import_python_file(name, file) if file.exists() else None
            if module is None:
                raise FlowDefinitionError(DefinitionIssue("unknown-code", f"no such code file: {file}",
                                                          path="agent.code"))
    else:
        module = importlib.import_module(code)
    registry = getattr(module, "registry", None)
    if not isinstance(registry, Registry):
        raise FlowDefinitionError(DefinitionIssue("unknown-code", f"{code} defines no `registry = Registry(...)`",
                                                  path="agent.code"))
    return registry


def _refuse(issues: list[DefinitionIssue], path: Path, text: str) -> None:
    errors = [i for i in issues if i.severity == "error"]
    if errors:
        located = [replace(i, message=f"{path}:{line_of(text, i.path)}: {i.message}") for i in errors]
        raise FlowDefinitionError(located, title=f"{path} has {len(errors)} problem(s)")


def load(path: str | Path, registry: Registry | None = None, **agent_kwargs: Any) -> Agent | Flow:
    """The ``Agent`` (an agent file) or ``Flow`` (a flow file) at ``path``, the same objects
    Python authoring builds. An agent file's ``code:`` names its registry unless one is given;
    ``agent_kwargs`` (``model=``, ``clock=``, ...) go to the ``Agent``.

    Raises:
        FlowDefinitionError: every error found, each naming the file, line, path and hint.
    """
    path = Path(path)
    data, text = read_document(path)
    spec, issues = parse_document(data)
    _refuse(issues, path, text)
    assert spec is not None
    if isinstance(spec, AgentSpec) and registry is None and spec.code is not None:
        registry = load_registry(spec.code, path.parent)
    _refuse(validate_spec(spec, registry), path, text)
    if isinstance(spec, FlowSpec):
        return build_flow(spec, registry)
    return Agent(spec.name, **agent_options(spec, registry), **agent_kwargs)


def register_flows(agent: Agent, sources: Sequence[str | Path | Mapping[str, Any]],
                   registry: Registry | None = None) -> Agent:
    """Hot registration: ``agent`` with the flows of ``sources`` (flow files or ``{"flow": ...}``
    documents) added, each replacing the agent's flow of the same id as a new version
    (``flow@version``).

    The whole bundle is validated first, against the agent's fields and tools, the registry's
    actions, conditions and events, and the agent's flows plus the bundle's. Any problem
    refuses the whole bundle and ``agent`` is unchanged (it is never mutated: use the agent
    returned). Runs parked on a replaced version finish on it; new runs take the new version.

    Raises:
        FlowDefinitionError: every problem of the bundle, each naming its source.
    """
    return agent.with_flows(*build_flows(agent, sources, registry))


def build_flows(agent: Agent, sources: Sequence[str | Path | Mapping[str, Any]],
                registry: Registry | None = None) -> list[Flow]:
    """The flows of ``sources``, validated as :func:`register_flows` validates a bundle, and built,
    without adding them to ``agent``.

    Raises:
        FlowDefinitionError: every problem of the bundle, each naming its source.
    """
    registry = registry or Registry()
    documents: list[tuple[str, Any, str | None]] = []
    for source in sources:
        if isinstance(source, Mapping):
            documents.append(("<document>", dict(source), None))
        else:
            raw, content = read_document(source)
            documents.append((str(source), raw, content))
    specs: list[tuple[str, str | None, FlowSpec]] = []
    issues: list[DefinitionIssue] = []
    for name, data, text in documents:
        spec, found = parse_document(data)
        if spec is not None and not isinstance(spec, FlowSpec):
            found = [DefinitionIssue("dialect-document", "hot registration takes flow files, not agent files",
                                     path="agent", hint="put each flow in its own file under 'flow:'")]
        issues += [_located(issue, name, text) for issue in found]
        if isinstance(spec, FlowSpec):
            specs.append((name, text, spec))
    flow_ids = frozenset(agent.flows_by_id) | {spec.id for _, _, spec in specs}
    surface = Surface(fields=dict(agent.fields), tools=frozenset(agent.tools_by_name),
                      actions=frozenset(registry.actions), conditions=frozenset(registry.conditions),
                      events=frozenset(registry.events) if registry.events else None, flows=flow_ids,
                      tool_inputs={t.name: t.input_model for t in agent.tools})
    for name, text, spec in specs:
        found = [i for i in validate_flow(spec, surface, registry) if i.severity == "error"]
        issues += [_located(issue, name, text) for issue in found]
    if issues:
        raise FlowDefinitionError(issues, title=f"the bundle of {len(documents)} flow(s) was refused; "
                                                f"agent {agent.name!r} is unchanged")
    return [build_flow(spec, registry) for _, _, spec in specs]


def _located(issue: DefinitionIssue, name: str, text: str | None) -> DefinitionIssue:
    where = f"{name}:{line_of(text, issue.path)}" if text is not None else name
    return replace(issue, message=f"{where}: {issue.message}")
