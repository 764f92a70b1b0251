"""The graph arm fans out only the entities whose shares could lift a memory past
``graph_min_score`` ("strong"); the faint ones (whose per-memory shares, all summed, stay at or
below it) are read only for the memories the strong entities or the links reach, each checked
against the entity's ``per_entity`` newest memories. On the real server this returns the rows
of the plain formulation (every entity fanned out, every memory it reaches summed), scores
compared to the bit, in the same order: hub entities beyond ``per_entity``, memories reached by
several entities, query entities (their weight negative too), thresholds that make every entity
faint, none, or some."""

from __future__ import annotations

import random
import uuid
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from shared_core import EngineConfig, MemoryEngine, MemoryItem
from shared_core.recall.arms import ArmQuery
from shared_core.recall.arms.graph import GRAPH, graph_statement
from shared_core.recall.fusion import ArmHit
from shared_core.recall.settings import RecallSettings

# The statement's entity part as it was before faint entities were skipped: every entity the
# seeds or the query name reaches its ``per_entity`` newest memories, every one summed.
_PLAIN_ENTITY = """
entity_mass AS MATERIALIZED (
    SELECT ue.entity_id, r.id AS src, r.mass / count(*) OVER (PARTITION BY r.id) AS mass
    FROM restart r JOIN unit_entities ue ON ue.bank_id = %(bank)s AND ue.unit_id = r.id
    UNION ALL
    SELECT e.id, NULL::uuid, %(qe_weight)s::float8 FROM entities e
    WHERE e.bank_id = %(bank)s AND e.match_key = ANY(%(query_keys)s::text[])
),
spread AS MATERIALIZED (
    SELECT e.id AS entity_id, greatest(e.mention_count, 1)::float8 AS degree
    FROM (SELECT DISTINCT entity_id FROM entity_mass) m
    JOIN entities e ON e.bank_id = %(bank)s AND e.id = m.entity_id
),
reach AS MATERIALIZED (
    SELECT sp.entity_id, sp.degree, t.unit_id
    FROM spread sp
    CROSS JOIN LATERAL (
        SELECT ue.unit_id FROM unit_entities ue
        WHERE ue.bank_id = %(bank)s AND ue.entity_id = sp.entity_id
        ORDER BY ue.unit_id DESC
        LIMIT %(per_entity)s) t
),
entity_hits AS (
    SELECT r.unit_id, sum(m.mass / r.degree ORDER BY m.entity_id, m.src) AS ew, 0::float8 AS sw,
           0::float8 AS cw
    FROM reach r
    JOIN entity_mass m ON m.entity_id = r.entity_id AND m.src IS DISTINCT FROM r.unit_id
    GROUP BY r.unit_id
),"""


def _plain(statement: str) -> str:
    """``statement`` with its entity part replaced by the plain formulation."""
    head, rest = statement.split("\nentity_mass AS MATERIALIZED (", 1)
    _, tail = rest.split("\n),\nscored AS (", 1)
    return head + _PLAIN_ENTITY + "\nscored AS (" + tail


def _spread_counts(statement: str) -> str:
    """A statement counting the faint and the strong entities of ``statement``'s spread."""
    head = statement.split("\nscored AS (", 1)[0]
    return (
        head + "\nscored AS (SELECT 1)\n"
        "SELECT count(*) FILTER (WHERE faint), count(*) FILTER (WHERE NOT faint) FROM spread"
    )


@pytest.fixture(scope="module")
def hub_bank(engine: MemoryEngine) -> tuple[str, list[str]]:
    """800 memories: two hub entities (in about half and a third of them), 30 people and 10
    rare names (a few memories each), one to three entities a memory; vectors in 6 clusters so
    retain draws semantic links."""
    rng = random.Random(11)
    # Distinct words: retain resolves similar names (trigrams) to one entity.
    people = [
        "Okonkwo",
        "Lindqvist",
        "Ferreira",
        "Tanaka",
        "Moreau",
        "Kowalczyk",
        "Achebe",
        "Zhivago",
        "Quispe",
        "Nakamura",
        "Rasmussen",
        "Oyelaran",
        "Vasquez",
        "Huxley",
        "Bjornsson",
        "Castellanos",
        "Dimitrov",
        "Engelbrecht",
        "Fitzgerald",
        "Gonzaga",
        "Hakimi",
        "Iwasaki",
        "Jablonski",
        "Kuznetsova",
        "Lemaire",
        "Mbeki",
        "Novak",
        "Ortega",
        "Pellegrini",
        "Thistlewood",
    ]
    rare = [
        "Zanzibar",
        "Quokka",
        "Yggdrasil",
        "Wombat",
        "Xylophone",
        "Umbrella",
        "Velvet",
        "Marigold",
        "Juniper",
        "Saffron",
    ]
    centres = np.random.default_rng(11).normal(size=(6, 384))
    noise = np.random.default_rng(12).normal(size=(800, 384)) * 0.35
    vectors = centres[np.arange(800) % 6] + noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    items = []
    for i in range(800):
        names = {rng.choice(people)}
        if rng.random() < 0.5:
            names.add("Hub Alpha")
        if rng.random() < 0.33:
            names.add("Hub Beta")
        if rng.random() < 0.03:
            names.add(rng.choice(rare))
        items.append(
            MemoryItem(
                text=f"{' and '.join(sorted(names))} talked (note {i}).",
                entities=sorted(names),
                embedding=vectors[i].astype(np.float32).tolist(),
            )
        )
    bank = f"graph-faint-{uuid.uuid4().hex[:10]}"
    loader = MemoryEngine(engine.dsn, config=EngineConfig(extract_dates=False, extract_entities=False))
    try:
        ids = loader.retain(items, bank=bank, progress=False)
        # A twin bank retained after it: the same names (entities of the same keys) and newer
        # memories, which a lookup missing its bank condition would count among the newest.
        loader.retain(items, bank=f"{bank}-twin", progress=False)
    finally:
        loader.close()
    return bank, ids


def _query(
    bank: str, ids: list[str], settings: RecallSettings, words: tuple[str, ...], offset: int
) -> ArmQuery:
    """The graph arm's query in ``bank``: 20 semantic and 10 keyword seeds from ``offset``."""
    return _graph_query(
        bank,
        settings,
        words,
        semantic=[ArmHit(id=i, score=0.9 - k / 100) for k, i in enumerate(ids[offset : offset + 40 : 2])],
        keyword=[ArmHit(id=i, score=5.0 - k / 10) for k, i in enumerate(ids[offset + 300 : offset + 310])],
    )


def _graph_query(
    bank: str,
    settings: RecallSettings,
    words: tuple[str, ...],
    *,
    semantic: list[ArmHit],
    keyword: list[ArmHit],
) -> ArmQuery:
    """An unfiltered query over every fact type whose graph arm is seeded by these hits."""
    return ArmQuery(
        bank=bank,
        vector=np.zeros(384, dtype=np.float32),
        words=words,
        bigrams=(),
        types=("world", "experience", "observation"),
        tags=None,
        tags_match="any",
        n=300,
        window=None,
        settings=settings,
        prior={"semantic": semantic, "keyword": keyword},
    )


def _rows(conn: psycopg.Connection[Any], statement: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    return conn.execute(statement, params).fetchall()


_CASES = [
    # graph_min, per_entity, query entity weight, query words
    (0.05, 200, 1.0, ("okonkwo",)),
    (0.05, 20, 1.0, ("hub", "alpha")),
    (0.01, 200, 1.0, ("wombat",)),
    (0.002, 50, 1.0, ()),
    (0.0005, 200, 1.0, ("hub", "beta")),
    (0.0, 200, 1.0, ("tanaka",)),
    (-1.0, 30, 1.0, ("tanaka",)),
    (0.05, 200, -1.0, ("yggdrasil", "lindqvist")),
    (0.5, 10, 1.0, ("hub", "alpha", "hub", "beta")),
]


@pytest.mark.parametrize(("graph_min", "per_entity", "qe_weight", "words"), _CASES)
@pytest.mark.parametrize("offset", [0, 137, 421])
def test_faint_entities_skipped_keep_every_row_score_and_order(
    engine: MemoryEngine,
    hub_bank: tuple[str, list[str]],
    graph_min: float,
    per_entity: int,
    qe_weight: float,
    words: tuple[str, ...],
    offset: int,
) -> None:
    bank, ids = hub_bank
    settings = RecallSettings(
        graph_min_score=graph_min, graph_per_entity_limit=per_entity, graph_query_entity_weight=qe_weight
    )
    start = GRAPH.start(_query(bank, ids, settings, words, offset))
    assert start is not None
    params = dict(start.params or {})
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        register_vector(conn)
        text = graph_statement(
            _query(bank, ids, settings, words, offset).where_sql, with_entities=True
        ).as_string(conn)
        got, expected = _rows(conn, text, params), _rows(conn, _plain(text), params)
        assert got == expected  # ids, scores (float8, compared exactly) and order
        assert {str(r[0]) for r in got} <= set(ids)  # never the twin bank's
        # In a transaction with a generic plan, as the arm runs it.
        with conn.transaction():
            conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            runs = [conn.execute(start.statement, params, prepare=True).fetchall() for _ in range(2)]
        assert all(r == expected for r in runs)


def test_the_cases_cover_faint_strong_and_mixed_spreads(
    engine: MemoryEngine, hub_bank: tuple[str, list[str]]
) -> None:
    """The cases above are not vacuous: some spreads are all faint, some all strong, some
    mixed, and the mixed ones return memories."""
    bank, ids = hub_bank
    kinds = set()
    mixed_rows = 0
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        register_vector(conn)
        for graph_min, per_entity, qe_weight, words in _CASES:
            settings = RecallSettings(
                graph_min_score=graph_min,
                graph_per_entity_limit=per_entity,
                graph_query_entity_weight=qe_weight,
            )
            query = _query(bank, ids, settings, words, 0)
            start = GRAPH.start(query)
            assert start is not None
            params = dict(start.params or {})
            text = graph_statement(query.where_sql, with_entities=True).as_string(conn)
            faint, strong = conn.execute(_spread_counts(text), params).fetchone() or (0, 0)
            kind = "faint" if not strong else "strong" if not faint else "mixed"
            kinds.add(kind)
            if kind == "mixed":
                mixed_rows += len(_rows(conn, text, params))
    assert kinds == {"faint", "strong", "mixed"}
    assert mixed_rows > 0


@pytest.mark.parametrize("inside", [True, False])
def test_a_faint_hub_adds_its_term_exactly_up_to_its_per_entity_newest(
    engine: MemoryEngine, hub_bank: tuple[str, list[str]], inside: bool
) -> None:
    """A memory a strong entity reaches (the query names its person) that is the hub's 25th
    newest: with ``per_entity`` 25 the faint hub's term is in its score, with 24 it is not, as
    in the plain formulation."""
    bank, _ = hub_bank
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        register_vector(conn)
        hub = [
            str(r[0])
            for r in conn.execute(
                "SELECT ue.unit_id FROM unit_entities ue JOIN entities e"
                " ON e.bank_id = ue.bank_id AND e.id = ue.entity_id"
                " WHERE e.bank_id = %s AND e.match_key = 'hub alpha' ORDER BY ue.unit_id DESC",
                (bank,),
            )
        ]
        edge = hub[24]
        (person,) = conn.execute(
            "SELECT e.match_key FROM unit_entities ue JOIN entities e"
            " ON e.bank_id = ue.bank_id AND e.id = ue.entity_id"
            " WHERE ue.bank_id = %s AND ue.unit_id = %s AND e.match_key NOT LIKE 'hub %%'",
            (bank, edge),
        ).fetchone() or ("",)
        settings = RecallSettings(graph_min_score=0.01, graph_per_entity_limit=25 if inside else 24)
        query = _graph_query(
            bank,
            settings,
            tuple(person.split()),
            semantic=[],
            keyword=[ArmHit(id=i, score=5.0 - k / 10) for k, i in enumerate(hub[100:110])],
        )
        start = GRAPH.start(query)
        assert start is not None
        params = dict(start.params or {})
        text = graph_statement(query.where_sql, with_entities=True).as_string(conn)
        faint, strong = conn.execute(_spread_counts(text), params).fetchone() or (0, 0)
        assert faint >= 1 and strong >= 1
        got, expected = _rows(conn, text, params), _rows(conn, _plain(text), params)
    assert got == expected
    assert edge in {str(r[0]) for r in got}
