"""The one template syntax: ``${name}`` placeholders, ``$$`` for a literal ``$``.

Python reply and question texts (``"A ${size} pizza"``), flow files (``"${state.size}"``) and
workflow instructions and bindings (``"${node.output.fields.x}"``) are read by this module: what a
placeholder names is each caller's business (a state path, a CEL expression), how its value
reads is :func:`tether.spoken.spoken` ("ham and olives").

- ``${path}`` is a placeholder (spaces inside the braces are ignored);
- ``$$`` is a literal ``$``, and so is a ``$`` written right before a placeholder:
  ``"$${amount}"`` reads ``$12``;
- any other ``$`` is itself (``"$5"``);
- in Python flow texts only, ``{name}`` is the older form of ``${name}``: it still works, with a
  :class:`DeprecationWarning` when the flow is built (see :mod:`tether.flow.old_forms`). A text
  that has both forms is refused when the flow is built: in the older syntax ``"${amount}"`` was a
  dollar sign before the value, in the new one it is the value alone.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tether.spoken import spoken

__all__ = ["Slot", "fill", "fill_names", "has_slots", "normal_form", "parse", "plain", "rewrite", "slots"]

_TOKENS = re.compile(r"\$(?=\$\{)|\$\$|\$\{([^}]*)\}|\{([A-Za-z_][A-Za-z0-9_.\-]*)\}")
"""In order: a ``$`` before a placeholder, ``$$``, ``${...}``, the older ``{name}``."""


@dataclass(frozen=True)
class Slot:
    """A placeholder: ``path`` (stripped) and whether it is written in the older ``{name}`` form."""

    path: str
    old: bool = False

    @property
    def source(self) -> str:
        """How the placeholder is written in the one syntax."""
        return "${" + self.path + "}"

    @property
    def written(self) -> str:
        """How the placeholder was written (``{name}`` for the older form)."""
        return "{" + self.path + "}" if self.old else self.source


def parse(text: str, *, old: bool = False) -> list[str | Slot]:
    """``text`` as literal pieces and :class:`Slot` s (escapes resolved). ``old``: ``{name}`` is a
    placeholder too (Python flow texts); otherwise it is literal text."""
    pieces: list[str | Slot] = []
    position = 0
    for match in _TOKENS.finditer(text):
        new, older = match.group(1), match.group(2)
        if older is not None and not old:
            continue
        if match.start() > position:
            pieces.append(text[position:match.start()])
        if new is not None:
            pieces.append(Slot(new.strip()))
        elif older is not None:
            pieces.append(Slot(older, old=True))
        else:
            pieces.append("$")
        position = match.end()
    if position < len(text):
        pieces.append(text[position:])
    return pieces


def slots(text: str, *, old: bool = False) -> list[Slot]:
    """The placeholders of ``text``, in order."""
    return [piece for piece in parse(text, old=old) if isinstance(piece, Slot)]


def has_slots(text: str, *, old: bool = False) -> bool:
    """Whether ``text`` has a placeholder."""
    return bool(slots(text, old=old))


@functools.lru_cache(maxsize=1024)
def _pieces(text: str, old: bool) -> tuple[str | Slot, ...]:
    """:func:`parse`, once per text (a flow's texts are few and fixed, and filled on every turn)."""
    return tuple(parse(text, old=old))


def plain(text: str, *, old: bool = False) -> bool:
    """``text`` has no placeholder and no escape: it fills to itself (most asks and replies), so
    no value needs to be looked up for it. One character test, no parse."""
    return "$" not in text and (not old or "{" not in text)


def fill(text: str, value: Callable[[Slot], Any], *, old: bool = False) -> str:
    """``text`` with every placeholder replaced by ``spoken(value(slot))`` (``value`` raises for a
    name it cannot fill; a string it returns is used as it is)."""
    if plain(text, old=old):
        return text
    return "".join(piece if isinstance(piece, str) else spoken(value(piece)) for piece in _pieces(text, old))


def fill_names(text: str, values: Mapping[str, str]) -> str:
    """``text`` with the placeholders naming a key of ``values`` filled (``${task}``, or the older
    ``{task}``); any other placeholder stays as it is written. For the fixed texts of an agent
    (its repair texts), which offer a few names of their own."""
    return fill(text, lambda slot: values.get(slot.path, slot.written), old=True)


def rewrite(text: str, replace: Callable[[Slot], str], *, old: bool = False) -> str:
    """``text`` with every placeholder written as ``replace(slot)`` and everything else (escapes
    included) kept exactly as written."""

    def one(match: re.Match[str]) -> str:
        new, older = match.group(1), match.group(2)
        if new is not None:
            return replace(Slot(new.strip()))
        if older is not None:
            return replace(Slot(older, old=True)) if old else match.group(0)
        return match.group(0)

    return _TOKENS.sub(one, text)


def normal_form(text: str) -> str:
    """``text`` with every placeholder, of either form, written ``{path}``: the form a flow's
    digest reads, so writing ``{name}`` as ``${name}`` (or a flow file's ``${state.x}``) is not a
    new version of the flow and parked runs do not drift."""
    return rewrite(text, lambda slot: "{" + slot.path + "}", old=True)
