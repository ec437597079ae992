"""``tether drift APP --db``: before a deploy, what the new code would do with every parked run;
exit 1 when any would fail. A real subprocess, on a store a real ``tether chat`` wrote."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import chat, copy_support, tether

WIDE = {"COLUMNS": "250"}  # one table row per line


def parked(tmp_path: Path) -> tuple[Path, str]:
    """A store holding one conversation parked at the orders flow's ``ask_order`` question."""
    db = tmp_path / "sessions.db"
    done = chat(copy_support(tmp_path / "releases" / "1"), db, "where is my order", cwd=tmp_path, process=True)
    assert done.code == 0, done.err
    return db, done.session


def release(tmp_path: Path, name: str, old: str, new: str) -> Path:
    """The next release: ``examples/support.py`` with ``old`` replaced by ``new``."""
    app = copy_support(tmp_path / "releases" / name)
    source = app.read_text()
    assert old in source
    app.write_text(source.replace(old, new))
    return app


def test_drift_reports_a_removed_node_and_fails(tmp_path: Path) -> None:
    db, session = parked(tmp_path)
    renamed = release(tmp_path, "2", '"ask_order"', '"ask_number"')
    done = tether("drift", renamed, "--db", db, env=WIDE, process=True)
    assert done.code == 1, done.out + done.err
    row = next(line for line in done.out.splitlines() if session in line)
    assert "orders" in row and "ask_order" in row and "error" in row
    assert "node 'ask_order' is gone" in row and "on_drift is 'error'" in row
    assert "1 run(s) would fail with flow-drift after this deploy" in done.out


def test_drift_reports_a_reworded_question_as_continuing(tmp_path: Path) -> None:
    db, session = parked(tmp_path)
    same = tether("drift", copy_support(tmp_path / "releases" / "copy"), "--db", db, env=WIDE, process=True)
    assert same.code == 0 and "1 parked run(s): 1 unchanged" in same.out, same.out + same.err
    reworded = release(tmp_path, "2", "What's your order number?", "Which order is it?")
    done = tether("drift", reworded, "--db", db, env=WIDE, process=True)
    assert done.code == 0, done.out + done.err
    row = next(line for line in done.out.splitlines() if session in line)
    assert "continue" in row and "node 'ask_order' is still a collect node" in row
    after = chat(reworded, db, "A-1002", cwd=tmp_path, process=True, extra=("--session", session))
    assert after.code == 0 and "Order A-1002 is processing" in after.replies("Sam")[-1], after.out


def test_drift_without_a_store_says_so(tmp_path: Path) -> None:
    done = tether("drift", copy_support(tmp_path / "app"), "--db", tmp_path / "none.db")
    assert done.code == 1 and "no session store at" in done.err
