"""Templates: ``${name}`` placeholders filled from the state (and ``${input.x}``, ``${context.x}``,
``${today}``: the turn's date, "Thursday, 2026-12-03", for a model that must read "Friday").

The syntax is :mod:`tether.templating` (``$$`` is a literal ``$``; the older ``{name}`` still
fills, the flow warned about it when it was built). Values render as natural text
(:func:`tether.spoken.spoken`: a list reads "ham and olives"). Nothing is evaluated. A placeholder
whose value is missing (absent or None) is an error naming it
(:class:`~tether.errors.TemplatePlaceholderError`), never an empty string: "Order  placed!" is
worse than a loud failure. ``where`` (for example ``flow 'f', node 'n', response``) is put in
front of the message so the author can find the template.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tether.errors import TemplatePlaceholderError
from tether.flow.resolvers import read_path
from tether.templating import Slot, fill, plain

__all__ = ["render", "render_value", "today_text"]


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def today_text(now: datetime) -> str:
    """What ``${today}`` reads: the weekday and the ISO date of ``now`` ("Thursday, 2026-12-03"),
    in English whatever the locale."""
    return f"{_WEEKDAYS[now.weekday()]}, {now.date().isoformat()}"


def render(template: str, state: Mapping[str, Any], input: Any = None,
           context: Mapping[str, Any] | None = None, *, where: str = "template", today: str | None = None) -> str:
    """Fill ``${name}`` placeholders; raises TemplatePlaceholderError for a missing value.
    ``today`` (:func:`today_text` of the turn's time) is what ``${today}`` reads, unless the state
    has a field of that name."""
    if plain(template, old=True):
        return template
    root = {"today": today, **state, "state": state, "input": input, "context": dict(context or {})}

    def value(slot: Slot) -> Any:
        found = read_path(root, slot.path)
        if found is None:
            raise TemplatePlaceholderError(
                f"{where}: placeholder {slot.written} has no value (known: "
                f"{', '.join(sorted(k for k in state if not k.startswith('__'))) or 'nothing'})",
                placeholder=slot.path)
        return found

    return fill(template, value, old=True)


def render_value(value: Any, state: Mapping[str, Any], input: Any = None,
                 context: Mapping[str, Any] | None = None, *, where: str = "template", today: str | None = None) -> Any:
    """Render every string inside ``value`` (dicts and lists walked)."""
    if isinstance(value, str):
        return render(value, state, input, context, where=where, today=today)
    if isinstance(value, Mapping):
        return {k: render_value(v, state, input, context, where=where, today=today) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [render_value(v, state, input, context, where=where, today=today) for v in value]
    return value
