"""The pure parts of ``benchmarks/concurrency_ab.py``: the block order, the summary, the check."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import concurrency_ab as C


def _block(side: C.Side, r: int, clients: int, calls: int, wall: float, **ms: float) -> C.Block:
    return C.Block(
        side=side,
        round=r,
        clients=clients,
        calls=calls,
        wall_s=wall,
        client_cpu_ms=ms.get("client", 0.0),
        server_cpu_ms=ms.get("server", 0.0),
        pool_wait_ms=ms.get("pool", 0.0),
        executor_wait_ms=ms.get("executor", 0.0),
        load=1.0,
    )


@pytest.mark.parametrize("rounds", [1, 2, 5])
def test_schedule_gives_each_side_a_block_of_each_kind_a_round_and_alternates_the_lead(rounds: int) -> None:
    order = C.schedule(rounds)
    assert len(order) == 4 * rounds
    for r in range(rounds):
        blocks = [(side, kind) for rr, side, kind in order if rr == r]
        assert sorted(blocks) == [("A", "many"), ("A", "one"), ("B", "many"), ("B", "one")]
        # the many-client blocks come first; who leads them swaps every round
        assert [kind for _, kind in blocks] == ["many", "many", "one", "one"]
        assert blocks[0][0] == ("A" if r % 2 == 0 else "B")
        # the 1-client blocks run in the reverse order (A B B A): neither side always follows
        assert blocks[2][0] == blocks[1][0] and blocks[3][0] == blocks[0][0]


def test_summarise_pools_rounds_and_divides_per_recall() -> None:
    blocks = [
        # A: 8 clients 160 calls in 8 s + 160 in 8 s = 20 q/s; 1 client 40 in 4 s + 40 in 2 s
        _block("A", 0, 8, 160, 8.0, client=1600.0, server=3200.0, pool=16.0, executor=32.0),
        _block("A", 1, 8, 160, 8.0, client=1600.0, server=3200.0),
        _block("A", 0, 1, 40, 4.0, client=800.0, server=400.0),
        _block("A", 1, 1, 40, 2.0, client=400.0, server=400.0),
        # B: 8 clients 10 q/s, 1 client 10 q/s
        _block("B", 0, 8, 160, 16.0),
        _block("B", 0, 1, 40, 4.0),
    ]
    s = C.summarise(blocks, 8)
    a, b = s["A"], s["B"]
    assert a["qps_many"] == pytest.approx(20.0)
    assert a["qps_one"] == pytest.approx(80 / 6)
    assert a["ratio"] == pytest.approx(20.0 / (80 / 6))
    # per round: 20 / 10 = 2.0 and 20 / 20 = 1.0
    assert a["ratio_round_median"] == pytest.approx(1.5)
    assert a["client_cpu_many"] == pytest.approx(10.0)
    assert a["server_cpu_many"] == pytest.approx(20.0)
    assert a["client_cpu_one"] == pytest.approx(15.0)
    assert a["server_cpu_one"] == pytest.approx(10.0)
    assert a["pool_wait_many"] == pytest.approx(0.05)
    assert a["executor_wait_many"] == pytest.approx(0.1)
    assert b["ratio"] == pytest.approx(1.0)


def test_differing_names_queries_whose_results_change_across_or_within_sides() -> None:
    assert C.differing({"A": [(0, "x"), (1, "y")], "B": [(1, "y"), (0, "x")]}) == []
    assert C.differing({"A": [(0, "x"), (1, "y")], "B": [(1, "w"), (0, "x")]}) == [1]
    # a side disagreeing with itself (a nondeterministic recall) is reported too
    assert C.differing({"A": [(3, "x"), (3, "v")], "B": []}) == [3]


def test_merged_takes_the_slowest_wall_and_sums_the_rest() -> None:
    one = {
        "wall": 2.0,
        "calls": 4,
        "cpu_ms": 10.0,
        "pool_wait_ms": 1.0,
        "executor_wait_ms": 2.0,
        "checkouts": 24,
        "results": [[0, "a", "x"]],
    }
    two = {
        "wall": 3.0,
        "calls": 4,
        "cpu_ms": 20.0,
        "pool_wait_ms": 0.5,
        "executor_wait_ms": 0.0,
        "checkouts": 23,
        "results": [[1, "b", "y"]],
    }
    assert C._merged([one]) is one
    assert C._merged([one, two]) == {
        "wall": 3.0,
        "calls": 8,
        "cpu_ms": 30.0,
        "pool_wait_ms": 1.5,
        "executor_wait_ms": 2.0,
        "checkouts": 47,
        "results": [[0, "a", "x"], [1, "b", "y"]],
    }


def test_cores_used_divides_the_sides_cpu_by_its_wall_time() -> None:
    blocks = [
        _block("A", 0, 8, 160, 8.0, client=4000.0, server=4000.0),
        _block("A", 0, 1, 40, 4.0, client=1000.0, server=1000.0),
        _block("B", 0, 8, 160, 8.0),
        _block("B", 0, 1, 40, 4.0),
    ]
    s = C.summarise(blocks, 8)
    assert s["A"]["cores_many"] == pytest.approx(1.0)
    assert s["A"]["cores_one"] == pytest.approx(0.5)
    assert s["B"]["cores_many"] == 0.0
