"""The temporal arm under a tag or metadata filter: when few memories pass the filter, the
dated evidence of a "when" question and a broad window's entry points are ranked exactly among
them (the semantic arm's capped head) instead of by an HNSW scan walking past the rejected rows;
otherwise the statements run their HNSW scans, unchanged. An unfiltered recall runs the
statements it always ran."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from shared_core import MemoryEngine, MemoryItem
from shared_core.recall.arms import ArmQuery
from shared_core.recall.arms.temporal import (
    ENTRY_SETTINGS,
    TEMPORAL,
    dated_evidence_statement,
    filtered_dated_evidence_statement,
    filtered_temporal_entry_statement,
    temporal_entry_statement,
)
from shared_core.recall.filters import compile_filter
from shared_core.recall.settings import RecallSettings
from shared_core.types import TimeWindow

UTC = dt.UTC
START = dt.datetime(2023, 1, 1, tzinfo=UTC)
TOPICS = ["hiking in the alps", "a pottery class", "the quarterly budget", "a new puppy", "jazz concerts"]
# A window holding most of the bank (broad) and one holding a month (narrow).
BROAD = TimeWindow(start=dt.datetime(2023, 1, 1, tzinfo=UTC), end=dt.datetime(2024, 12, 31, tzinfo=UTC))
NARROW = TimeWindow(
    start=dt.datetime(2023, 3, 1, tzinfo=UTC), end=dt.datetime(2023, 3, 31, 23, 59, tzinfo=UTC)
)


def _items() -> list[MemoryItem]:
    """Memories a week apart over two years: dated by a day, spanning a month, or only said
    at a time (undated: not dated evidence); a fifth of them in team "a", every third tagged."""
    items = []
    for i in range(90):
        day = START + dt.timedelta(days=8 * i, hours=i % 24)
        kind = i % 3
        items.append(
            MemoryItem(
                text=f"Note {i}: {TOPICS[i % len(TOPICS)]} with friend {i}.",
                fact_type="experience" if i % 4 == 0 else "world",
                occurred_start=day if kind < 2 else None,
                occurred_end=day + dt.timedelta(days=30) if kind == 1 else None,
                mentioned_at=day + dt.timedelta(days=2),
                tags=("odd",) if i % 3 == 1 else (),
                metadata={"team": "a" if i % 5 == 0 else "b"},
            )
        )
    return items


def _query(
    engine: MemoryEngine,
    bank: str,
    spec: dict[str, object] | None,
    tags: list[str] | None,
    window: TimeWindow | None = None,
    n: int = 20,
) -> ArmQuery:
    return ArmQuery(
        bank=bank,
        vector=np.asarray(engine.embedder.embed_query("a walk in the mountains"), dtype=np.float32),
        words=(),
        bigrams=(),
        types=("world", "experience"),
        tags=tuple(tags) if tags else None,
        tags_match="any_strict" if tags else "any",
        n=n,
        window=window,
        settings=RecallSettings(),
        filter=compile_filter(spec),
        asks_when=window is None,
    )


def _rows(engine: MemoryEngine, statement: sql.Composed, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(id, similarity, dates...) of each row, in the statement's order."""
    with psycopg.connect(engine.dsn) as conn:
        register_vector(conn)
        for name, value in ENTRY_SETTINGS.items():
            conn.execute("SELECT set_config(%s, %s, true)", (name, value))
        rows = conn.execute(statement, params).fetchall()
    return [(str(r[0]), float(r[1]), *r[2:]) for r in rows]


def _truth(
    engine: MemoryEngine, bank: str, q: ArmQuery, keep: set[str], limit: int
) -> list[tuple[str, float]]:
    """The ``limit`` memories of ``keep`` (and of the query's types) most similar to the
    query, computed here."""
    with psycopg.connect(engine.dsn) as conn:
        register_vector(conn)
        stored = conn.execute(
            "SELECT id::text, fact_type, embedding::vector FROM memory_units WHERE bank_id = %s", (bank,)
        ).fetchall()
    scored = [
        (i, float(np.dot(v, q.vector) / (np.linalg.norm(v) * np.linalg.norm(q.vector))))
        for i, ft, v in stored
        if ft in q.types and i in keep
    ]
    return sorted(scored, key=lambda r: (-r[1], r[0]))[:limit]


def _inside(item: MemoryItem, window: TimeWindow) -> bool:
    said = item.mentioned_at is not None and window.start <= item.mentioned_at <= window.end
    if item.occurred_start is None:
        return said
    end = item.occurred_end or item.occurred_start
    return said or (item.occurred_start <= window.end and end >= window.start)


def _passes(item: MemoryItem, spec: dict[str, object] | None, tags: list[str] | None) -> bool:
    return (spec is None or item.metadata["team"] == spec["team"]) and (tags is None or "odd" in item.tags)


CASES: list[tuple[dict[str, object] | None, list[str] | None]] = [({"team": "a"}, None), (None, ["odd"])]


def test_dated_evidence_under_a_filter_is_the_exact_top_n(engine: MemoryEngine, bank: str) -> None:
    items = _items()
    ids = engine.retain(items, bank=bank, progress=False)
    for spec, tags in CASES:
        q = _query(engine, bank, spec, tags, n=5)
        dated = {
            ids[i]
            for i, item in enumerate(items)
            if item.occurred_start is not None and _passes(item, spec, tags)
        }
        exact = _rows(engine, filtered_dated_evidence_statement(q.where_sql, q.dimension), q.params())
        truth = _truth(engine, bank, q, dated, q.n)
        # In order, best first, the true top n of the dated memories the filter lets through.
        assert [r[0] for r in exact] == [i for i, _ in truth]
        assert all(abs(r[1] - s) < 1e-6 for r, (_, s) in zip(exact, truth, strict=True))
        # Forced onto the HNSW path, the statement returns the unfiltered form's rows; a memory
        # scores the same and carries the same dates on either path.
        ann = _rows(
            engine, filtered_dated_evidence_statement(q.where_sql, q.dimension, exact_max=0), q.params()
        )
        plain = _rows(engine, dated_evidence_statement(q.where_sql, q.dimension), q.params())
        assert ann == plain
        by_id = {r[0]: r for r in plain}
        assert all(r == by_id[r[0]] for r in exact if r[0] in by_id)
        assert all(r[2] is not None for r in exact)  # every one states its date


def test_a_broad_window_under_a_filter_is_ranked_exactly(engine: MemoryEngine, bank: str) -> None:
    items = _items()
    ids = engine.retain(items, bank=bank, progress=False)
    for spec, tags in CASES:
        for window in (BROAD, NARROW):
            q = _query(engine, bank, spec, tags, window)
            params = q.params(wstart=window.start, wend=window.end, pool=7)
            inside = {
                ids[i] for i, item in enumerate(items) if _inside(item, window) and _passes(item, spec, tags)
            }
            truth = _truth(engine, bank, q, inside, 7)
            # The window taken as broad (its exact branch off): the filter's exact branch.
            broad = _rows(
                engine, filtered_temporal_entry_statement(q.where_sql, q.dimension, exact_max=0), params
            )
            assert sorted(r[0] for r in broad) == sorted(i for i, _ in truth)
            # The window's own exact branch (narrow enough) as the statement without the filter's.
            narrow = _rows(engine, filtered_temporal_entry_statement(q.where_sql, q.dimension), params)
            assert narrow == _rows(engine, temporal_entry_statement(q.where_sql, q.dimension), params)
            assert sorted(r[0] for r in narrow) == sorted(i for i, _ in truth)
            # Both branches off: the former HNSW scan, unchanged.
            ann = _rows(
                engine,
                filtered_temporal_entry_statement(q.where_sql, q.dimension, exact_max=0, filter_max=0),
                params,
            )
            assert ann == _rows(
                engine, temporal_entry_statement(q.where_sql, q.dimension, exact_max=0), params
            )
            # A memory scores the same and carries the same dates on every branch.
            rows = {r[0]: r for r in narrow + ann}
            assert all(r == rows[r[0]] for r in broad if r[0] in rows)


def test_the_arm_takes_the_filtered_statements_only_under_a_filter(engine: MemoryEngine) -> None:
    def text(spec: dict[str, object] | None, tags: list[str] | None, window: TimeWindow | None) -> str:
        query = TEMPORAL.start(_query(engine, "b", spec, tags, window))
        assert query is not None
        return str(query.statement.as_string(None))  # type: ignore[union-attr]

    for window in (None, BROAD):
        assert "few AS" not in text(None, None, None) and "ffew" not in text(None, None, window)
        assert "few AS" in text({"team": "a"}, None, window) and "few AS" in text(None, ["odd"], window)
    assert "ffew" in text({"team": "a"}, None, BROAD)


def test_a_filtered_when_question_recalls_the_exact_dated_evidence(engine: MemoryEngine, bank: str) -> None:
    items = _items()
    ids = engine.retain(items, bank=bank, progress=False)
    result = engine.recall(
        "When did I go on a walk in the mountains?", bank=bank, filter={"team": "a"}, trace=True, k=5
    )
    assert result.trace is not None
    team = {ids[i] for i, item in enumerate(items) if item.metadata["team"] == "a"}
    assert {m.id for m in result.memories} <= team and result.memories
    found = [i for i, _ in result.trace.arms["temporal"]]
    dated = {ids[i] for i, item in enumerate(items) if item.occurred_start is not None} & team
    assert found and set(found) <= dated
