"""The semantic arm under a filter: when few memories match, it ranks them exactly (a bitmap
scan and a top-n sort) instead of iterating the HNSW graph past rejected rows; otherwise it runs
the HNSW scan of the unfiltered statement, unchanged. A subset of the fact types is a filter
too (the HNSW index holds every type)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row

from shared_core import MemoryEngine, MemoryItem
from shared_core.errors import InvalidOptionError
from shared_core.recall.arms import ArmQuery, semantic, type_clause
from shared_core.recall.arms.semantic import (
    SEMANTIC,
    filter_index_prefix,
    filtered_semantic_rows_statement,
    filtered_semantic_statement,
    semantic_rows_statement,
    semantic_statement,
)
from shared_core.recall.filters import InvalidFilterError
from shared_core.recall.hydrate import MemoryRow
from shared_core.recall.timing import Stopwatch
from shared_core.types import FactType
from tests.integration.arm_banks import TOPICS, arm_query


def _rows(engine: MemoryEngine, statement: psycopg.sql.Composable, q: ArmQuery) -> list[tuple[str, float]]:
    """(id, score) of each row, in the statement's order: the score column of the (id, score)
    statements, the similarity of those reading MemoryRow columns."""
    with psycopg.connect(engine.dsn, row_factory=dict_row) as conn:
        register_vector(conn)
        rows = conn.execute(statement, q.params(semantic_min=-1.0)).fetchall()
    return [(str(r["id"]), float(r["score"] if "score" in r else r["similarity"])) for r in rows]


def test_few_matches_are_ranked_exactly_and_many_take_the_hnsw_scans(engine: MemoryEngine, bank: str) -> None:
    items = [
        MemoryItem(
            text=f"Note {i}: {TOPICS[i % len(TOPICS)]} with friend {i}.",
            fact_type="world" if i % 3 else "experience",
            tags=("odd",) if i % 2 else (),
            metadata={"team": "a" if i % 4 == 0 else "b"},
        )
        for i in range(40)
    ]
    ids = engine.retain(items, bank=bank, progress=False)
    for spec, tags in (({"team": "a"}, None), (None, ["odd"])):
        q = arm_query(engine, bank, spec=spec, tags=tags, n=5)
        statement = filtered_semantic_statement(q.where_sql, q.dimension)
        exact = _rows(engine, statement, q)
        # Expected: every matching memory of each type ranked by cosine, top n per type.
        with psycopg.connect(engine.dsn) as conn:
            register_vector(conn)
            stored = conn.execute(
                "SELECT id::text, fact_type, embedding::vector FROM memory_units WHERE bank_id = %s", (bank,)
            ).fetchall()
        matching = {
            ids[i]
            for i, item in enumerate(items)
            if (spec is None or item.metadata["team"] == "a") and (tags is None or "odd" in item.tags)
        }
        # Expected: the n most similar matching memories of the asked types.
        scored = [
            (str(i), float(np.dot(v, q.vector) / (np.linalg.norm(v) * np.linalg.norm(q.vector))))
            for i, ft, v in stored
            if ft in q.types and str(i) in matching
        ]
        expected = sorted(scored, key=lambda r: -r[1])[: q.n]
        assert [i for i, _ in exact] == [i for i, _ in expected]
        assert {i for i, _ in exact} <= matching
        # Forced onto the HNSW path, the statement returns what the unfiltered statement does.
        ann = _rows(engine, filtered_semantic_statement(q.where_sql, q.dimension, exact_max=0), q)
        plain = _rows(engine, semantic_statement(q.where_sql, q.dimension), q)
        assert sorted(ann) == sorted(plain)
        # A memory scores the same on either path.
        scores = dict(plain)
        assert all(abs(s - scores[i]) < 1e-9 for i, s in exact if i in scores)
        # The statements the arm runs (reading each hit's ranking fields) return the same rows
        # with the same scores, on both paths.
        for cap in (semantic.EXACT_MAX_ROWS, 0):
            whole = _rows(
                engine, filtered_semantic_rows_statement(q.where_sql, q.dimension, exact_max=cap), q
            )
            ranked = _rows(engine, filtered_semantic_statement(q.where_sql, q.dimension, exact_max=cap), q)
            assert sorted(whole) == sorted(ranked) and whole
        assert sorted(_rows(engine, semantic_rows_statement(q.where_sql, q.dimension), q)) == sorted(plain)


def test_the_arm_takes_the_filtered_statement_only_when_something_filters(engine: MemoryEngine) -> None:
    def text(
        spec: dict[str, object] | None, tags: list[str] | None, types: tuple[FactType, ...] = ("world",)
    ) -> str:
        query = SEMANTIC.start(arm_query(engine, "b", spec=spec, tags=tags, n=5, types=types))
        assert query is not None
        statement = str(query.statement.as_string(None))  # type: ignore[union-attr]
        # both statements read their hits' ranking fields (no hydration for them after)
        assert query.row_type is MemoryRow
        return statement

    assert "few" not in text(None, None, ("world", "experience", "observation"))
    assert "few" in text({"team": "a"}, None) and "few" in text(None, ["odd"])
    assert "few" in text(None, None, ("observation",))


def test_one_fact_type_ranks_only_that_type(engine: MemoryEngine, bank: str) -> None:
    items = [
        MemoryItem(
            text=f"Note {i}: {TOPICS[i % len(TOPICS)]}.", fact_type="observation" if i % 5 == 0 else "world"
        )
        for i in range(30)
    ]
    ids = engine.retain(items, bank=bank, progress=False)
    observations = {ids[i] for i, item in enumerate(items) if item.fact_type == "observation"}
    q = arm_query(engine, bank, n=5, types=("observation",))
    query = SEMANTIC.start(q)
    assert query is not None
    found = _rows(engine, query.statement, q)  # type: ignore[arg-type]
    # Six observations among 30 memories, n=5: five of them, all observations.
    assert len(found) == q.n and {i for i, _ in found} <= observations


def test_a_filtered_recall_takes_the_path_the_planner_estimate_picks(
    engine: MemoryEngine, bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = [
        MemoryItem(
            text=f"Note {i}: {TOPICS[i % len(TOPICS)]} with friend {i}.", tags=("odd",) if i % 2 else ()
        )
        for i in range(40)
    ]
    engine.retain(items, bank=bank, progress=False)
    options: dict[str, Any] = {"bank": bank, "tags": ["odd"], "tags_match": "any_strict", "trace": True}
    # More than psycopg's prepare threshold (5): the EXPLAIN also runs as a prepared statement.
    exact = [engine.recall("a walk in the mountains", **options) for _ in range(7)]
    for result in exact:
        assert result.trace is not None and "filter_estimate" in result.trace.timings_ms
        assert not any("planner" in note for note in result.trace.notes)
    q = arm_query(engine, bank, tags=["odd"], n=5)
    estimated = engine.run(SEMANTIC.prepare(q, Stopwatch()))  # type: ignore[misc]
    assert estimated.matching_estimate is not None and estimated.matching_estimate >= 1
    # Told the filter matches more than the cap, the arm runs the HNSW scan at once; in a bank
    # this small the scan finds what the exact ranking found, with the same scores.
    monkeypatch.setattr(semantic, "EXACT_SKIP_ESTIMATE", 0)
    skipped = engine.recall("a walk in the mountains", **options)
    assert skipped.trace is not None
    assert any(note.startswith("semantic: about") for note in skipped.trace.notes)
    assert skipped.trace.arms["semantic"] == exact[0].trace.arms["semantic"]  # type: ignore[union-attr]
    assert [m.id for m in skipped.memories] == [m.id for m in exact[0].memories]


async def test_the_async_recall_estimates_too(engine: MemoryEngine, bank: str) -> None:
    engine.retain(
        [
            MemoryItem(text=f"Note {i}: {TOPICS[i % len(TOPICS)]}.", tags=("odd",) if i % 2 else ())
            for i in range(10)
        ],
        bank=bank,
        progress=False,
    )
    options: dict[str, Any] = {"bank": bank, "tags": ["odd"], "tags_match": "any_strict", "trace": True}
    synced = engine.recall("a walk in the mountains", **options)
    awaited = await engine.arecall("a walk in the mountains", **options)
    assert awaited.trace is not None and "filter_estimate" in awaited.trace.timings_ms
    assert [m.id for m in awaited.memories] == [m.id for m in synced.memories]


def test_a_declared_filter_index_serves_its_filter_only(
    engine: MemoryEngine, bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = [
        MemoryItem(
            text=f"Note {i}: {TOPICS[i % len(TOPICS)]} with friend {i}.",
            tags=("odd",) if i % 2 else (),
            metadata={"team": "a" if i % 4 == 0 else "b"},
        )
        for i in range(60)
    ]
    ids = engine.retain(items, bank=bank, progress=False)
    # Whether the planner walks the declared index depends on its statistics of the table,
    # which other tests' banks share: statistics taken before these rows existed (a test that
    # ran ANALYZE earlier in the session) made it pick another plan. Autovacuum would refresh
    # them in a real bank; here they are refreshed at once.
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        conn.execute("ANALYZE memory_units")
    team_a = {ids[i] for i, item in enumerate(items) if item.metadata["team"] == "a"}
    options: dict[str, Any] = {"bank": bank, "filter": {"team": "a"}, "trace": True}
    exact = engine.recall("a walk in the mountains", **options)
    assert exact.trace is not None and not any("declared" in note for note in exact.trace.notes)
    name = engine.declare_filter_index(bank=bank, filter={"team": "a"})
    assert name.startswith(filter_index_prefix(bank))
    # Declaring it again names the same index and builds nothing.
    assert engine.declare_filter_index(bank=bank, filter={"team": "a"}) == name
    # 15 matches: too few for the arm to ask the planner about indexes.
    narrow = engine.recall("a walk in the mountains", **options)
    assert narrow.trace is not None and not any("declared" in note for note in narrow.trace.notes)
    monkeypatch.setattr(semantic, "FILTER_INDEX_MIN_ESTIMATE", 0)
    walked = engine.recall("a walk in the mountains", **options)
    assert walked.trace is not None
    assert f"semantic: the filter's declared index {name}: HNSW scan" in walked.trace.notes
    # In a bank this small the walk finds what the exact ranking found, with the same scores.
    assert walked.trace.arms["semantic"] == exact.trace.arms["semantic"]
    assert [m.id for m in walked.memories] == [m.id for m in exact.memories]
    assert {m.id for m in walked.memories} <= team_a
    # Another value, tags, or another bank: the planner cannot prove the index's predicate.
    for other in ({"filter": {"team": "b"}}, {"tags": ["odd"], "tags_match": "any_strict"}):
        kept = engine.recall("a walk in the mountains", bank=bank, trace=True, **other)
        assert kept.trace is not None and not any("declared" in note for note in kept.trace.notes)
    elsewhere = engine.recall("a walk in the mountains", **{**options, "bank": f"{bank}-other"})
    assert elsewhere.trace is not None and not any("declared" in note for note in elsewhere.trace.notes)
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        conn.execute(psycopg.sql.SQL("DROP INDEX {}").format(psycopg.sql.Identifier(name)))


async def test_declaring_a_filter_index_checks_its_options_first(engine: MemoryEngine, bank: str) -> None:
    with pytest.raises(InvalidFilterError):
        engine.declare_filter_index(bank=bank, filter={"team": {"$near": 1}})
    with pytest.raises(InvalidOptionError, match="tags_match"):
        await engine.adeclare_filter_index(bank=bank, tags=["x"], tags_match="some")  # type: ignore[arg-type]
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        declared = conn.execute(
            "SELECT count(*) FROM pg_class WHERE starts_with(relname, %s)", [filter_index_prefix(bank)]
        ).fetchone()
    assert declared == (0,)
    name = await engine.adeclare_filter_index(bank=bank, tags=["odd"], tags_match="any_strict")
    assert name.startswith(filter_index_prefix(bank))
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        conn.execute(psycopg.sql.SQL("DROP INDEX {}").format(psycopg.sql.Identifier(name)))


def test_a_broad_filter_walk_returns_only_the_filters_memories_of_the_bank(
    engine: MemoryEngine, bank: str
) -> None:
    """The walk of the bank's HNSW index under a broad filter (forced here: a small bank's
    estimate is below any real threshold) fetches fewer semantic hits, never other memories:
    every memory it returns matches the filter and belongs to the bank, as on the exact path,
    and in a bank this small (the walk is exact) its hits are the exact path's first ones."""
    other = f"{bank}-other"

    def items(team: str) -> list[MemoryItem]:
        return [
            MemoryItem(
                text=f"Note {i}: {TOPICS[i % len(TOPICS)]} with friend {i}.",
                tags=("odd",) if i % 2 else (),
                metadata={"team": team if i % 3 else "z", "year": 2020 + i % 6},
            )
            for i in range(60)
        ]

    ids = engine.retain(items("a"), bank=bank, progress=False)
    engine.retain(items("a"), bank=other, progress=False)  # the same texts and metadata
    stored = items("a")
    original = engine.recall_settings
    cases: list[tuple[dict[str, Any], Any]] = [
        ({"filter": {"team": "a"}}, lambda it: it.metadata["team"] == "a"),
        (
            {"filter": {"$and": [{"team": "a"}, {"year": {"$gte": 2023}}]}},
            lambda it: it.metadata["team"] == "a" and it.metadata["year"] >= 2023,
        ),
        ({"tags": ["odd"], "tags_match": "any_strict"}, lambda it: "odd" in it.tags),
    ]
    try:
        for options, match in cases:
            allowed = {ids[i] for i, it in enumerate(stored) if match(it)}
            results = {}
            for name, floor in (("walk", 0), ("exact", None)):
                engine.recall_settings = dataclasses.replace(
                    original, filter_walk_min_estimate=floor, filter_walk_hits=5
                )
                results[name] = engine.recall(
                    "a walk in the mountains", bank=bank, budget="low", trace=True, **options
                )
            walk, exact = results["walk"], results["exact"]
            assert walk.trace is not None and exact.trace is not None
            assert any("HNSW scan of the top" in n for n in walk.trace.notes)
            assert not any("HNSW scan" in n for n in exact.trace.notes)
            for result in (walk, exact):
                returned = {m.id for m in result.memories}
                assert returned and returned <= allowed, options
            semantic_walk = [i for i, _ in walk.trace.arms["semantic"]]
            semantic_exact = [i for i, _ in exact.trace.arms["semantic"]]
            # budget low: n = 100, so the walk fetches max(5, 33) = 33 hits
            assert len(semantic_walk) == min(33, len(semantic_exact))
            assert set(semantic_walk) <= allowed
            assert semantic_walk == semantic_exact[: len(semantic_walk)]
    finally:
        engine.recall_settings = original


def test_every_type_asked_leaves_the_type_test_out_and_keeps_the_same_rows(
    engine: MemoryEngine, bank: str
) -> None:
    """With every fact type asked, the exact read drops its ``fact_type`` test (the column's
    CHECK constraint admits those types only; the planner's estimate of the test made it
    intersect a bitmap of the bank's whole type index): the statement returns the rows the
    typed statement returns, under each filter operator, from the asked bank only."""
    other = f"{bank}-other"
    items = [
        MemoryItem(
            text=f"Note {i}: {TOPICS[i % len(TOPICS)]} with friend {i}.",
            fact_type=("world", "experience", "observation")[i % 3],
            tags=("odd",) if i % 2 else (),
            metadata={"team": "a" if i % 4 == 0 else "b", "year": 2020 + i % 6, "pet": ["cat", "dog"][i % 2]},
        )
        for i in range(48)
    ]
    engine.retain(items, bank=bank, progress=False)
    # The same memories in another bank: a recall never crosses banks.
    foreign = set(engine.retain(items, bank=other, progress=False))
    every: tuple[FactType, ...] = ("world", "experience", "observation")
    specs: list[tuple[dict[str, object] | None, list[str] | None]] = [
        ({"team": "a"}, None),
        ({"team": {"$ne": "a"}}, None),
        ({"team": {"$in": ["a", "c"]}}, None),
        ({"team": {"$nin": ["a"]}}, None),
        ({"year": {"$gte": 2023}}, None),
        ({"year": {"$lt": 2022}}, None),
        ({"year": {"$between": [2021, 2024]}}, None),
        ({"pet": {"$exists": True}}, None),
        ({"$and": [{"team": "b"}, {"year": {"$gt": 2021}}]}, None),
        ({"$or": [{"team": "a"}, {"pet": "cat"}]}, None),
        ({"$not": {"team": "a"}}, None),
        ({"pet": {"$like": "c%"}}, None),
        ({"pet": {"$ilike": "D%"}}, None),
        (None, ["odd"]),
        ({"team": "b"}, ["odd"]),
    ]
    for spec, tags in specs:
        q = arm_query(engine, bank, spec=spec, tags=tags, n=50, types=every)
        untyped = filtered_semantic_rows_statement(q.where_sql, q.dimension, types=type_clause(q))
        assert "fact_type" not in untyped.as_string(None).split("few AS")[0], spec
        typed = filtered_semantic_rows_statement(q.where_sql, q.dimension)
        rows = _rows(engine, untyped, q)
        assert rows == _rows(engine, typed, q), spec
        assert rows and not {i for i, _ in rows} & foreign, spec
    # The arm itself: every type asked, the untyped head; a subset keeps the test.
    for types, typed_head in ((every, False), (("world", "experience"), True)):
        q = arm_query(engine, bank, spec={"team": "a"}, n=50, types=types)
        head = SEMANTIC.start(q)
        assert head is not None
        matching = str(head.statement.as_string(None)).split("few AS")[0]  # type: ignore[union-attr]
        assert ("fact_type" in matching) is typed_head


def test_the_declared_index_question_finds_exactly_the_banks_own_index_names(
    engine: MemoryEngine, bank: str
) -> None:
    """The question every filtered recall asks in its estimate's round trip (does the bank hold
    a declared index?) reads pg_class through its name index within the prefix's range: an index
    named with the bank's prefix counts, and no other name does, however close it sorts (the
    prefix without its last character, the first name past the range, another bank's prefix,
    a table rather than an index)."""
    params = semantic.declared_params(bank)
    prefix = params["prefix"]
    other = semantic.filter_index_prefix(f"{bank}-other")

    def asks(conn: psycopg.Connection[Any], for_bank: str) -> bool:
        row = conn.execute(semantic._DECLARED, semantic.declared_params(for_bank)).fetchone()
        assert row is not None
        return bool(row[0])

    with psycopg.connect(engine.dsn) as conn:  # one transaction, rolled back: nothing stays
        conn.execute("CREATE TEMP TABLE declared_names (x int)")
        plan = "\n".join(
            str(r[0])
            for r in conn.execute(psycopg.sql.SQL("EXPLAIN {}").format(semantic._DECLARED), params).fetchall()
        )
        assert "pg_class_relname_nsp_index" in plan
        near = (prefix[:-1], params["past"], params["past"] + "0", prefix[:-1] + "^zz", other + "0a")
        for name in near:
            conn.execute(
                psycopg.sql.SQL("CREATE INDEX {} ON declared_names (x)").format(psycopg.sql.Identifier(name))
            )
        conn.execute(psycopg.sql.SQL("CREATE TABLE {} (x int)").format(psycopg.sql.Identifier(prefix + "t")))
        assert not asks(conn, bank)
        assert asks(conn, f"{bank}-other")
        conn.execute(
            psycopg.sql.SQL("CREATE INDEX {} ON declared_names (x)").format(
                psycopg.sql.Identifier(prefix + "0123456789abcdef")
            )
        )
        assert asks(conn, bank)
        conn.rollback()
