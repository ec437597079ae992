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

__all__ = ["OPEN_TENANT", "KeyRing", "hash_key", "keys_from_env", "operator_keys_from_env"]

OPEN_TENANT = DEFAULT_TENANT
"""The tenant of every request when no API key is configured (and of sessions with no tenant)."""

ENV_VAR = "TETHER_API_KEYS"
OPERATOR_ENV_VAR = "TETHER_OPERATOR_KEYS"


def hash_key(key: str) -> str:
    """The hex sha256 digest a key is stored as."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def keys_from_env(environ: Mapping[str, str] | None = None, *, var: str = ENV_VAR) -> dict[str, str]:
    """``{key: tenant}`` from ``TETHER_API_KEYS`` (or ``var``: ``tenant:key,tenant:key``); empty when unset.

    Raises ``ValueError`` naming the malformed entry (its position, never the key itself)."""
    text = (environ if environ is not None else os.environ).get(var, "").strip()
    keys: dict[str, str] = {}
    if not text:
        return keys
    for index, entry in enumerate(text.split(","), start=1):
        tenant, sep, key = entry.strip().partition(":")
        if not sep or not tenant.strip() or not key.strip():
            raise ValueError(f"{var} entry {index} is not 'tenant:key'")
        keys[key.strip()] = tenant.strip()
    return keys


def operator_keys_from_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{key: tenant}`` from ``TETHER_OPERATOR_KEYS`` (``tenant:key,...``): the keys of the people
    who take conversations over; empty when unset."""
    return keys_from_env(environ, var=OPERATOR_ENV_VAR)


class KeyRing:
    """The configured keys by digest. ``open`` is True when there are none.

    ``operator_keys`` are the keys of people who take conversations over: they act on every route
    of their tenant, and only they may use the operator routes once any is configured (with none,
    every key of a tenant is its operators' too)."""

    def __init__(self, keys: Mapping[str, str] | Iterable[tuple[str, str]] = (),
                 operator_keys: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        self._tenants: dict[str, str] = {}
        self._operators: set[str] = set()
        for source, operator in ((keys, False), (operator_keys, True)):
            for key, tenant in source.items() if isinstance(source, Mapping) else source:
                if not key or not tenant:
                    raise ValueError("an API key and its tenant must be non-empty")
                self._tenants[hash_key(key)] = tenant
                if operator:
                    self._operators.add(hash_key(key))

    def is_operator(self, authorization: str | None, api_key: str | None) -> bool:
        """Whether the request's key may use the operator routes (call after ``tenant``)."""
        if self.open or not self._operators:
            return True
        key = _key_of(authorization, api_key)
        return key is not None and hash_key(key) in self._operators

    @property
    def open(self) -> bool:
        """True when no key is configured (every request is the ``public`` tenant)."""
        return not self._tenants

    def tenant(self, authorization: str | None, api_key: str | None) -> str:
        """The tenant of a request's ``Authorization: Bearer KEY`` or ``X-API-Key`` header.

        Raises ``ApiError`` 401 ``unauthenticated`` when no key is given or it is unknown."""
        if self.open:
            return OPEN_TENANT
        key = _key_of(authorization, api_key)
        if not key:
            raise ApiError(401, "unauthenticated", "an API key is required (Authorization: Bearer KEY)")
        digest = hash_key(key)
        for known, tenant in self._tenants.items():
            if hmac.compare_digest(known, digest):
                return tenant
        raise ApiError(401, "unauthenticated", "the API key is not valid")


def _key_of(authorization: str | None, api_key: str | None) -> str | None:
    """The key of ``X-API-Key``, else of ``Authorization: Bearer KEY``."""
    if api_key is not None:
        return api_key
    if authorization is not None:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    return None
