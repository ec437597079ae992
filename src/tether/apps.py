"""Loading an app: the agents named by ``path/to/file.py[:attr]``, ``package.module:attr``, or a
flow file (``agent.yaml``: see :mod:`tether.dialect`). The ``tether`` command's ``APP`` argument
and a scenario file's ``agent:`` are read here.

A file inside a package (its folder has an ``__init__.py``, and so on up) is imported under its
package name (``pkg/support.py`` is ``pkg.support``, with the folder above ``pkg`` on
``sys.path``): loading it by path or as ``pkg.support:agent`` gives the same module, and its
relative imports work. Any other file is imported under a name unique to its path. No flow depends
on that name: a flow's digest describes its structure, never its module (see
:meth:`tether.flow.flow.Flow`).

Without ``:attr`` the module's ``agent`` attribute is taken, else ``agents``, else the single
``Agent`` instance among its globals. Every failure is a one-line :class:`AppLoadError`, except
definition problems: a ``FlowDefinitionError`` raised while the module is imported propagates as
it is, so ``tether check`` can print its issues.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tether.agent import Agent
from tether.errors import AppLoadError, FlowDefinitionError
from tether.import_hints import import_hint
from tether.pyfiles import import_python_file

__all__ = ["LoadedApp", "load_app", "split_app_spec"]

_ATTR = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


@dataclass(frozen=True)
class LoadedApp:
    """The agents an ``APP`` names, in the order they were given, and where they came from."""

    spec: str
    agents: tuple[Agent, ...]

    @property
    def flow_count(self) -> int:
        """How many flows the agents define, in all."""
        return sum(len(agent.flows) for agent in self.agents)

    def agent(self, agent_id: str | None = None) -> Agent:
        """The agent with id ``agent_id`` (default: the first one); ``AppLoadError`` when unknown."""
        if agent_id is None:
            return self.agents[0]
        for agent in self.agents:
            if agent.id == agent_id:
                return agent
        known = ", ".join(repr(a.id) for a in self.agents)
        raise AppLoadError(f"{self.spec} has no agent {agent_id!r} (agents: {known})")


def split_app_spec(spec: str) -> tuple[str, str | None, bool]:
    """``(target, attr, is_file)`` of an ``APP`` argument.

    The attribute follows the last ``:`` when what follows is a dotted identifier. The target is
    a file when it ends in ``.py``, contains a path separator, or names an existing file.
    """
    target, attr = spec, None
    head, sep, tail = spec.rpartition(":")
    if sep:
        if not tail or not _ATTR.match(tail):
            raise AppLoadError(f"invalid APP {spec!r}: expected path/to/file.py[:attr] or package.module:attr")
        target, attr = head, tail
    if not target:
        raise AppLoadError(f"invalid APP {spec!r}: no file or module before ':'")
    is_file = (target.endswith(".py") or "/" in target or os.sep in target or Path(target).is_file())
    if not is_file and not _MODULE.match(target):
        raise AppLoadError(f"invalid APP {spec!r}: {target!r} is neither a .py file nor a module name")
    return target, attr, is_file


def _module_name(path: Path) -> str:
    stem = re.sub(r"\W", "_", path.stem) or "app"
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    return f"_tether_app_{stem}_{digest}"


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return (f"{type(exc).__name__}: {text}" if text else type(exc).__name__) + import_hint(exc)


def _syntax_error(exc: SyntaxError, fallback: str) -> AppLoadError:
    where = f"{exc.filename or fallback}:{exc.lineno}" if exc.lineno else (exc.filename or fallback)
    return AppLoadError(f"syntax error in {where}: {exc.msg}")


def _package_module(path: Path) -> tuple[str, Path] | None:
    """``(dotted name, folder to import it from)`` of a file inside a package, else None."""
    parts, folder = [path.stem], path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    if len(parts) == 1 or not all(part.isidentifier() for part in parts):
        return None
    return ".".join(parts), folder


def _held_elsewhere(dotted: str, root: Path) -> bool:
    """True when a module already imported holds ``dotted`` or one of its packages, from
    another file than the one under ``root`` (two copies of one package in one process)."""
    parts = dotted.split(".")
    for i in range(1, len(parts) + 1):
        module = sys.modules.get(".".join(parts[:i]))
        if module is None:
            continue
        expected = root.joinpath(*parts[:i], "__init__.py") if i < len(parts) else root.joinpath(*parts[:-1],
                                                                                                 parts[-1] + ".py")
        file = getattr(module, "__file__", None)
        if file is None or Path(file).resolve() != expected:
            return True
    return False


def _import_file(target: str, *, fresh: bool = False) -> ModuleType:
    path = Path(target).expanduser()
    if not path.exists():
        raise AppLoadError(f"no such file: {target}")
    if not path.is_file():
        raise AppLoadError(f"not a Python file: {target}")
    path = path.resolve()
    directory = str(path.parent)
    if directory not in sys.path:  # its sibling modules import as they do when it runs as a script
        sys.path.insert(0, directory)
    packaged = _package_module(path)
    if packaged is not None and not _held_elsewhere(*packaged):
        dotted, root = packaged
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
        if fresh:
            sys.modules.pop(dotted, None)
        packaged_module = _import_module(dotted, what=target)
        found = getattr(packaged_module, "__file__", None)
        if found is None or Path(found).resolve() != path:
            raise AppLoadError(f"cannot import {target} as {dotted}: that name is {found}, another package "
                               f"named {dotted.split('.')[0]!r} comes first on sys.path")
        return packaged_module
    name = _module_name(path)  # not in a package, or its package name is another package's
    if name in sys.modules and not fresh:
        return sys.modules[name]
    try:
        module = import_python_file(name, path)
    except FlowDefinitionError:  # a malformed flow's own error says more than "cannot import"
        raise
    except SyntaxError as exc:
        raise _syntax_error(exc, target) from None
    except (Exception, SystemExit) as exc:
        raise AppLoadError(f"cannot import {target}: {_describe(exc)}") from None
    if module is None:
        raise AppLoadError(f"cannot load {target} as a Python module")
    return module


def _import_module(target: str, *, what: str | None = None) -> ModuleType:
    """Import module ``target`` (``what``: how the user named it, for the errors)."""
    what = what or target
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)
    try:
        return importlib.import_module(target)
    except FlowDefinitionError:  # a malformed flow's own error says more than "cannot import"
        raise
    except SyntaxError as exc:
        raise _syntax_error(exc, what) from None
    except ModuleNotFoundError as exc:
        if exc.name and (target == exc.name or target.startswith(exc.name + ".")):
            raise AppLoadError(f"no module named {target!r}") from None
        raise AppLoadError(f"cannot import {what}: {_describe(exc)}") from None
    except (Exception, SystemExit) as exc:
        raise AppLoadError(f"cannot import {what}: {_describe(exc)}") from None


def _as_agents(value: Any, what: str) -> tuple[Agent, ...]:
    if isinstance(value, Agent):
        return (value,)
    items: list[Any] | None = None
    if isinstance(value, Mapping):
        items = list(value.values())
    elif isinstance(value, list | tuple):
        items = list(value)
    if items is None:
        raise AppLoadError(f"{what} is a {type(value).__name__}, not an Agent (or a list of Agents)")
    if not items:
        raise AppLoadError(f"{what} holds no agents")
    for item in items:
        if not isinstance(item, Agent):
            raise AppLoadError(f"{what} holds a {type(item).__name__}, not an Agent")
    return tuple(items)


def _find_agents(module: ModuleType, target: str, attr: str | None) -> tuple[Agent, ...]:
    if attr is not None:
        value: Any = module
        for part in attr.split("."):
            if not hasattr(value, part):
                raise AppLoadError(f"{target} has no attribute {attr!r}")
            value = getattr(value, part)
        return _as_agents(value, f"{target}:{attr}")
    for name in ("agent", "agents"):
        if hasattr(module, name):
            return _as_agents(getattr(module, name), f"{target}:{name}")
    found: list[tuple[str, Agent]] = []
    for name, value in vars(module).items():
        if isinstance(value, Agent) and all(value is not other for _, other in found):
            found.append((name, value))
    if not found:
        raise AppLoadError(f"no Agent found in {target}: define `agent` or name one with {target}:ATTR")
    if len(found) > 1:
        names = ", ".join(name for name, _ in found)
        raise AppLoadError(f"several Agents in {target} ({names}): name one with {target}:ATTR")
    return (found[0][1],)


def load_app(spec: str, *, fresh: bool = False) -> LoadedApp:
    """Import the ``APP`` named by ``spec`` and return its agents (``fresh``: a Python file is run
    again even when it was imported before, so what its module keeps, a database it changes, starts
    over; the packages it imports are not).

    Raises:
        AppLoadError: a bad ``spec`` (missing file or module, import or syntax error, no such
            attribute, not an Agent), in one line.
        FlowDefinitionError: the app's flows or agents are defined wrongly.
    """
    target, attr, is_file = split_app_spec(spec)
    if is_file and attr is None and not target.endswith(".py"):
        return _load_document(spec, target)
    module = _import_file(target, fresh=fresh) if is_file else _import_module(target)
    return LoadedApp(spec=spec, agents=_find_agents(module, target, attr))


def _load_document(spec: str, target: str) -> LoadedApp:
    """``load_app`` of a file that is not Python: an agent flow file (the flow-file package is
    imported only then: it is most of what a command that loads a Python app would not need)."""
    from tether.dialect.files import is_flow_document, is_flow_file, read_document
    from tether.dialect.files import load as load_flow_file

    if is_flow_document(target):
        loaded = load_flow_file(target)
        if not isinstance(loaded, Agent):
            raise AppLoadError(f"{target} holds a flow, not an agent: name it from an agent file")
        return LoadedApp(spec=spec, agents=(loaded,))
    if is_flow_file(target) and Path(target).is_file():
        read_document(target)  # a syntax error is said as file:line:column
        raise AppLoadError(f"{target} holds no agent: an agent file holds one top-level `agent:` (a workflow "
                           "file runs with `tether workflow run`)")
    return LoadedApp(spec=spec, agents=_find_agents(_import_file(target), target, None))
