"""The sync and async runners are twins: the same plan gives the same values through both."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from shared_core import MemoryEngine
from shared_core.storage.plan import Compute, Concurrently, Copy, Plan, Query


@dataclass(frozen=True, slots=True, kw_only=True)
class _Pair:
    n: int
    word: str


def _every_operation() -> Plan[list[Any]]:
    seen: list[Any] = []
    seen.append((yield Query("SELECT 1 AS n, 'one' AS word")))
    seen.append((yield Query("SELECT 2 AS n, 'two' AS word", fetch="one", row_type=_Pair)))
    seen.append((yield Query("SELECT 1 WHERE false", fetch="one")))
    yield Query("CREATE TEMP TABLE twin (n int, word text) ON COMMIT DROP", fetch="none")
    seen.append((yield Copy("COPY twin (n, word) FROM STDIN", [(3, "three"), (4, "four")])))
    seen.append((yield Query("UPDATE twin SET word = upper(word)", fetch="none")))
    seen.append((yield Query("SELECT n, word FROM twin ORDER BY n", row_type=_Pair)))
    both = yield Concurrently((Query("SELECT %(x)s::int AS x", {"x": 5}), Query("SELECT 1/0 AS boom")))
    seen.append((both[0], type(both[1]).__name__))
    # One-offs with settings or a timeout run in a transaction of their own (one pipeline):
    # the setting holds for their statement only, a timeout comes back as a value, and the
    # connection returns to the pool clean (the next ones run).
    framed = yield Concurrently(
        (
            Query("SELECT current_setting('work_mem') AS mem", settings={"work_mem": "7MB"}),
            Query("SELECT pg_sleep(1)", timeout_ms=50),
            Query("SELECT 1/0 AS boom", timeout_ms=5000),
            Query("SELECT current_setting('work_mem') = '7MB' AS leaked"),
        )
    )
    seen.append([f if isinstance(f, list) else type(f).__name__ for f in framed])
    again = yield Concurrently(
        (Query("SELECT 6 AS x", timeout_ms=5000), Query("SELECT 7 AS x", settings={"work_mem": "7MB"}))
    )
    seen.append(again)
    seen.append((yield Compute(sum, ([1, 2, 3],))))
    try:
        yield Query("SELECT pg_sleep(1)", timeout_ms=50)
    except psycopg.errors.QueryCanceled:
        seen.append("cancelled")
    # The transaction survived the timeout (savepoint): the temp table is still there.
    seen.append((yield Query("SELECT count(*) AS n FROM twin", fetch="one")))
    return seen


async def test_sync_and_async_runners_agree_on_every_operation(engine: MemoryEngine) -> None:
    sync_values = engine.run(_every_operation())
    async_values = await engine.arun(_every_operation())
    assert sync_values == async_values
    assert sync_values[1] == _Pair(n=2, word="two")
    assert sync_values[5] == [_Pair(n=3, word="THREE"), _Pair(n=4, word="FOUR")]
    assert sync_values[6] == ([{"x": 5}], "DivisionByZero")
    assert sync_values[7] == [[{"mem": "7MB"}], "QueryCanceled", "DivisionByZero", [{"leaked": False}]]
    assert sync_values[8] == [[{"x": 6}], [{"x": 7}]]
    assert sync_values[-2:] == ["cancelled", {"n": 2}]


def _pair(*, n: int, word: str) -> tuple[int, str]:
    """A row maker that is not a class: ``row_type`` takes any callable of the columns."""
    return (n, word)


def _made_rows() -> Plan[list[Any]]:
    rows = yield Query("SELECT n, 'w' || n AS word FROM generate_series(1, 2) AS n", row_type=_pair)
    none = yield Query("SELECT 1 AS n, 'x' AS word WHERE false", fetch="one", row_type=_pair)
    return [rows, none]


async def test_both_runners_make_rows_with_any_row_maker(engine: MemoryEngine) -> None:
    assert engine.run(_made_rows()) == await engine.arun(_made_rows()) == [[(1, "w1"), (2, "w2")], None]


def _concurrent_transactions() -> Plan[list[Any]]:
    rows = yield Concurrently(
        (
            # No settings: its own transaction (autocommit), no BEGIN / COMMIT round trips.
            Query("SELECT statement_timestamp() = transaction_timestamp() AS alone"),
            # Settings are transaction-local: applied in a transaction, before the statement.
            Query("SELECT current_setting('work_mem') AS work_mem", settings={"work_mem": "7MB"}),
            Query("SELECT 1/0 AS boom"),
        )
    )
    return [rows[0], rows[1], type(rows[2]).__name__]


async def test_concurrent_queries_run_alone_unless_they_carry_settings(engine: MemoryEngine) -> None:
    expected = [[{"alone": True}], [{"work_mem": "7MB"}], "DivisionByZero"]
    for _ in range(3):
        assert engine.run(_concurrent_transactions()) == expected
        assert await engine.arun(_concurrent_transactions()) == expected
    # Every pooled connection went back as it came: not in autocommit, idle.
    pool = engine._pools._sync_pool()
    held = [pool.getconn() for _ in range(pool.max_size)]
    try:
        assert not any(conn.autocommit for conn in held)
    finally:
        for conn in held:
            pool.putconn(conn)
