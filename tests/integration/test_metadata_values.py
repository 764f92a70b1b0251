"""Migration 0018: ``metadata_values`` (the values under each top-level metadata key of a bank)
stays in step with the memories through retain, document replacement, delete and metadata
updates; a filter in the arms' form (``range_values_plan``: ranges also tested against the values
that pass them, tests no index serves kept out of index scans) selects the same memories as the
filter as compiled, and recall returns the same memories with it as without it."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from shared_core import MemoryEngine, MemoryItem
from shared_core.recall import filters
from shared_core.recall.arms import semantic
from shared_core.recall.filters import (
    RANGE_VALUES_MAX,
    compile_filter,
    range_conditions,
    range_values_plan,
)

METADATA: list[dict[str, Any]] = [
    {"year": 2021, "team": "er", "when": "2021-03-04", "score": 0.5},
    {"year": 2023, "team": "icu", "when": "2023-01-01", "tags": ["a", "b", 7]},
    {"year": "2022", "team": "er", "nested": {"x": 3, "deep": [{"y": "z"}]}},
    {"year": 2024.5, "flag": True, "none": None, "when": "2024-12-31T10:00:00"},
    {"year": [2020, [2026]], "long": "x" * 400},
    {},
]


def _leaves(value: Any) -> Iterator[Any]:
    """Every number and string at or below ``value`` (what 0018 counts under a key)."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        yield value


def _expected(metadatas: list[dict[str, Any]]) -> Counter[tuple[str, str]]:
    """(key, canonical JSON of the value) -> memories, computed in Python."""
    counts: Counter[tuple[str, str]] = Counter()
    for meta in metadatas:
        seen = set()
        for key, value in meta.items():
            for leaf in _leaves(value):
                text = json.dumps(leaf)
                seen.add((key, '{"long": true}' if len(text.encode()) > 258 else text))
        counts.update(seen)
    return counts


def _stored(engine: MemoryEngine, bank: str) -> Counter[tuple[str, str]]:
    with psycopg.connect(engine.dsn) as conn:
        rows = conn.execute(
            "SELECT key, value, memories FROM metadata_values WHERE bank_id = %s AND memories > 0", (bank,)
        ).fetchall()
    # Canonical JSON on both sides (jsonb prints 2024.5 and "x" as json.dumps does).
    return Counter({(key, json.dumps(value)): n for key, value, n in rows})


def _items(metadatas: list[dict[str, Any]], prefix: str) -> list[MemoryItem]:
    return [MemoryItem(text=f"{prefix} note number {i}", metadata=m) for i, m in enumerate(metadatas)]


def test_values_follow_retain_replace_update_and_delete(engine: MemoryEngine, bank: str) -> None:
    ids = engine.retain(_items(METADATA, "plain"), bank=bank)
    engine.retain(_items(METADATA[:3], "doc"), bank=bank, document_id="doc-1")
    assert _stored(engine, bank) == _expected(METADATA + METADATA[:3])

    # Re-adding the document replaces its memories: their old values go, the new ones come.
    engine.retain(_items(METADATA[3:5], "doc v2"), bank=bank, document_id="doc-1")
    assert _stored(engine, bank) == _expected(METADATA + METADATA[3:5])

    engine.delete(ids[:2], bank=bank)
    assert _stored(engine, bank) == _expected(METADATA[2:] + METADATA[3:5])

    # A user's own UPDATE of metadata (the memory stream rewrites it too).
    with psycopg.connect(engine.dsn) as conn:
        conn.execute(
            "UPDATE memory_units SET metadata = %s::jsonb WHERE bank_id = %s AND id = %s::uuid",
            (json.dumps({"year": 1999}), bank, ids[2]),
        )
    assert _stored(engine, bank) == _expected([{"year": 1999}, *METADATA[3:], *METADATA[3:5]])

    engine.delete(document_id="doc-1", bank=bank)
    engine.delete(ids[2:], bank=bank)
    assert _stored(engine, bank) == Counter()


def test_a_dropped_bank_takes_its_values(engine: MemoryEngine, bank: str) -> None:
    engine.retain(_items(METADATA, "gone"), bank=bank)
    with psycopg.connect(engine.dsn) as conn:
        conn.execute("DELETE FROM banks WHERE bank_id = %s", (bank,))
        row = conn.execute("SELECT count(*) FROM metadata_values WHERE bank_id = %s", (bank,)).fetchone()
    assert row == (0,)


RANGES: list[dict[str, Any]] = [
    {"team": {"$ne": "er"}},
    {"team": {"$nin": ["er", "x"]}},
    {"team": {"$nin": []}},
    {"flag": {"$exists": True}},
    {"flag": {"$exists": False}},
    {"$not": {"team": {"$ne": "icu"}}},
    {"tags": {"$in": ["a", 7]}},
    {"year": {"$gte": 2022}},
    {"year": {"$gt": 2021, "$lt": 2024}},
    {"year": {"$lte": 2021}},
    {"year": {"$between": [2020, 2023]}},
    {"year": {"$gte": "2022"}},
    {"year": {"$gt": 3000}},
    {"when": {"$gte": "2023-01-01"}},
    {"when": {"$lt": "2024"}},
    {"when": {"$between": ["2021", "2023-06"]}},
    {"score": {"$lt": 1}},
    {"tags": {"$gte": 5}},
    {"tags": {"$gte": "b"}},
    {"nested.x": {"$gt": 2}},
    {"nested.deep.y": {"$gte": "a"}},
    {"long": {"$gte": "x"}},
    {"$or": [{"team": "icu"}, {"year": {"$gt": 2023}}]},
    {"$and": [{"team": "er"}, {"year": {"$gte": 2021}}]},
    {"$not": {"year": {"$gte": 2022}}},
    {"missing": {"$gt": 0}},
]


def _matching(conn: psycopg.Connection[Any], bank: str, compiled: filters.CompiledFilter) -> set[str]:
    statement = sql.SQL("SELECT u.id::text FROM memory_units u WHERE u.bank_id = %(bank)s AND {}").format(
        compiled.clause
    )
    return {row[0] for row in conn.execute(statement, {"bank": bank, **compiled.params}).fetchall()}


@pytest.mark.parametrize("spec", RANGES, ids=[json.dumps(r) for r in RANGES])
def test_a_rewritten_range_selects_the_same_memories(
    engine: MemoryEngine, bank: str, spec: dict[str, Any]
) -> None:
    engine.retain(_items(METADATA, "range"), bank=bank)
    plain = compile_filter(spec)
    rewritten = engine.run(range_values_plan(bank, plain))
    with psycopg.connect(engine.dsn) as conn:
        assert _matching(conn, bank, rewritten) == _matching(conn, bank, plain)
    left_as_is = ({"long": {"$gte": "x"}},)
    if range_conditions(plain.tree) and spec not in left_as_is:
        # given its index-served test (or FALSE: no value passes)
        served = "@ ==" in str(rewritten.params) or "FALSE" in rewritten.clause.as_string()
        assert rewritten.indexed and served


def test_ranges_over_too_many_values_or_long_values_are_left_as_they_were(
    engine: MemoryEngine, bank: str
) -> None:
    engine.retain(
        [MemoryItem(text=f"counter {i}", metadata={"n": i}) for i in range(RANGE_VALUES_MAX + 2)], bank=bank
    )
    engine.retain(_items(METADATA, "long"), bank=bank)
    for spec in ({"n": {"$gte": 0}}, {"long": {"$gte": "x"}}):
        rewritten = engine.run(range_values_plan(bank, compile_filter(spec)))
        assert rewritten.indexed  # the range is a recheck (kept out of index scans) ...
        assert not any("@ ==" in str(v) for v in rewritten.params.values())  # ... and nothing more
    narrow = engine.run(range_values_plan(bank, compile_filter({"n": {"$lt": 3}})))
    assert '$."n" ? (@ == 0 || @ == 1 || @ == 2)' in narrow.params.values()
    # Already in the arms' form, or nothing to change: returned as is.
    assert engine.run(range_values_plan(bank, narrow)) is narrow
    equality = compile_filter({"n": 3})
    assert engine.run(range_values_plan(bank, equality)) is equality


def test_recall_with_a_range_filter_returns_the_same_memories(
    engine: MemoryEngine, bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    topics = ["hiking in the alps", "a pottery class", "the quarterly budget", "a new puppy"]
    engine.retain(
        [
            MemoryItem(
                text=f"Notes on {topics[i % 4]}, part {i}", metadata={"year": 2018 + i % 8, "team": "er"}
            )
            for i in range(40)
        ],
        bank=bank,
    )
    spec = {"$and": [{"team": "er"}, {"year": {"$gte": 2022}}]}
    applied: list[filters.CompiledFilter] = []

    def recording(compiled: filters.CompiledFilter, found: Any) -> filters.CompiledFilter:
        applied.append(filters.with_range_values(compiled, found))
        return applied[-1]

    monkeypatch.setattr(semantic, "with_range_values", recording)
    indexed = engine.recall("a walk in the mountains", bank=bank, filter=spec, k=12)
    assert [c.indexed for c in applied] == [True]  # the arms ran with the rewritten filter
    # The same recall with the ranges left as they were (no lookup).
    monkeypatch.setattr(semantic, "range_value_queries", lambda bank, compiled: ())
    plain = engine.recall("a walk in the mountains", bank=bank, filter=spec, k=12)
    assert not any("@ == 2022" in str(v) for v in applied[1].params.values())  # a recheck only
    assert [(m.id, m.score) for m in indexed.memories] == [(m.id, m.score) for m in plain.memories]
    assert len(plain.memories) == 12
    assert all(m.metadata["year"] >= 2022 for m in plain.memories)


async def test_the_async_recall_reads_the_range_values_too(engine: MemoryEngine, bank: str) -> None:
    """The lookups ride the estimate's round trip in a Pipeline on the async runner as well."""
    engine.retain(
        [MemoryItem(text=f"Budget note {i}", metadata={"year": 2018 + i % 8}) for i in range(24)], bank=bank
    )
    options: dict[str, Any] = {"bank": bank, "filter": {"year": {"$between": [2020, 2022]}}, "k": 10}
    synced = engine.recall("the quarterly budget", **options)
    awaited = await engine.arecall("the quarterly budget", **options)
    assert [(m.id, m.score) for m in awaited.memories] == [(m.id, m.score) for m in synced.memories]
    assert len(synced.memories) == 9 and all(2020 <= m.metadata["year"] <= 2022 for m in synced.memories)
