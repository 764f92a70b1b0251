"""A filtered recall asking every fact type leaves the vacuous type test out of its keyword,
graph and temporal statements (``type_clause``), and the graph arm reads its scored memories by
primary key under a filter: on the real server the recall returns what it returned with the
test in (ids, scores, order, every arm's hits), a subset of the types still keeps the other
types out of every arm, and the graph arm never returns a memory outside the filter."""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg import sql

from shared_core import EngineConfig, MemoryEngine, MemoryItem
from shared_core.recall.arms import TYPES_TEST, ArmQuery, type_clause
from shared_core.recall.arms import graph as graph_arm
from shared_core.recall.arms.graph import GRAPH, graph_statement
from shared_core.recall.arms.keyword import KEYWORD
from shared_core.recall.arms.temporal import TEMPORAL
from shared_core.recall.filters import compile_filter
from shared_core.recall.fusion import ArmHit
from shared_core.recall.settings import RecallSettings
from shared_core.storage.plan import GENERIC_PLAN
from shared_core.types import FACT_TYPES, FactType, TimeWindow

TOPICS = [
    "went hiking in the alps",
    "took a pottery class",
    "planned the quarterly budget",
    "adopted a puppy",
]
START = dt.datetime(2023, 1, 1, tzinfo=dt.UTC)
NOW = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
PEOPLE = [f"Person{i:02d} Example" for i in range(16)]
PLACES = [f"Place{i:02d}" for i in range(6)]

# (filter, tags): metadata, a nested $and with a range, strict tags, tags with metadata.
SCOPES: list[dict[str, Any]] = [
    {"filter": {"team": "a"}},
    {"filter": {"$and": [{"team": "a"}, {"year": {"$gte": 2024}}]}},
    {"tags": ["odd"], "tags_match": "any_strict"},
    {"filter": {"team": {"$ne": "b"}}, "tags": ["odd"], "tags_match": "any"},
]
# A plain question, a "when" question (dated evidence), a question with a window (entry, hops).
QUERIES: list[tuple[str, TimeWindow | None]] = [
    ("Person03 Example took a pottery class in Place02", None),
    ("When did Person05 Example go hiking in the alps?", None),
    ("Who adopted a puppy?", TimeWindow(start=dt.datetime(2023, 10, 1), end=dt.datetime(2024, 6, 30))),
]


def _item(i: int) -> MemoryItem:
    person, place = PEOPLE[(i * 7) % len(PEOPLE)], PLACES[i % len(PLACES)]
    day = START + dt.timedelta(days=3 * i, hours=i % 24)
    return MemoryItem(
        text=f"{person} {TOPICS[i % len(TOPICS)]} in {place} (note {i}).",
        fact_type=FACT_TYPES[i % 3],
        entities=[person, place],
        occurred_start=day if i % 5 else None,
        mentioned_at=day + dt.timedelta(days=1),
        tags=("odd",) if i % 5 == 2 else (),
        metadata={"team": "a" if i % 4 < 2 else "b", "year": day.year},
    )


ITEMS = [_item(i) for i in range(216)]


@pytest.fixture(scope="module")
def typed_bank(engine: MemoryEngine) -> Iterator[tuple[str, dict[str, MemoryItem]]]:
    """216 memories of the three types over two years, in two teams, a fifth tagged, each
    naming a person and a place (the graph's entities); by id."""
    bank = f"untyped-{uuid.uuid4().hex[:10]}"
    loader = MemoryEngine(engine.dsn, config=EngineConfig(extract_dates=False, extract_entities=False))
    try:
        ids = loader.retain(ITEMS, bank=bank, progress=False)
    finally:
        loader.close()
    yield bank, dict(zip(ids, ITEMS, strict=True))


@pytest.fixture(scope="module")
def recaller(engine: MemoryEngine) -> Iterator[MemoryEngine]:
    """An engine whose graph arm keeps every memory its spread scores above 0 (on a bank this
    small the default threshold keeps none, and the graph statement would go untested)."""
    config = EngineConfig(recall=dataclasses.replace(engine.config.recall, graph_min_score=0.0))
    other = MemoryEngine(engine.dsn, config=config)
    yield other
    other.close()


def _passes(item: MemoryItem, scope: dict[str, Any]) -> bool:
    """Whether ``item`` is in ``scope`` (the SCOPES entries, written out)."""
    team, year, odd = item.metadata["team"], item.metadata["year"], "odd" in item.tags
    spec = scope.get("filter")
    if spec == {"team": "a"} and team != "a":
        return False
    if spec == {"$and": [{"team": "a"}, {"year": {"$gte": 2024}}]} and not (team == "a" and year >= 2024):
        return False
    if spec == {"team": {"$ne": "b"}} and team == "b":
        return False
    tags = scope.get("tags")
    if tags and scope.get("tags_match") == "any_strict":
        return odd
    return not tags or odd or not item.tags


def _recall(engine: MemoryEngine, bank: str, text: str, window: TimeWindow | None, **scope: Any) -> Any:
    options: dict[str, Any] = {"temporal_window": window} if window else {}
    return engine.recall(
        text, bank=bank, query_timestamp=NOW, reranker="none", trace=True, **options, **scope
    )


def _answer(result: Any) -> tuple[list[tuple[str, float]], dict[str, list[tuple[str, float]]]]:
    """The memories (id, score) and every arm's hits of a traced recall."""
    return [(m.id, m.score) for m in result.memories], {a: list(h) for a, h in result.trace.arms.items()}


def test_every_type_asked_returns_what_the_typed_statements_returned(
    recaller: MemoryEngine, typed_bank: tuple[str, dict[str, MemoryItem]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same memories, scores and order, and the same hits in every arm, as the recall with
    the type test in every statement and the graph's join (main's statements), under each scope;
    none outside the scope."""
    bank, items = typed_bank
    new = {
        (text, i): _answer(_recall(recaller, bank, text, window, **scope))
        for text, window in QUERIES
        for i, scope in enumerate(SCOPES)
    }
    with monkeypatch.context() as m:
        # main's statements: the type test everywhere, the graph's scored memories joined.
        m.setattr(ArmQuery, "filtered_all_types", property(lambda self: False))
        m.setattr(graph_arm, "_GRAPH_SELECT_FILTERED", graph_arm._GRAPH_SELECT)
        old = {
            (text, i): _answer(_recall(recaller, bank, text, window, **scope))
            for text, window in QUERIES
            for i, scope in enumerate(SCOPES)
        }
    arms_seen: set[str] = set()
    for key, (memories, arms) in new.items():
        assert (memories, arms) == old[key], key
        scope = SCOPES[key[1]]
        assert memories and all(_passes(items[i], scope) for i, _ in memories), key
        for arm, hits in arms.items():
            assert all(_passes(items[i], scope) for i, _ in hits), (key, arm)
            arms_seen |= {arm} if hits else set()
    # Every arm took part somewhere, so every arm's statement was compared.
    assert arms_seen >= {"semantic", "keyword", "graph", "temporal"}, arms_seen


@pytest.mark.parametrize("types", [("world",), ("experience", "observation")])
def test_a_subset_of_the_types_keeps_the_other_types_out_of_every_arm(
    recaller: MemoryEngine, typed_bank: tuple[str, dict[str, MemoryItem]], types: tuple[FactType, ...]
) -> None:
    bank, items = typed_bank
    arms_seen: set[str] = set()
    for text, window in QUERIES:
        for scope in SCOPES:
            memories, arms = _answer(_recall(recaller, bank, text, window, types=list(types), **scope))
            assert memories, (text, scope)
            for i, _ in memories:
                assert items[i].fact_type in types and _passes(items[i], scope), (text, scope)
            for arm, hits in arms.items():
                wrong = [
                    i for i, _ in hits if items[i].fact_type not in types or not _passes(items[i], scope)
                ]
                assert not wrong, (text, scope, arm)
                arms_seen |= {arm} if hits else set()
    assert arms_seen >= {"semantic", "keyword", "graph", "temporal"}, arms_seen


def _query(
    bank: str, *, spec: dict[str, object] | None, types: tuple[FactType, ...], **more: Any
) -> ArmQuery:
    return ArmQuery(
        bank=bank,
        vector=np.ones(384, dtype=np.float32) / np.sqrt(384),
        words=("person03", "example", "pottery"),
        bigrams=(),
        types=types,
        tags=None,
        tags_match="any",
        n=100,
        settings=RecallSettings(graph_min_score=-1.0),
        filter=compile_filter(spec),
        **{"window": None, **more},
    )


def _text(statement: Any) -> str:
    return statement if isinstance(statement, str) else str(statement.as_string(None))


def test_the_statements_drop_the_type_test_only_under_a_filter_asking_every_type() -> None:
    window = TimeWindow(
        start=dt.datetime(2023, 3, 1, tzinfo=dt.UTC), end=dt.datetime(2023, 8, 31, tzinfo=dt.UTC)
    )
    prior = {"semantic": [ArmHit(id=str(uuid.uuid4()), score=0.9)]}
    cases: list[tuple[dict[str, object] | None, tuple[FactType, ...], bool]] = [
        ({"team": "a"}, FACT_TYPES, False),
        ({"team": "a"}, ("world",), True),
        (None, FACT_TYPES, True),  # unfiltered: the statements it always ran
    ]
    for spec, types, typed in cases:
        q = _query("b", spec=spec, types=types, prior=prior)
        assert (type_clause(q) is TYPES_TEST) is typed
        for arm, query in (
            ("keyword", KEYWORD.start(q)),
            ("graph", GRAPH.start(q)),
            ("when", TEMPORAL.start(_query("b", spec=spec, types=types, asks_when=True))),
        ):
            assert query is not None
            text = _text(query.statement)
            if arm == "when" and spec is not None:
                text = text.split("few AS")[0]  # the exact read (its HNSW scan keeps the test)
            assert ("fact_type" in text) is typed, (arm, spec, types)
        entry = TEMPORAL.start(_query("b", spec=spec, types=types, window=window))
        assert entry is not None
        text = _text(entry.statement)
        if spec is not None:
            fmatching = text.split("fmatching AS MATERIALIZED")[1].split("ffew AS")[0]
            assert ("fact_type" in fmatching) is typed
    graph = graph_statement(sql.SQL("TRUE"), with_entities=True, filtered=True).as_string(None)
    assert "u.id = ANY(ARRAY(SELECT unit_id FROM kept))" in graph


def _rows(dsn: str, statement: Any, params: dict[str, Any], *, generic: bool) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        register_vector(conn)
        mode = "force_generic_plan" if generic else "force_custom_plan"
        conn.execute(sql.SQL("SET plan_cache_mode = {}").format(sql.Identifier(mode)))
        runs = [conn.execute(statement, params, prepare=True).fetchall() for _ in range(3)]
    assert all(r == runs[0] for r in runs)
    return runs[0]


@pytest.mark.parametrize("scope", [0, 1, 3])
def test_the_graph_arm_under_a_filter_returns_only_its_memories(
    engine: MemoryEngine, typed_bank: tuple[str, dict[str, MemoryItem]], scope: int
) -> None:
    """Seeded from memories on both sides of the filter, every memory reached kept
    (graph_min_score -1): the arm's statement, by primary key, generic or custom plan, returns
    exactly the filtered rows of the join it replaces, and nothing outside the filter."""
    bank, items = typed_bank
    ids = list(items)
    spec = SCOPES[scope].get("filter")
    tags = SCOPES[scope].get("tags")
    prior = {
        "semantic": [ArmHit(id=i, score=0.9 - k / 100) for k, i in enumerate(ids[:40:2])],
        "keyword": [ArmHit(id=i, score=5.0 - k / 10) for k, i in enumerate(ids[60:90])],
    }
    q = _query(bank, spec=spec, types=FACT_TYPES, prior=prior)
    if tags:
        q = dataclasses.replace(q, tags=tuple(tags), tags_match=SCOPES[scope]["tags_match"])
    start = GRAPH.start(q)
    assert start is not None and dict(start.settings) == GENERIC_PLAN
    assert "fact_type" not in _text(start.statement)
    params = dict(start.params or {})
    joined = graph_statement(q.where_sql, with_entities=True)  # main's: typed, joined
    unfiltered = graph_statement(sql.SQL("TRUE"), with_entities=True)
    for generic in (True, False):
        got = _rows(engine.dsn, start.statement, params, generic=generic)
        assert got == _rows(engine.dsn, joined, params, generic=generic)
        assert len(got) > 10
        assert all(_passes(items[str(i)], SCOPES[scope]) for i, _ in got)
    everything = _rows(engine.dsn, unfiltered, params, generic=False)
    assert any(not _passes(items[str(i)], SCOPES[scope]) for i, _ in everything)  # the filter mattered
