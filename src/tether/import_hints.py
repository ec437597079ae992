"""What an app's import error adds for its author: the line of their file it came from, and, for
a mistyped keyword of one of tether's functions (``collect("ask", max_turn=3)``), the nearest
keyword it takes (``did you mean 'max_turns'?``)."""

from __future__ import annotations

import inspect
import re
import traceback
from pathlib import Path

from tether.flow.hints import did_you_mean

__all__ = ["import_hint"]

_UNEXPECTED = re.compile(r"^(?:[\w.]+\.)?(\w+)\(\) got an unexpected keyword argument '(\w+)'")
_TETHER = Path(__file__).resolve().parent


def import_hint(exc: BaseException) -> str:
    """`` (file.py:9; did you mean 'max_turns'?)`` for ``exc`` raised while importing an app, or ``""``."""
    parts = [where for where in (_author_line(exc),) if where]
    found = _UNEXPECTED.match(str(exc)) if isinstance(exc, TypeError) else None
    if found is not None:
        hint = did_you_mean(found.group(2), _keywords(found.group(1)))
        if hint:
            parts.append(hint)
    return f" ({'; '.join(parts)})" if parts else ""


def _author_line(exc: BaseException) -> str | None:
    """``file:line`` of the innermost frame outside tether and the import machinery."""
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        file = Path(frame.filename)
        if frame.filename.startswith("<") or _TETHER in file.resolve().parents:
            continue
        found = f"{file.name}:{frame.lineno}"
    return found


def _keywords(name: str) -> list[str]:
    """The keyword parameters of tether's public function ``name`` (none when tether has no such function)."""
    import tether

    function = getattr(tether, name, None)
    if not callable(function):
        return []
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
