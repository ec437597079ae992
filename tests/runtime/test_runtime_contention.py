"""Real worker processes on shared sessions, every turn crossing nodes (so each saves mid-turn):
no request lost, run twice or answered with another's reply, and no ``SESSION_CONFLICT``.

A reduced ``bench/contention.py`` (the full figure: 8 processes x 100 turns on 3 sessions).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from store_backends import Backend

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from contention import Report, contend


def assert_clean(report: Report, requests: int) -> None:
    print(report)
    assert report.requests == requests
    assert report.lost == [] and report.duplicated == [] and report.misanswered == []
    assert report.transcript_missing == [] and report.transcript_doubled == []
    assert report.failed_by_code == {} and report.succeeded == requests


async def test_two_processes_on_one_session_each_get_their_own_turn_and_reply(durable: Backend) -> None:
    report = await contend(durable.name, durable.target, durable.schema or "public", processes=2, turns=15,
                           sessions=1)
    assert_clean(report, 30)


@pytest.mark.slow
async def test_eight_processes_on_three_sessions_lose_and_duplicate_nothing(durable: Backend) -> None:
    report = await contend(durable.name, durable.target, durable.schema or "public", processes=8, turns=12,
                           sessions=3)
    assert_clean(report, 96)
