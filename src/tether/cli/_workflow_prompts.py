"""Asking the terminal for a typed answer (a gate's response or an agent's input request).

The answer is only collected here; the run checks it against the schema and refuses it with a
reason, and the caller asks again.
"""

from __future__ import annotations

import json
import mimetypes
from pathlib import Path
from typing import Any

import typer

__all__ = ["ask_answer"]


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _file(path_text: str) -> dict[str, Any]:
    path = Path(path_text).expanduser()
    ref: dict[str, Any] = {"name": path.name, "uri": path.resolve().as_uri()}
    if path.is_file():
        ref["size"] = path.stat().st_size
    media, _ = mimetypes.guess_type(path.name)
    if media:
        ref["type"] = media
    return ref


def ask_answer(schema: dict[str, Any] | None, label: str = "answer") -> Any:
    """Prompt for an answer shaped by ``schema`` (``typer.Abort`` on Ctrl-C/EOF)."""
    kind = (schema or {}).get("kind", "text")
    if kind == "choice":
        options = list((schema or {}).get("options", []))
        several = bool((schema or {}).get("multiple"))
        hint = "comma-separated, " if several else ""
        text = typer.prompt(f"{label} ({hint}one of: {', '.join(map(str, options))})")
        picked = [part.strip() for part in text.split(",")] if several else text.strip()
        return picked
    if kind == "form":
        answer: dict[str, Any] = {}
        for name, field in dict((schema or {}).get("fields", {})).items():
            described = field.get("description") or field.get("type") or "value"
            text = typer.prompt(f"{label}.{name} ({described}; empty to leave out)", default="", show_default=False)
            if text != "":
                answer[name] = _value(text) if field.get("type") != "string" else text
        return answer
    if kind == "file":
        several = bool((schema or {}).get("multiple"))
        text = typer.prompt(f"{label}: path{'s, comma-separated' if several else ''} of the file")
        refs = [_file(part.strip()) for part in text.split(",")] if several else _file(text.strip())
        return refs
    return typer.prompt(label)
