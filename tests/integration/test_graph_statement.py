"""The graph arm's statement drops, before stacking and summing the entity and link scores per
memory, the memories only the entities reach that score at most ``graph_min_score`` (at 100k
most of the ~2,000 reached; they were sorted and grouped only to be dropped): on the real
server it returns the same rows, with the same scores to the bit, in the same order, as without
the pruning, whatever the threshold (a bank with shared entities and
semantic links, seeds from both arms)."""

from __future__ import annotations

import random
import uuid
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg import sql

from shared_core import EngineConfig, MemoryEngine, MemoryItem
from shared_core.recall.arms import ArmQuery, ScoredRow
from shared_core.recall.arms.graph import GRAPH, graph_statement
from shared_core.recall.fusion import ArmHit
from shared_core.recall.settings import RecallSettings
from shared_core.storage.plan import GENERIC_PLAN

_PRUNE = (
    "\n    HAVING sum(m.mass / r.degree ORDER BY m.entity_id, m.src) > %(graph_min)s"
    "\n        OR r.unit_id IN (SELECT unit_id FROM link_scores)"
)


def _unpruned(statement: str) -> str:
    """The statement as it was before the memories the entities reach were pruned."""
    assert statement.count(_PRUNE) == 1
    return statement.replace(_PRUNE, "")


@pytest.fixture(scope="module")
def graph_bank(engine: MemoryEngine) -> tuple[str, list[str]]:
    """600 memories over 40 people and 12 places (two each), vectors in 8 clusters so retain
    draws semantic links between them."""
    rng = random.Random(5)
    people = [f"Person{i:02d} Example" for i in range(40)]
    places = [f"Place{i:02d}" for i in range(12)]
    centres = np.random.default_rng(5).normal(size=(8, 384))
    noise = np.random.default_rng(6).normal(size=(600, 384)) * 0.35
    vectors = centres[np.arange(600) % 8] + noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    items = []
    for i in range(600):
        person, place = rng.choice(people), rng.choice(places)
        items.append(
            MemoryItem(
                text=f"{person} met a friend in {place} (note {i}).",
                entities=[person, place],
                embedding=vectors[i].astype(np.float32).tolist(),
            )
        )
    bank = f"graph-stmt-{uuid.uuid4().hex[:10]}"
    loader = MemoryEngine(engine.dsn, config=EngineConfig(extract_dates=False, extract_entities=False))
    try:
        ids = loader.retain(items, bank=bank, progress=False)
    finally:
        loader.close()
    return bank, ids


def _rows(dsn: str, statement: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        register_vector(conn)
        return conn.execute(statement, params).fetchall()


def _seeded_query(bank: str, ids: list[str], settings: RecallSettings) -> ArmQuery:
    """The graph arm's query in ``bank``: three words, seeded by 20 semantic and 30 keyword hits."""
    return ArmQuery(
        bank=bank,
        vector=np.zeros(384, dtype=np.float32),
        words=("person03", "example", "place07"),
        bigrams=(),
        types=("world", "experience", "observation"),
        tags=None,
        tags_match="any",
        n=300,
        window=None,
        settings=settings,
        prior={
            "semantic": [ArmHit(id=i, score=0.9 - k / 100) for k, i in enumerate(ids[:40:2])],
            "keyword": [ArmHit(id=i, score=5.0 - k / 10) for k, i in enumerate(ids[100:130])],
        },
    )


@pytest.mark.parametrize("graph_min", [0.05, 0.0, -1.0])
def test_pruning_keeps_every_row_score_and_order(
    engine: MemoryEngine, graph_bank: tuple[str, list[str]], graph_min: float
) -> None:
    bank, ids = graph_bank
    query = _seeded_query(bank, ids, RecallSettings(graph_min_score=graph_min))
    start = GRAPH.start(query)
    assert start is not None and start.row_type is ScoredRow
    params = dict(start.params or {})
    joined = graph_statement(query.where_sql, with_entities=True)
    with psycopg.connect(engine.dsn) as conn:
        text = joined.as_string(conn)
    stacked = _unpruned(text)
    got, expected = _rows(engine.dsn, text, params), _rows(engine.dsn, stacked, params)
    if got != expected:
        for st in (text, stacked):
            print("PLAN")
            for r in _rows(engine.dsn, "EXPLAIN (COSTS OFF) " + st, params):
                print(r[0])
    assert got == expected  # ids, scores (float8, compared exactly) and order
    if graph_min < 0:
        assert len(got) > 50


def test_only_the_entity_statement_prunes() -> None:
    assert graph_statement(sql.SQL("TRUE"), with_entities=True).as_string(None).count(_PRUNE) == 1
    assert _PRUNE not in graph_statement(sql.SQL("TRUE"), with_entities=False).as_string(None)


def test_the_generic_plan_returns_the_custom_plans_rows(
    engine: MemoryEngine, graph_bank: tuple[str, list[str]]
) -> None:
    """The arm runs its statement with a generic plan (GENERIC_PLAN): prepared, planned without
    the values, or planned with other join methods, it returns the rows a custom plan does,
    scores compared to the bit."""
    bank, ids = graph_bank
    # graph_min_score -1: every memory reached is kept.
    query = _seeded_query(bank, ids, RecallSettings(graph_min_score=-1.0))
    start = GRAPH.start(query)
    assert start is not None and dict(start.settings) == GENERIC_PLAN
    params = dict(start.params or {})
    rows = {}
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        register_vector(conn)
        for mode in ("force_custom_plan", "force_generic_plan"):
            conn.execute(sql.SQL("SET plan_cache_mode = {}").format(sql.Identifier(mode)))
            rows[mode] = [conn.execute(start.statement, params, prepare=True).fetchall() for _ in range(3)]
        # Other join orders and methods, as other statistics could make the planner pick: the
        # entity terms are summed in one order whatever the plan, so the scores are the same
        # to the bit (they differed in the last bit between plans before the ordered sum).
        conn.execute("SET plan_cache_mode = force_custom_plan")
        for off in (("enable_hashjoin",), ("enable_nestloop",), ("enable_hashjoin", "enable_mergejoin")):
            with conn.transaction():
                for setting in off:
                    conn.execute(sql.SQL("SET LOCAL {} = off").format(sql.Identifier(setting)))
                rows["/".join(off) + " off"] = [conn.execute(start.statement, params).fetchall()]
    custom = rows["force_custom_plan"][0]
    assert len(custom) > 50
    assert all(r == custom for runs in rows.values() for r in runs)
