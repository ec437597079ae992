"""``tether serve`` names its store ``--db`` like every other command; ``--store``, its older
name, still works."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_helpers import SUPPORT, tether


def test_serve_documents_db_and_lists_store_as_its_older_name() -> None:
    done = tether("serve", "--help", env={"COLUMNS": "200"})
    assert done.code == 0, done.err
    assert re.search(r"--db,--store\s+<str>\s+the session store: a SQLite path or a store URL", done.out), done.out


@pytest.mark.parametrize("option", ["--db", "--store"])
def test_serve_reads_the_store_from_db_and_from_store(option: str, tmp_path: Path) -> None:
    # memory: cannot be shared by worker processes: the refusal shows the value reached the store
    done = tether("serve", SUPPORT, option, "memory:", "--workers", "2", cwd=tmp_path)
    assert done.code == 2, done.out + done.err
    assert "--workers needs a store the processes share (a SQLite file or PostgreSQL), not memory:" in done.err
