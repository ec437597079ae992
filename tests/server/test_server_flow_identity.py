"""The same code is the same flow under ``tether serve`` too: a conversation parked while one
release of ``examples/support.py`` served it continues when a copy in another folder (the next
release directory) serves it, or the same file loaded as a package module."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
from serve_process import tether_serve

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SAM = "/v1/agents/Sam/sessions"


def copy_support(folder: Path) -> Path:
    """``examples/support.py`` and its data, byte for byte, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLES / "support.py", folder / "support.py")
    shutil.copytree(EXAMPLES / "data", folder / "data")
    return folder / "support.py"


def say(app: str, db: Path, cwd: Path, text: str, session: str | None = None) -> tuple[str, httpx.Response]:
    """Serve ``app`` on ``db``, send ``text`` (in a new session unless ``session``), stop serving."""
    with tether_serve([app, "--db", str(db)], cwd=cwd) as served, httpx.Client(base_url=served.base) as client:
        sid = session or client.post(SAM).json()["session"]
        return sid, client.post(f"{SAM}/{sid}/messages", json={"text": text}, timeout=30)


def test_a_parked_conversation_continues_when_the_next_release_serves_it(tmp_path: Path) -> None:
    copy_support(tmp_path / "releases" / "1")
    copy_support(tmp_path / "releases" / "2")
    db = tmp_path / "sessions.db"
    sid, asked = say("releases/1/support.py", db, tmp_path, "where is my order")
    assert asked.status_code == 200 and "order number" in asked.json()["message"], asked.text
    _, answered = say("releases/2/support.py", db, tmp_path, "A-1002", session=sid)
    assert answered.status_code == 200, answered.text  # was: 500 flow-drift
    assert "Order A-1002 is processing" in answered.json()["message"]


def test_a_parked_conversation_continues_when_the_app_is_named_as_a_module(tmp_path: Path) -> None:
    copy_support(tmp_path / "pkg")
    (tmp_path / "pkg" / "__init__.py").write_text("")
    db = tmp_path / "sessions.db"
    sid, asked = say("pkg/support.py", db, tmp_path, "where is my order")
    assert asked.status_code == 200 and "order number" in asked.json()["message"], asked.text
    _, answered = say("pkg.support:agent", db, tmp_path, "A-1002", session=sid)
    assert answered.status_code == 200, answered.text
    assert "Order A-1002 is processing" in answered.json()["message"]


def test_a_release_that_removed_the_parked_node_answers_409_flow_drift(tmp_path: Path) -> None:
    copy_support(tmp_path / "releases" / "1")
    renamed = copy_support(tmp_path / "releases" / "2")
    renamed.write_text(renamed.read_text().replace('"ask_order"', '"ask_number"'))
    db = tmp_path / "sessions.db"
    sid, _ = say("releases/1/support.py", db, tmp_path, "where is my order")
    _, refused = say("releases/2/support.py", db, tmp_path, "A-1002", session=sid)
    assert refused.status_code == 409, refused.text  # was 500, which says "a bug"
    assert refused.json()["code"] == "flow-drift" and "node 'ask_order' is gone" in refused.json()["message"]
    _, kept = say("releases/1/support.py", db, tmp_path, "A-1002", session=sid)  # nothing was saved: it goes on
    assert kept.status_code == 200 and "Order A-1002 is processing" in kept.json()["message"], kept.text
