"""Choices: the options a ``collect`` or ``decide`` node offers, so a UI can show buttons.

Entering such a node emits an ``interactive {node_id, options, prompt}`` event. A customer message
that is exactly a choice's label (or id), ignoring case, surrounding spaces and end punctuation,
is taken as that choice with no model call: a decide node hands ``{"choice": id}`` to its
``decide`` function, a collect node fills its one field with the id. Anything else goes to the
model as before (a decide node's ``choice`` is then constrained to the ids plus ``__none``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

__all__ = ["NO_CHOICE", "Choice", "ChoiceReply", "as_choices", "choice_problems", "match_choice"]

NO_CHOICE = "__none"
"""The choice the model answers when the message picks none of the options (map it to ``stay``)."""


@dataclass(frozen=True)
class Choice:
    """One option: ``id`` is what the flow receives, ``label`` what the customer sees (and may
    type or tap), ``description`` an optional hint for the UI."""

    id: str
    label: str
    description: str | None = None

    def as_dict(self) -> dict[str, Any]:
        option: dict[str, Any] = {"id": self.id, "label": self.label}
        if self.description is not None:
            option["description"] = self.description
        return option


class ChoiceReply(BaseModel):
    """The default schema of a decide node with choices: which option the customer picked."""

    choice: str


def as_choices(values: Iterable[Any]) -> tuple[Any, ...]:
    """Normalise what an author wrote: a string is a choice whose id and label are that string,
    a ``(id, label)`` pair or an ``{"id", "label", "description"?}`` mapping becomes a Choice.
    Anything else is kept as it is, for the flow's validation to name."""
    normalised: list[Any] = []
    for value in values:
        if isinstance(value, str):
            normalised.append(Choice(value, value))
        elif isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) for v in value):
            normalised.append(Choice(value[0], value[1]))
        elif isinstance(value, Mapping) and isinstance(value.get("id"), str) and isinstance(value.get("label"), str):
            description = value.get("description")
            normalised.append(Choice(value["id"], value["label"], description if isinstance(description, str)
                                     else None))
        else:
            normalised.append(value)
    return tuple(normalised)


def choice_problems(choices: tuple[Any, ...]) -> list[str]:
    """What is wrong with a node's choices, as sentences."""
    problems: list[str] = []
    seen: set[str] = set()
    for i, choice in enumerate(choices):
        if not isinstance(choice, Choice) or not choice.id.strip() or not choice.label.strip():
            problems.append(f"choices[{i}] is {choice!r}; a choice is a label, an (id, label) pair or a Choice "
                            "with a non-empty id and label")
            continue
        if choice.id == NO_CHOICE:
            problems.append(f"choices[{i}] uses the reserved id {NO_CHOICE!r}")
        for key in {_normal(choice.id), _normal(choice.label)}:
            if key in seen:
                problems.append(f"choices[{i}] ({choice.label!r}) can be confused with an earlier choice")
                break
            seen.add(key)
    return problems


_EDGES = re.compile(r"^[\s\"'“”‘’.,!?¡¿;:]+|[\s\"'“”‘’.,!?¡¿;:]+$")


def _normal(text: str) -> str:
    return " ".join(_EDGES.sub("", text).casefold().split())


def match_choice(text: str, choices: tuple[Any, ...]) -> Choice | None:
    """The choice ``text`` names exactly (its label or its id), or None."""
    wanted = _normal(text)
    if not wanted:
        return None
    for choice in choices:
        if isinstance(choice, Choice) and wanted in (_normal(choice.label), _normal(choice.id)):
            return choice
    return None
