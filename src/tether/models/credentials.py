"""Credentials never persist: :func:`strip_secrets` removes them from anything before it is stored."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["SECRET_KEY_MARKERS", "is_secret_key", "strip_secrets"]

SECRET_KEY_MARKERS: tuple[str, ...] = ("apikey", "authorization", "token", "secret", "password", "credential")


def is_secret_key(key: str) -> bool:
    """Whether a key names a secret: after lower-casing and dropping everything but letters and
    digits (``api_key``, ``API-Key`` and ``apiKey`` all become ``apikey``), it contains one of
    :data:`SECRET_KEY_MARKERS` (so ``access_token``, ``client_secret``, ``credentials`` match).

    Token *counts* are not secrets: a key ending in ``tokens`` (``max_tokens``,
    ``max_output_tokens``) is kept."""
    normalised = re.sub(r"[^a-z0-9]", "", key.lower())
    if normalised.endswith("tokens") and not any(m in normalised for m in SECRET_KEY_MARKERS if m != "token"):
        return False
    return any(marker in normalised for marker in SECRET_KEY_MARKERS)


def strip_secrets(obj: Any) -> Any:
    """A copy of ``obj`` with every mapping key that names a secret removed, recursively (through
    dicts, lists and tuples). Other values are returned as they are."""
    if isinstance(obj, dict):
        return {k: strip_secrets(v) for k, v in obj.items() if not (isinstance(k, str) and is_secret_key(k))}
    if isinstance(obj, list):
        return [strip_secrets(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(strip_secrets(v) for v in obj)
    return obj
