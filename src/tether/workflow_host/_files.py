"""Reading workflow definitions from files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tether.errors import DefinitionIssue, WorkflowDefinitionError
from tether.workflow import WorkflowGraph
from tether.workflow._load import parse_workflow_text

__all__ = ["WORKFLOW_SUFFIXES", "find_workflow_file", "load_workflow_file", "workflow_directory_resolver"]

WORKFLOW_SUFFIXES = (".yaml", ".yml", ".json")


def load_workflow_file(path: str | Path) -> WorkflowGraph:
    """Load and check the workflow in ``path`` (JSON for ``.json``, YAML otherwise).

    Raises :class:`WorkflowDefinitionError` for an unreadable file or an invalid definition.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkflowDefinitionError(DefinitionIssue("workflow-unreadable", f"cannot read {str(file)!r}: {exc}",
                                                      path="<root>")) from None
    return parse_workflow_text(text, "json" if file.suffix == ".json" else "yaml", source=str(file))


def _in(root: Path, flow: str) -> Path | None:
    for stem in (flow, f"{flow}.flow"):
        for suffix in WORKFLOW_SUFFIXES:
            candidate = root / f"{stem}{suffix}"
            if candidate.is_file():
                return candidate
    return None


def find_workflow_file(directory: str | Path, flow: str) -> Path | None:
    """The file of workflow ``flow`` in ``directory`` (as :func:`workflow_directory_resolver`
    finds it); ``None`` when there is none, or when ``flow`` is not a plain name (a name from a
    request never reaches outside ``directory``)."""
    if not flow or flow.startswith(".") or any(c in flow for c in "/\\\0"):
        return None
    return _in(Path(directory), flow)


def workflow_directory_resolver(directory: str | Path) -> Callable[[str], WorkflowGraph]:
    """A sub-flow resolver finding workflow ``<id>`` as ``<id>.yaml``/``.yml``/``.json`` (or
    ``<id>.flow.yaml``...) in ``directory``."""
    root = Path(directory)

    def resolve(flow: str) -> WorkflowGraph:
        found = _in(root, flow)
        if found is None:
            raise KeyError(flow)
        return load_workflow_file(found)
    return resolve
