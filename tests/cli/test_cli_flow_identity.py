"""The same code is the same flow: a conversation parked in ``examples/support.py`` continues
after the file is copied to another folder (a release directory, another host) or loaded as a
package module, through ``tether chat`` in a real subprocess."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import chat, copy_support

ASK_ORDER = "What's your order number? Order numbers look like A-1001."
ANSWERED = "Order A-1002 is processing"


def park(app: str | Path, db: Path, cwd: Path) -> str:
    """A conversation parked at the orders flow's question; its session id."""
    done = chat(Path(app), db, "where is my order", cwd=cwd, process=True)
    assert done.code == 0, done.err
    assert done.replies("Sam")[-1] == ASK_ORDER, done.out
    return done.session


def resume(app: str | Path, db: Path, cwd: Path, session: str) -> str:
    """The reply to the order number, in another process serving ``app``."""
    done = chat(Path(app), db, "A-1002", cwd=cwd, process=True, extra=("--session", session))
    assert done.code == 0, done.err
    assert "flow-drift" not in done.out + done.err, done.out + done.err
    return done.replies("Sam")[-1]


def test_a_parked_conversation_continues_after_the_app_is_copied_to_another_folder(tmp_path: Path) -> None:
    release_1 = copy_support(tmp_path / "releases" / "1")
    release_2 = copy_support(tmp_path / "releases" / "2")
    db = tmp_path / "sessions.db"
    session = park(release_1, db, tmp_path)
    assert ANSWERED in resume(release_2, db, tmp_path, session)  # was: flow-drift (another path, another digest)


def test_a_parked_conversation_continues_when_the_file_is_loaded_as_a_module(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    copy_support(package)
    (package / "__init__.py").write_text("")
    db = tmp_path / "sessions.db"
    by_path = park("pkg/support.py", db, tmp_path)
    assert ANSWERED in resume("pkg.support:agent", db, tmp_path, by_path)
    by_module = park("pkg.support:agent", db, tmp_path)
    assert ANSWERED in resume(package / "support.py", db, tmp_path, by_module)
