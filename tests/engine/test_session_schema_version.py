"""Every change of the session document's shape bumps ``SESSION_SCHEMA_VERSION``.

A stored document outlives the code that wrote it: during a rolling deploy an older worker reads
what a newer one wrote, and it can only tell a newer document from a malformed one by its
version. So the JSON Schema of ``Session`` (what a document may hold) is kept here, one file per
version, written once (``TETHER_WRITE_SESSION_SCHEMA=1`` writes a missing one, never rewrites
one); the test fails when the model's schema differs from the file of the current version.
Descriptions are left out: rewording a docstring changes no document.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tether.engine import SESSION_SCHEMA_VERSION, Session

SNAPSHOTS = Path(__file__).parent / "session_schema"
WRITE = "TETHER_WRITE_SESSION_SCHEMA"


def shape(schema: Any) -> Any:
    """``schema`` without its descriptions (text, not shape)."""
    if isinstance(schema, dict):
        return {k: shape(v) for k, v in schema.items() if not (k == "description" and isinstance(v, str))}
    if isinstance(schema, list):
        return [shape(v) for v in schema]
    return schema


def current_shape() -> str:
    return json.dumps(shape(Session.model_json_schema()), indent=1, sort_keys=True) + "\n"


def test_the_session_document_shape_matches_its_version() -> None:
    snapshot = SNAPSHOTS / f"v{SESSION_SCHEMA_VERSION}.json"
    now = current_shape()
    if os.environ.get(WRITE) == "1" and not snapshot.exists():  # a version's snapshot is never rewritten
        snapshot.write_text(now)
    assert snapshot.exists(), (
        f"no snapshot of the session document for schema_version {SESSION_SCHEMA_VERSION}: run this test once "
        f"with {WRITE}=1 to write {snapshot.name}, and commit it")
    assert snapshot.read_text() == now, (
        f"the session document's shape changed, but SESSION_SCHEMA_VERSION is still {SESSION_SCHEMA_VERSION}. "
        "Documents are read by older and newer workers during a deploy: bump SESSION_SCHEMA_VERSION, make this "
        "tether read the previous version (a migration, or an upgrade in the runtime as for version 1), then "
        f"run this test with {WRITE}=1 to write v{SESSION_SCHEMA_VERSION + 1}.json and commit it (keep "
        f"{snapshot.name}). A change that is only a docstring does not count; a default does.")


def test_every_version_has_its_snapshot_and_none_is_ahead() -> None:
    versions = sorted(int(p.stem[1:]) for p in SNAPSHOTS.glob("v*.json"))
    assert versions and versions[-1] == SESSION_SCHEMA_VERSION, versions
