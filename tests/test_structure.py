"""No import cycle anywhere in ``src/tether`` (and, named, none through the modules in ``ACYCLIC``).

The rule: every ``import`` statement of a module is an edge to the tether module it names,
wherever it stands: at module level, under ``if TYPE_CHECKING:``, or deferred inside a function.
A deferred import hides a cycle from the interpreter, not from a reader (or a type checker), so
it counts. ``from package import name`` is an edge to the submodule ``package.name`` when there
is one, else to the package. The graph spans all of ``src/tether``, so a cycle that leaves the
listed modules and comes back is caught too.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

ACYCLIC = {
    # the agent step: entry, context, nested steps, loop, tools, view (arrows point down this list)
    "tether.engine.step.agent_step", "tether.engine.step.context", "tether.engine.step.batch",
    "tether.engine.step.children", "tether.engine.step.loop", "tether.engine.step.tools",
    "tether.engine.step.view", "tether.engine.step.memory",
    # the collect node and the speak call: dispatch, then the speaker, the prompt parts, the
    # reuse confirmation, the fields, the extraction call, the identity text
    "tether.engine.graph.collect", "tether.engine.turn.speak", "tether.engine.graph.prompt_parts",
    "tether.engine.graph.reuse", "tether.engine.graph.collect_fields", "tether.engine.graph.extract",
    "tether.engine.graph.identity",
    # the runtime calls the request path and the scheduler, which see it only as a RequestHost / WakeHost
    "tether.runtime.runtime", "tether.runtime.request", "tether.runtime.scheduler",
    # a workflow run calls its drivers (agent turns, sub-flows, subprompts), which see it as a RunHost
    "tether.workflow_host._run", "tether.workflow_host._agent", "tether.workflow_host._subflow",
    "tether.workflow_host._subprompt", "tether.workflow_host._host",
    # flows: nodes name transitions (a transition sees a node as a NamedNode); a flow draws itself
    # through mermaid, which sees flows and agents as DrawnFlow / DrawnAgent
    "tether.flow.nodes", "tether.flow.transitions", "tether.flow.flow", "tether.flow.mermaid",
    "tether.flow.agent_def", "tether.flow.placeholders",
}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in (SRC / "tether").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: list[str] = []
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                targets += [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        edges[name] = {t for t in map(known, targets) if t is not None and t != name}
    return edges


@functools.cache
def _parsed_graph() -> dict[str, set[str]]:
    return _graph(_modules())


def _tether_graph() -> dict[str, set[str]]:
    """The import graph of ``src/tether`` (each test gets its own copy): the sources are parsed
    once per process, not once per test that reads the graph."""
    return {name: set(targets) for name, targets in _parsed_graph().items()}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def test_the_listed_modules_exist() -> None:
    assert set(_modules()) >= ACYCLIC, sorted(ACYCLIC - set(_modules()))


def test_the_cycle_finder_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_runs_through_the_listed_modules() -> None:
    tangled = [c for c in _cycles(_tether_graph()) if ACYCLIC & set(c)]
    assert not tangled, f"import cycles through {sorted(ACYCLIC)}: {tangled}"


def test_no_import_cycle_anywhere_in_tether() -> None:
    """Arrows point down everywhere: a new cycle anywhere in ``src/tether`` fails here, not only
    one through the modules listed above."""
    assert _cycles(_tether_graph()) == []


def _is_cli(module: str) -> bool:
    return module == "tether.cli" or module.startswith("tether.cli.")


def test_only_the_cli_imports_the_cli() -> None:
    """The ``tether`` command sits on top: every other package (``tether.testing`` too) is a
    library it builds on, so no arrow points from one of them up into ``tether.cli``."""
    upward = sorted(f"{name} -> {target}" for name, targets in _tether_graph().items() if not _is_cli(name)
                    for target in targets if _is_cli(target))
    assert not upward, f"modules outside tether.cli import it: {upward}"


LAYERS = (
    # top first: a module imports only from its own room or from rooms of lower layers
    ("tether.cli",),
    ("tether.server", "tether.testing"),
    ("tether.runtime", "tether.apps"),
    ("tether", "tether.dialect", "tether.workflow_host"),
    ("tether.stores", "tether.agent"),
    ("tether.engine", "tether.tracing", "tether.workflow"),
    ("tether.flow", "tether.models", "tether.pydantic_issues", "tether.executors"),
    ("tether.templating",),
    ("tether.durable", "tether.errors", "tether.clock", "tether.pyfiles", "tether.spoken", "tether.syntax_errors",
     "tether.cel", "tether.background", "tether.json_schemas", "tether.otel"),
)


def _room(module: str) -> str:
    """The room of ``module``: the longest name of ``LAYERS`` it is, or is inside of."""
    rooms = [room for layer in LAYERS for room in layer if module == room or module.startswith(room + ".")]
    return max(rooms, key=len)


def _layer(room: str) -> int:
    return next(depth for depth, layer in enumerate(LAYERS) if room in layer)


def test_every_module_is_in_a_layer() -> None:
    assert all(_room(name) for name in _modules())


def test_arrows_point_down_the_layers() -> None:
    """Each room holds one idea and builds only on the rooms below it: an import into a room of the
    same or a higher layer (other than its own) fails here, naming the arrow."""
    upward = sorted(f"{name} -> {target}" for name, targets in _tether_graph().items() for target in targets
                    if _room(name) != _room(target) and _layer(_room(target)) <= _layer(_room(name)))
    assert not upward, f"imports that do not point down the layers: {upward}"


ENGINE_PACKAGES = (
    # top first (docs/architecture.md): the turn's phases, the graph runner, the agent step, and the
    # session document with the types they all share; each imports only the packages below it
    "tether.engine.turn",
    "tether.engine.graph",
    "tether.engine.step",
    "tether.engine.core",
)


def _engine_package(module: str) -> str | None:
    return next((p for p in ENGINE_PACKAGES if module == p or module.startswith(p + ".")), None)


def test_every_engine_module_is_in_an_engine_package() -> None:
    """``tether.engine`` itself is only the package's face (its ``__init__`` re-exports); every
    module of the engine lives in one of its packages."""
    loose = sorted(name for name in _modules() if name.startswith("tether.engine.") and not _engine_package(name))
    assert not loose, f"engine modules outside {ENGINE_PACKAGES}: {loose}"


def _upward_engine_arrows(edges: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{name} -> {target}" for name, targets in edges.items() if (here := _engine_package(name))
        for target in targets if (there := _engine_package(target)) and there != here
        and ENGINE_PACKAGES.index(there) < ENGINE_PACKAGES.index(here)
    )


def test_the_engine_rule_sees_an_arrow_that_points_up() -> None:
    edges = {"tether.engine.core.state": {"tether.engine.graph.runner"},
             "tether.engine.turn.turn": {"tether.engine.core.state", "tether.engine.turn.settle"}}
    assert _upward_engine_arrows(edges) == ["tether.engine.core.state -> tether.engine.graph.runner"]


def test_engine_packages_import_only_the_packages_below_them() -> None:
    upward = _upward_engine_arrows(_tether_graph())
    assert not upward, f"engine imports that point up (turn > graph > step > core): {upward}"


def test_the_architecture_page_describes_each_engine_package() -> None:
    page = (SRC.parent / "docs" / "architecture.md").read_text()
    for package in ENGINE_PACKAGES:
        name = package.rpartition(".")[2]
        assert f"**`engine/{name}/`**" in page, f"docs/architecture.md does not describe {package}"
