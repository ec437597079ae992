"""API keys: stored as sha256 digests, each bound to a tenant.

Keys come from the ``api_keys`` argument of :func:`tether.server.create_app` or from the
environment variable ``TETHER_API_KEYS`` (``tenant:key`` pairs separated by commas). Only the
digest of a key is kept in memory. With no keys the server runs open: every request acts as the
``public`` tenant.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Iterable, Mapping

from tether.server.problems import ApiError
from tether.stores.records import DEFAULT_TENANT

__all__ = ["OPEN_TENANT", "KeyRing", "hash_key", "keys_from_env"]

OPEN_TENANT = DEFAULT_TENANT
"""The tenant of every request when no API key is configured (and of sessions with no tenant)."""

ENV_VAR = "TETHER_API_KEYS"


def hash_key(key: str) -> str:
    """The hex sha256 digest a key is stored as."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def keys_from_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{key: tenant}`` from ``TETHER_API_KEYS`` (``tenant:key,tenant:key``); empty when unset.

    Raises ``ValueError`` naming the malformed entry (its position, never the key itself)."""
    text = (environ if environ is not None else os.environ).get(ENV_VAR, "").strip()
    keys: dict[str, str] = {}
    if not text:
        return keys
    for index, entry in enumerate(text.split(","), start=1):
        tenant, sep, key = entry.strip().partition(":")
        if not sep or not tenant.strip() or not key.strip():
            raise ValueError(f"{ENV_VAR} entry {index} is not 'tenant:key'")
        keys[key.strip()] = tenant.strip()
    return keys


class KeyRing:
    """The configured keys by digest. ``open`` is True when there are none."""

    def __init__(self, keys: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        pairs = keys.items() if isinstance(keys, Mapping) else keys
        self._tenants: dict[str, str] = {}
        for key, tenant in pairs:
            if not key or not tenant:
                raise ValueError("an API key and its tenant must be non-empty")
            self._tenants[hash_key(key)] = tenant

    @property
    def open(self) -> bool:
        """True when no key is configured (every request is the ``public`` tenant)."""
        return not self._tenants

    def tenant(self, authorization: str | None, api_key: str | None) -> str:
        """The tenant of a request's ``Authorization: Bearer KEY`` or ``X-API-Key`` header.

        Raises ``ApiError`` 401 ``unauthenticated`` when no key is given or it is unknown."""
        if self.open:
            return OPEN_TENANT
        key = api_key
        if key is None and authorization is not None:
            scheme, _, value = authorization.partition(" ")
            if scheme.lower() == "bearer" and value.strip():
                key = value.strip()
        if not key:
            raise ApiError(401, "unauthenticated", "an API key is required (Authorization: Bearer KEY)")
        digest = hash_key(key)
        for known, tenant in self._tenants.items():
            if hmac.compare_digest(known, digest):
                return tenant
        raise ApiError(401, "unauthenticated", "the API key is not valid")
