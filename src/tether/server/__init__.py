"""tether.server: the HTTP API (``create_app``) that ``tether serve`` runs on uvicorn.

Needs the ``server`` extra (``pip install 'tether[server]'``: Starlette and uvicorn).
"""

from tether.server.app import create_app
from tether.server.auth import OPEN_TENANT, KeyRing, hash_key, keys_from_env
from tether.server.problems import ApiError

__all__ = ["OPEN_TENANT", "ApiError", "KeyRing", "create_app", "hash_key", "keys_from_env"]
