"""The metadata-filter compiler against the real server: PGVector's semantics, with types."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from shared_core import MemoryEngine
from shared_core.recall.filters import Condition, FilterExpr, Not, compile_filter

ROWS: dict[int, dict[str, Any]] = {
    1: {"team": "er", "year": 2021, "tags": ["a", "b"], "name": "Alice", "score": 0.5, "nested": {"x": 1}},
    2: {"team": "icu", "year": 2019, "tags": ["b"], "name": "bob", "flag": True},
    3: {"team": "er", "year": "2021", "name": "Carol", "empty": ""},
    4: {},
    5: {"team": None, "year": 2023.5, "tags": [], "name": "dave_x"},
}


@pytest.fixture(scope="module")
def conn(engine: MemoryEngine) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(engine.dsn, autocommit=True) as c:
        c.execute("CREATE TEMP TABLE filter_rows (id int PRIMARY KEY, metadata jsonb NOT NULL)")
        for key, meta in ROWS.items():
            c.execute("INSERT INTO filter_rows VALUES (%s, %s::jsonb)", (key, json.dumps(meta)))
        yield c


def matching(conn: psycopg.Connection[Any], spec: dict[str, Any] | FilterExpr) -> set[int]:
    compiled = compile_filter(spec, column=sql.Identifier("metadata"))
    statement = sql.SQL("SELECT id FROM filter_rows WHERE {}").format(compiled.clause)
    return {row[0] for row in conn.execute(statement, compiled.params).fetchall()}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"team": "er"}, {1, 3}),
        ({"team": {"$eq": "er"}}, {1, 3}),
        # missing key: excluded (PGVector); a null value is a value
        ({"team": {"$ne": "er"}}, {2, 5}),
        # numbers compare as numbers; the string "2021" is not a number
        ({"year": {"$gt": 2020}}, {1, 5}),
        ({"year": {"$gte": 2021, "$lt": 2022}}, {1}),
        ({"year": {"$lte": 2019}}, {2}),
        ({"year": {"$gte": "2021"}}, {3}),
        ({"year": {"$between": [2019, 2021]}}, {1, 2}),
        ({"year": {"$in": [2019, 2023.5]}}, {2, 5}),
        ({"year": {"$nin": [2019]}}, {1, 3, 5}),
        ({"team": {"$in": []}}, set()),
        ({"team": {"$nin": []}}, {1, 2, 3, 5}),
        ({"name": {"$in": ["bob", 7]}}, {2}),
        # a list in metadata matches when an element does
        ({"tags": "a"}, {1}),
        ({"tags": {"$in": ["b"]}}, {1, 2}),
        ({"tags": {"$nin": ["a"]}}, {2, 5}),
        ({"name": {"$like": "A%"}}, {1}),
        ({"name": {"$ilike": "a%"}}, {1}),
        ({"name": {"$like": "dave\\_%"}}, {5}),
        ({"flag": {"$exists": True}}, {2}),
        ({"flag": {"$exists": False}}, {1, 3, 4, 5}),
        ({"flag": True}, {2}),
        ({"score": {"$lt": 1}}, {1}),
        ({"nested.x": 1}, {1}),
        ({"team": None}, {5}),
        ({"$or": [{"team": "icu"}, {"year": {"$gt": 2022}}]}, {2, 5}),
        ({"$and": [{"team": "er"}, {"year": {"$gt": 2020}}]}, {1}),
        ({"team": "er", "name": "Carol"}, {3}),
        ({"$not": {"team": "er"}}, {2, 4, 5}),
        ({"$not": {"name": {"$like": "A%"}}}, {2, 3, 4, 5}),
        ({"$not": [{"team": "er"}, {"team": "icu"}]}, {4, 5}),
        (Condition(key="tags", op="contains", value="b"), {1, 2}),
        (Condition(key="team", op="is_empty"), {4, 5}),
        (Condition(key="tags", op="is_empty"), {3, 4, 5}),
        (Condition(key="empty", op="is_empty"), {1, 2, 3, 4, 5}),
        (Not(Condition(key="tags", op="is_empty")), {1, 2}),
        ({"team": 'er") || true || ("'}, set()),
        ({"name": "Alice'; DROP TABLE filter_rows; --"}, set()),
    ],
)
def test_filters_select_what_pgvector_would(
    conn: psycopg.Connection[Any], spec: dict[str, Any] | FilterExpr, expected: set[int]
) -> None:
    assert matching(conn, spec) == expected


def test_the_metadata_index_exists(engine: MemoryEngine) -> None:
    with psycopg.connect(engine.dsn) as c:
        engine.stats("any")  # bootstraps migrations
        row = c.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_units_metadata_gin'"
        ).fetchone()
    assert row is not None and "jsonb_path_ops" in row[0]


def _li(*filters: Any, condition: str = "and") -> Any:
    from llama_index.core.vector_stores.types import FilterCondition, MetadataFilters

    return MetadataFilters(filters=list(filters), condition=FilterCondition(condition))


def _lf(key: str, value: Any, op: str = "==") -> Any:
    from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter

    return MetadataFilter(key=key, value=value, operator=FilterOperator(op))


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: _li(_lf("team", "er")), {1, 3}),
        (lambda: _li(_lf("year", 2020, ">")), {1, 5}),
        (lambda: _li(_lf("team", "er", "!=")), {2, 5}),
        (lambda: _li(_lf("year", [2019, 2021], "in")), {1, 2}),
        (lambda: _li(_lf("tags", ["a", "b"], "any")), {1, 2}),
        (lambda: _li(_lf("tags", ["a", "b"], "all")), {1}),
        (lambda: _li(_lf("tags", "b", "contains")), {1, 2}),
        (lambda: _li(_lf("name", "AR", "text_match_insensitive")), {3}),
        (lambda: _li(_lf("name", "e_", "text_match")), {5}),
        (lambda: _li(_lf("team", None, "is_empty")), {4, 5}),
        (lambda: _li(_lf("team", "icu"), _lf("year", 2022, ">"), condition="or"), {2, 5}),
        (lambda: _li(_lf("team", "er"), _lf("team", "icu"), condition="not"), {4, 5}),
        (lambda: _li(_lf("team", "er"), _li(_lf("year", 2021), _lf("year", "2021"), condition="or")), {1, 3}),
    ],
)
def test_llamaindex_filters_select_the_same(
    conn: psycopg.Connection[Any], make: Any, expected: set[int]
) -> None:
    from hindsight_llamaindex.metadata_filters import to_filter_tree

    tree = to_filter_tree(make())
    assert tree is not None
    assert matching(conn, tree) == expected
