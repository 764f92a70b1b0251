"""The temporal arm under a tag or metadata filter: when few memories pass the filter, the
dated evidence of a "when" question and a broad window's entry points are ranked exactly among
them (the semantic arm's capped head) instead of by an HNSW scan walking past the rejected rows;
otherwise the statements run their HNSW scans, unchanged. An unfiltered recall runs the
statements it always ran."""

from __future__ import annotations

import datetime as dt

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from shared_core import MemoryEngine, MemoryItem
from shared_core.recall.arms import ArmQuery
from shared_core.recall.arms.temporal import (
    TEMPORAL,
    dated_evidence_statement,
    filtered_dated_evidence_statement,
    filtered_temporal_entry_statement,
    temporal_entry_statement,
)
from shared_core.types import TimeWindow
from tests.integration.arm_banks import arm_query, dated_notes, entry_rows, inside

UTC = dt.UTC
# A window holding most of the bank (broad) and one holding a month (narrow).
BROAD = TimeWindow(start=dt.datetime(2023, 1, 1, tzinfo=UTC), end=dt.datetime(2024, 12, 31, tzinfo=UTC))
NARROW = TimeWindow(
    start=dt.datetime(2023, 3, 1, tzinfo=UTC), end=dt.datetime(2023, 3, 31, 23, 59, tzinfo=UTC)
)


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


def _passes(item: MemoryItem, spec: dict[str, object] | None, tags: list[str] | None) -> bool:
    return (spec is None or item.metadata["team"] == spec["team"]) and (tags is None or "odd" in item.tags)


CASES: list[tuple[dict[str, object] | None, list[str] | None]] = [({"team": "a"}, None), (None, ["odd"])]


def test_dated_evidence_under_a_filter_is_the_exact_top_n(engine: MemoryEngine, bank: str) -> None:
    items = dated_notes()
    ids = engine.retain(items, bank=bank, progress=False)
    for spec, tags in CASES:
        q = arm_query(engine, bank, spec=spec, tags=tags, n=5, asks_when=True)
        dated = {
            ids[i]
            for i, item in enumerate(items)
            if item.occurred_start is not None and _passes(item, spec, tags)
        }
        exact = entry_rows(engine, filtered_dated_evidence_statement(q.where_sql, q.dimension), q.params())
        truth = _truth(engine, bank, q, dated, q.n)
        # In order, best first, the true top n of the dated memories the filter lets through.
        assert [r[0] for r in exact] == [i for i, _ in truth]
        assert all(abs(r[1] - s) < 1e-6 for r, (_, s) in zip(exact, truth, strict=True))
        # Forced onto the HNSW path, the statement returns the unfiltered form's rows; a memory
        # scores the same and carries the same dates on either path.
        ann = entry_rows(
            engine, filtered_dated_evidence_statement(q.where_sql, q.dimension, exact_max=0), q.params()
        )
        plain = entry_rows(engine, dated_evidence_statement(q.where_sql, q.dimension), q.params())
        assert ann == plain
        by_id = {r[0]: r for r in plain}
        assert all(r == by_id[r[0]] for r in exact if r[0] in by_id)
        assert all(r[2] is not None for r in exact)  # every one states its date


def test_a_broad_window_under_a_filter_is_ranked_exactly(engine: MemoryEngine, bank: str) -> None:
    items = dated_notes()
    ids = engine.retain(items, bank=bank, progress=False)
    for spec, tags in CASES:
        for window in (BROAD, NARROW):
            q = arm_query(engine, bank, spec=spec, tags=tags, window=window)
            params = q.params(wstart=window.start, wend=window.end, pool=7)
            in_window = {
                ids[i] for i, item in enumerate(items) if inside(item, window) and _passes(item, spec, tags)
            }
            truth = _truth(engine, bank, q, in_window, 7)
            # The window taken as broad (its exact branch off): the filter's exact branch.
            broad = entry_rows(
                engine, filtered_temporal_entry_statement(q.where_sql, q.dimension, exact_max=0), params
            )
            assert sorted(r[0] for r in broad) == sorted(i for i, _ in truth)
            # The window's own exact branch (narrow enough) as the statement without the filter's.
            narrow = entry_rows(engine, filtered_temporal_entry_statement(q.where_sql, q.dimension), params)
            assert narrow == entry_rows(engine, temporal_entry_statement(q.where_sql, q.dimension), params)
            assert sorted(r[0] for r in narrow) == sorted(i for i, _ in truth)
            # Both branches off: the former HNSW scan, unchanged.
            ann = entry_rows(
                engine,
                filtered_temporal_entry_statement(q.where_sql, q.dimension, exact_max=0, filter_max=0),
                params,
            )
            assert ann == entry_rows(
                engine, temporal_entry_statement(q.where_sql, q.dimension, exact_max=0), params
            )
            # A memory scores the same and carries the same dates on every branch.
            rows = {r[0]: r for r in narrow + ann}
            assert all(r == rows[r[0]] for r in broad if r[0] in rows)


def test_the_arm_takes_the_filtered_statements_only_under_a_filter(engine: MemoryEngine) -> None:
    def text(spec: dict[str, object] | None, tags: list[str] | None, window: TimeWindow | None) -> str:
        query = TEMPORAL.start(
            arm_query(engine, "b", spec=spec, tags=tags, window=window, asks_when=window is None)
        )
        assert query is not None
        return str(query.statement.as_string(None))  # type: ignore[union-attr]

    for window in (None, BROAD):
        assert "few AS" not in text(None, None, None) and "ffew" not in text(None, None, window)
        assert "few AS" in text({"team": "a"}, None, window) and "few AS" in text(None, ["odd"], window)
    assert "ffew" in text({"team": "a"}, None, BROAD)


def test_a_filtered_when_question_recalls_the_exact_dated_evidence(engine: MemoryEngine, bank: str) -> None:
    items = dated_notes()
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
