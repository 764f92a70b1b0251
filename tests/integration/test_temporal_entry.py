"""The temporal arm's windowed entry statement: a window holding few memories is ranked exactly
(btrees find its rows) instead of by an HNSW scan filtered to the window; a broad window keeps
the HNSW scan. Either way the rows are those of the former statement (same ids, same cosine,
same dates) on a bank where the HNSW scan is exact."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg import sql

from shared_core import MemoryEngine, MemoryItem
from shared_core.recall.arms import ArmQuery
from shared_core.recall.arms.temporal import ENTRY_SETTINGS, TEMPORAL, temporal_entry_statement
from shared_core.storage.plan import GENERIC_PLAN
from shared_core.types import TimeWindow
from tests.integration.arm_banks import arm_query, dated_notes, entry_rows, inside

UTC = dt.UTC

# The statement as it was before the exact path (main at b3660f1): the reference.
_FORMER = """
SELECT u.id::text AS id, 1 - ({vec} <=> {qvec}) AS similarity,
       u.occurred_start, u.occurred_end, u.mentioned_at, u.date_grain
FROM memory_units u
WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[]) AND {dims} AND {tags}
  AND ((u.occurred_start IS NOT NULL AND u.occurred_start <= %(wend)s
        AND coalesce(u.occurred_end, u.occurred_start) >= %(wstart)s)
       OR u.mentioned_at BETWEEN %(wstart)s AND %(wend)s)
ORDER BY {vec} <=> {qvec}
LIMIT %(pool)s"""


def _rows(
    engine: MemoryEngine, statement: sql.Composed, params: dict[str, Any]
) -> dict[str, tuple[Any, ...]]:
    return {r[0]: r[1:] for r in entry_rows(engine, statement, params)}


WINDOWS = [
    TimeWindow(start=dt.datetime(2023, 3, 1, tzinfo=UTC), end=dt.datetime(2023, 3, 31, 23, 59, tzinfo=UTC)),
    TimeWindow(start=dt.datetime(2023, 6, 10, tzinfo=UTC), end=dt.datetime(2023, 6, 12, tzinfo=UTC)),
    TimeWindow(start=dt.datetime(2023, 1, 1, tzinfo=UTC), end=dt.datetime(2024, 12, 31, tzinfo=UTC)),
    TimeWindow(start=dt.datetime(2030, 1, 1, tzinfo=UTC), end=dt.datetime(2030, 2, 1, tzinfo=UTC)),
]


def _truth(engine: MemoryEngine, bank: str, q: ArmQuery, window: TimeWindow, pool: int) -> dict[str, float]:
    """The ``pool`` memories of the window most similar to the query, computed here."""
    with psycopg.connect(engine.dsn) as conn:
        register_vector(conn)
        stored = conn.execute(
            "SELECT id::text, fact_type, occurred_start, occurred_end, mentioned_at, embedding::vector"
            " FROM memory_units WHERE bank_id = %s",
            (bank,),
        ).fetchall()
    scored = [
        (i, float(np.dot(v, q.vector) / (np.linalg.norm(v) * np.linalg.norm(q.vector))))
        for i, ft, start, end, said, v in stored
        if ft in q.types
        and inside(MemoryItem(text="-", occurred_start=start, occurred_end=end, mentioned_at=said), window)
    ]
    return dict(sorted(scored, key=lambda r: -r[1])[:pool])


@pytest.mark.parametrize("pool", [5, 200])
def test_both_paths_return_the_former_statements_rows(engine: MemoryEngine, bank: str, pool: int) -> None:
    engine.retain(dated_notes(), bank=bank, progress=False)
    for window in WINDOWS:
        q = arm_query(engine, bank, window=window)
        params = q.params(wstart=window.start, wend=window.end, pool=pool)
        former = sql.SQL(_FORMER).format(
            vec=q.dimension.column, qvec=q.dimension.query(), dims=q.dimension.predicate, tags=q.where_sql
        )
        expected = _rows(engine, former, params)
        exact = _rows(engine, temporal_entry_statement(q.where_sql, q.dimension), params)
        ann = _rows(engine, temporal_entry_statement(q.where_sql, q.dimension, exact_max=0), params)
        # The HNSW path is the former statement.
        assert ann == expected
        # The exact path returns the true top ``pool`` of the window. The former statement's HNSW
        # scan may return fewer (the test database's index holds every test's banks, and the
        # iterative scan stops at hnsw.max_scan_tuples), never others; a memory found by both
        # scores the same and carries the same dates.
        truth = _truth(engine, bank, q, window, pool)
        assert exact.keys() == truth.keys(), window
        assert all(exact[i][0] == pytest.approx(s, abs=1e-6) for i, s in truth.items())
        assert expected.keys() <= exact.keys()
        for key, row in expected.items():
            assert exact[key][0] == pytest.approx(row[0], abs=1e-9)
            assert exact[key][1:] == row[1:]
        if pool <= 5:
            assert exact.keys() == expected.keys()
    assert len(expected) == 0  # the last window holds nothing


def test_the_exact_path_finds_every_memory_in_the_window(engine: MemoryEngine, bank: str) -> None:
    """Spans that began before the window, memories only said in it, and the window's edges."""
    items = dated_notes()
    ids = engine.retain(items, bank=bank, progress=False)
    window = WINDOWS[0]
    q = arm_query(engine, bank, window=window)
    rows = _rows(
        engine,
        temporal_entry_statement(q.where_sql, q.dimension),
        q.params(wstart=window.start, wend=window.end, pool=1000),
    )

    expected = {ids[i] for i, item in enumerate(items) if item.fact_type in q.types and inside(item, window)}
    assert set(rows) == expected
    spans_in = {
        ids[i]
        for i, item in enumerate(items)
        if item.occurred_end is not None
        and item.occurred_start is not None
        and item.occurred_start < window.start
    }
    assert spans_in & expected  # the bank has spans that began before the window and reach into it


def test_the_arm_runs_the_entry_statement_with_its_settings(engine: MemoryEngine) -> None:
    query = TEMPORAL.start(arm_query(engine, "b", window=WINDOWS[0]))
    assert query is not None
    # unfiltered: planned generic too (framed for ENTRY_SETTINGS anyway)
    assert dict(query.settings) == {**ENTRY_SETTINGS, **GENERIC_PLAN}
    assert "few" in str(query.statement.as_string(None))  # type: ignore[union-attr]


def test_a_filtered_entry_statement_keeps_custom_plans(engine: MemoryEngine) -> None:
    # a filter's selectivity is read from its values: only the unfiltered statement is generic
    query = TEMPORAL.start(arm_query(engine, "b", window=WINDOWS[0], tags=["x"]))
    assert query is not None
    assert dict(query.settings) == ENTRY_SETTINGS
