"""Retain's stored-neighbour search (the semantic links to memories already stored) goes
through the dimension's HNSW index whatever the statistics say.

The statistics never know the rows of a bank that is being loaded: a ``retain_bulk`` writes
every batch in one transaction, so autovacuum's ANALYZE cannot see them, and a new bank has
none until it runs. With such estimates the planner preferred a bitmap scan of the whole bank
and a sort for every new unit (exact, and 40-60x slower at 10k memories: 14.9 s against 0.25 s
for a batch of 1,000), so which links were stored depended on when the table was last
analysed (retain/links.py ``semantic_neighbours_query``).
"""

from __future__ import annotations

import json
from typing import Any

from psycopg import sql

from shared_core import MemoryEngine
from shared_core.retain.links import semantic_neighbours_query
from shared_core.storage.dimensions import Dimension
from shared_core.storage.plan import Plan, Query


def _plan_nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = [plan]
    for child in plan.get("Plans", []):
        nodes += _plan_nodes(child)
    return nodes


def _explain(query: Query) -> Plan[list[dict[str, Any]]]:
    explained = Query(
        sql.SQL("EXPLAIN (FORMAT JSON) ") + query.statement,
        query.params,
        fetch="one",
        settings=query.settings,
    )
    row: dict[str, Any] = yield explained
    value = row["QUERY PLAN"]
    doc = json.loads(value) if isinstance(value, str) else value
    return _plan_nodes(doc[0]["Plan"])


# Rows of a bank being loaded, written in the test's transaction: ANALYZE cannot see them.
LOAD_BANK = """
INSERT INTO banks (bank_id, embedding_model, embedding_dimension)
VALUES (%(bank)s, 'test', 384)"""
LOAD_UNITS = """
INSERT INTO memory_units (bank_id, id, text, embedding, fact_type, mentioned_at, search_vector)
SELECT %(bank)s, gen_random_uuid(), 'memory ' || i,
       (SELECT array_agg(sin(i * 7.0 + d))::vector FROM generate_series(1, 384) AS d),
       'world', now(), to_tsvector('simple', 'memory')
FROM generate_series(1, %(n)s) AS i
RETURNING id"""


def _loading_bank_plan(bank: str, n: int) -> Plan[list[dict[str, Any]]]:
    yield Query(LOAD_BANK, {"bank": bank}, fetch="none")
    rows: list[dict[str, Any]] = yield Query(LOAD_UNITS, {"bank": bank, "n": n})
    new = [r["id"] for r in rows[-n // 10 :]]  # the last tenth: "this batch"
    query = semantic_neighbours_query(bank, new, Dimension(384), k=20, min_similarity=0.7)
    return (yield from _explain(query))


def test_stored_neighbours_of_a_bank_the_statistics_do_not_know_use_the_hnsw_index(
    engine: MemoryEngine, bank: str
) -> None:
    nodes = engine.run(_loading_bank_plan(bank, 3000))
    scans = {(n["Node Type"], n.get("Index Name")) for n in nodes if "Scan" in n["Node Type"]}
    assert ("Index Scan", "memory_units_embedding_d384") in scans, scans
    # Nothing reads the bank's rows to sort them by distance (the plan of stale statistics).
    assert not [n for n in nodes if n["Node Type"] in ("Sort", "Incremental Sort")], scans
