"""``tether serve --workers``: which worker takes the next connection (``_workers.balanced_turn``)."""

from __future__ import annotations

from tether.cli._workers import balanced_turn


def test_a_worker_takes_the_next_connection_while_no_accepting_worker_holds_fewer() -> None:
    counts = [-1, -1, -1]
    assert balanced_turn(counts, 0, 0)  # nobody else accepts yet
    assert counts == [0, -1, -1]  # and it says how many it holds
    counts[1] = 0
    assert balanced_turn(counts, 0, 0)  # a tie: both may take it
    assert not balanced_turn(counts, 0, 1)  # worker 1 holds fewer: it takes the next one
    assert counts == [1, 0, -1]
    assert balanced_turn(counts, 1, 1)
    assert balanced_turn(counts, 2, 0)  # a worker that just started holds none
    counts[1] = -1  # worker 1 died (or shuts down): it holds nobody back
    assert balanced_turn(counts, 0, 5) is False  # worker 2 still holds fewer
    counts[2] = -1
    assert balanced_turn(counts, 0, 5)
