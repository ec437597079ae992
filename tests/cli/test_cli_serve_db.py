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


def test_serve_takes_the_flow_refresh_interval_for_every_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.cli import _serve

    done = tether("serve", "--help", env={"COLUMNS": "200"})
    assert re.search(r"--flow-refresh\s+<float range> \[x>=0.0\]\s+seconds between reads of the stored flow versions",
                     done.out), done.out
    refused = tether("serve", SUPPORT, "--flow-refresh", "-1")
    assert refused.code == 2 and "--flow-refresh" in refused.err
    served = _serve._app(_serve._agents(str(SUPPORT), None), "memory:", 0.25)
    assert served.state.flow_refresh.interval == 0.25  # one process
    monkeypatch.setenv(_serve.APP_ENV, str(SUPPORT))  # a --workers process reads what tether serve set
    monkeypatch.setenv(_serve.STORE_ENV, "memory:")
    monkeypatch.setenv(_serve.REFRESH_ENV, "0")
    assert _serve.worker_app().state.flow_refresh.interval == 0
    monkeypatch.delenv(_serve.REFRESH_ENV)
    assert _serve.worker_app().state.flow_refresh.interval == _serve.DEFAULT_FLOW_REFRESH
