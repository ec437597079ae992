"""The texts of a node that are templates (``response``, ``fallback``, ``ask``, ``question``,
``prompt``, ``instructions``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from tether.flow.nodes import Collect, Decide, Node, Reply

__all__ = ["templates_of"]


def templates_of(node: Node) -> Iterator[tuple[str, str]]:
    """The ``(option, template)`` pairs of ``node`` (string templates only; functions are code)."""
    if isinstance(node, Reply):
        for option in ("response", "fallback", "instructions"):
            value = getattr(node, option)
            if isinstance(value, str):
                yield option, value
    elif isinstance(node, Collect):
        if isinstance(node.question, str):
            yield "question", node.question
        if isinstance(node.ask, str):
            yield "ask", node.ask
        elif isinstance(node.ask, Mapping):
            yield from ((f"ask.{name}", text) for name, text in node.ask.items() if isinstance(text, str))
        if isinstance(node.instructions, str):
            yield "instructions", node.instructions
    elif isinstance(node, Decide):
        if isinstance(node.prompt, str):
            yield "prompt", node.prompt
        if isinstance(node.instructions, str):
            yield "instructions", node.instructions
