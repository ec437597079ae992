"""The history an OpenAI-style client sends, reduced to what identifies its conversation.

A client that keeps no session id replays the whole conversation with every request. What it
replays of tether's side is the text tether answered, so a conversation is the sequence of its
``user`` and ``assistant`` texts: system and developer messages are left out (tether's agent has
its own instructions, and clients rebuild their system prompt per request), as are empty assistant
messages (a turn that said nothing), and each text is stripped of surrounding whitespace.

A :func:`history_key` digests a tenant, an agent and such a sequence: the server records the key of
each exchange it answered (the history up to and including its reply) against the session, and
the client's next request, whose history ends with that reply, finds its session by it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tether.server.problems import ApiError

__all__ = ["SPOKEN_ROLES", "Said", "content_text", "conversation", "digest", "history_key"]

SPOKEN_ROLES = ("user", "assistant")
"""The roles whose messages make a conversation (the others are instructions)."""

_INSTRUCTION_ROLES = ("system", "developer")
_TEXT_PARTS = ("text", "input_text", "output_text")


@dataclass(frozen=True)
class Said:
    """One message of a conversation: who said it and its text."""

    role: str
    text: str


def content_text(content: str | Sequence[Any] | None, where: str) -> str:
    """The text of a message's ``content``: a string, or its text parts joined by newlines.

    Raises ``ApiError`` 422 naming ``where`` for a part that is not an object with a ``type``, and
    400 ``unsupported-content`` for a non-text part (an image, audio, a file)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for index, part in enumerate(content):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise ApiError(422, "invalid-body", f"{where}.{index}: a content part is an object with a 'type'")
        if part["type"] not in _TEXT_PARTS:
            raise ApiError(400, "unsupported-content",
                           f"{where}.{index}: tether agents read text; a {part['type']!r} part is not supported")
        text = part.get("text")
        if not isinstance(text, str):
            raise ApiError(422, "invalid-body", f"{where}.{index}.text: a text part needs its text (a string)")
        texts.append(text)
    return "\n".join(texts)


def conversation(messages: Iterable[tuple[str, str]]) -> list[Said]:
    """The conversation of ``(role, text)`` messages: user and assistant texts, stripped, without
    instructions or empty assistant messages. Other roles (``tool``, ``function``) are kept, so a
    history holding them matches no conversation tether answered."""
    said: list[Said] = []
    for role, text in messages:
        if role in _INSTRUCTION_ROLES:
            continue
        text = text.strip()
        if role == "assistant" and not text:
            continue
        said.append(Said(role, text))
    return said


def digest(*parts: Any) -> str:
    """A hex sha256 of ``parts`` as canonical JSON."""
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def history_key(tenant: str, agent: str, said: Sequence[Said]) -> str:
    """The conversation key of ``said`` for ``tenant`` and ``agent``."""
    return "history:" + digest(tenant, agent, [[s.role, s.text] for s in said])
