"""Recall arm mechanics on the real server, with hand-built vectors at known cosines.

The query vector is controlled by a second engine on the same database whose embedder maps a
query text to a fixed unit vector (``e0`` unless told otherwise). Memories are retained with
precomputed vectors ``cos·e0 + sin·e_k`` (a distinct axis ``k`` per memory), so each memory's
cosine to the query is exactly the number written in the test (the reference's §5 trick).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

import psycopg
import pytest

from shared_core import MemoryEngine, MemoryItem, TimeWindow
from shared_core.config import DEFAULT_ARM_WEIGHTS
from tests.fakes import FixedQueryEmbedder
from tests.fakes import unit_vector as vec

UTC = dt.UTC


def _bank(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _ids(hits: object) -> list[str]:
    return [h[0] for h in hits]  # type: ignore[attr-defined]


def _links_written(engine: MemoryEngine, bank: str) -> bool:
    with psycopg.connect(engine.dsn) as conn:
        row = conn.execute("SELECT count(*) FROM memory_links WHERE bank_id = %s", (bank,)).fetchone()
    return bool(row and row[0])


def _entities_written(engine: MemoryEngine, bank: str) -> bool:
    with psycopg.connect(engine.dsn) as conn:
        row = conn.execute("SELECT count(*) FROM unit_entities WHERE bank_id = %s", (bank,)).fetchone()
    return bool(row and row[0])


# --- semantic arm ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cutoff_bank(engine: MemoryEngine) -> tuple[str, dict[str, str]]:
    bank = _bank("recall-cutoff")
    texts = {
        "c029": "Lighthouse keepers polish brass lamps.",
        "c031": "Glaciers carve valleys over millennia.",
        "c090": "Submarines navigate beneath polar ice.",
        "c000": "Orchestras tune before the overture.",
    }
    cosines = {"c029": 0.29, "c031": 0.31, "c090": 0.90, "c000": 0.0}
    items = [MemoryItem(text=texts[k], embedding=vec(cosines[k], axis=10 + i)) for i, k in enumerate(texts)]
    ids = engine.retain(items, bank=bank)
    return bank, dict(zip(texts, ids, strict=True))


def test_semantic_cutoff_at_cosine_0_3(qeng: MemoryEngine, cutoff_bank: tuple[str, dict[str, str]]) -> None:
    bank, ids = cutoff_bank
    result = qeng.recall("qqq", bank=bank, trace=True)
    assert result.trace is not None
    semantic = dict(result.trace.arms["semantic"])
    assert ids["c031"] in semantic and ids["c090"] in semantic
    assert ids["c029"] not in semantic
    assert ids["c000"] not in semantic
    # raw scores are the cosines, best first
    assert semantic[ids["c090"]] == pytest.approx(0.90, abs=1e-3)
    assert semantic[ids["c031"]] == pytest.approx(0.31, abs=1e-3)
    assert _ids(result.trace.arms["semantic"]) == [ids["c090"], ids["c031"]]
    # below the cut-off and unmatched by any other arm: not recalled at all
    assert {m.id for m in result.memories} == {ids["c090"], ids["c031"]}
    top = result.memories[0]
    assert top.id == ids["c090"]
    assert dict(top.scores.arm_ranks) == {"semantic": 1}
    assert top.scores.arm_scores["semantic"] == pytest.approx(0.90, abs=1e-3)


@pytest.fixture(scope="module")
def big_bank(engine: MemoryEngine) -> tuple[str, list[str], list[str]]:
    """150 world rows (cosines 0.40..0.95) and 5 experience rows, all above the cut-off."""
    bank = _bank("recall-big")
    world = [
        MemoryItem(text=f"world fact number {i}", embedding=vec(0.40 + 0.55 * i / 149, axis=1 + i))
        for i in range(150)
    ]
    experience = [
        MemoryItem(text=f"experience number {i}", fact_type="experience", embedding=vec(0.5, axis=200 + i))
        for i in range(5)
    ]
    ids = engine.retain([*world, *experience], bank=bank, progress=False)
    return bank, ids[:150], ids[150:]


def test_budget_sets_the_semantic_arm_limit(
    qeng: MemoryEngine, big_bank: tuple[str, list[str], list[str]]
) -> None:
    bank, world, experience = big_bank
    low = qeng.recall("zzz", bank=bank, budget="low", trace=True, arms=["semantic"])
    assert low.trace is not None and low.trace.budget_n == 100
    # the limit applies to the arm, across fact types: the 100 most similar memories, here
    # world[50:] (world[i] has cosine rising with i, above the experience rows' 0.5 from i=28)
    assert set(_ids(low.trace.arms["semantic"])) == set(world[50:])
    # one fact type asked: the limit applies to it alone
    only = qeng.recall("zzz", bank=bank, budget="low", trace=True, arms=["semantic"], types=["experience"])
    assert only.trace is not None and set(_ids(only.trace.arms["semantic"])) == set(experience)


def test_high_budget_returns_more_rows_than_ef_search(
    engine: MemoryEngine, qeng: MemoryEngine, big_bank: tuple[str, list[str], list[str]]
) -> None:
    bank, world, experience = big_bank
    assert engine.config.hnsw_ef_search < 150
    high = qeng.recall(
        "zzz", bank=bank, budget="high", max_tokens=100_000, trace=True, arms=["semantic"], types=["world"]
    )
    assert high.trace is not None and high.trace.budget_n == 1000
    # the iterative HNSW scan keeps going past ef_search: every matching row comes back
    assert set(_ids(high.trace.arms["semantic"])) == set(world)
    assert len(high.memories) == 150
    assert not set(experience) & {m.id for m in high.memories}  # types filter inside the SQL


def test_recall_connections_plan_every_statement_with_its_parameters(engine: MemoryEngine) -> None:
    # A prepared statement's generic plan (chosen by Postgres after a few runs) ignores the
    # bank's size: the keyword arm's then read every row id of the bank (see pools.py).
    engine.stats("warm-up")
    with engine._pools._sync_pool().connection() as conn:
        row = conn.execute("SHOW plan_cache_mode").fetchone()
    assert row is not None and row[0] == "force_custom_plan"


# --- keyword arm --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keyword_bank(engine: MemoryEngine) -> tuple[str, dict[str, str]]:
    bank = _bank("recall-kw")
    texts = {
        "quokka": "A quokka stole my sandwich on Rottnest Island.",
        "tea": "Darjeeling tea tastes of muscatel grapes.",
        "zh": "我喜欢吃北京烤鸭。",
        "ja": "東京タワーは赤いです。",
    }
    # cosine 0 to the query: only the keyword arm can find these
    items = [MemoryItem(text=t, embedding=vec(0.0, axis=20 + i)) for i, t in enumerate(texts.values())]
    ids = engine.retain(items, bank=bank)
    return bank, dict(zip(texts, ids, strict=True))


@pytest.mark.parametrize(
    "query",
    [
        "quokka",
        "Where did the quokka take my lunch yesterday afternoon?",  # OR semantics: extra words
        "QUOKKAS!",  # stemming and case
    ],
)
def test_keyword_arm_finds_by_word(
    qeng: MemoryEngine, keyword_bank: tuple[str, dict[str, str]], query: str
) -> None:
    bank, ids = keyword_bank
    result = qeng.recall(query, bank=bank, trace=True)
    assert result.trace is not None
    assert _ids(result.trace.arms["keyword"]) == [ids["quokka"]]
    assert result.trace.arms["semantic"] == []
    assert result.memories[0].id == ids["quokka"]
    assert dict(result.memories[0].scores.arm_ranks) == {"keyword": 1}


@pytest.mark.parametrize(
    "query",
    [
        "quokka's 'sandwich'",
        "quokka & tea",
        "quokka | tea",
        "!quokka",
        "quokka:*",
        "quok:*",
        "quokka \\ tea",
        "'",
        "&",
        "|",
        "!",
        ":*",
        "\\",
        "!!(quokka & | tea):* <-> 'x'",
        "a:* & b:A | !c",
        "quokka' OR 1=1; --",
        "$$quokka$$",
        "%(bank)s quokka",
        "{tea}",
    ],
)
def test_keyword_metacharacters_do_not_error(
    qeng: MemoryEngine, keyword_bank: tuple[str, dict[str, str]], query: str
) -> None:
    bank, ids = keyword_bank
    result = qeng.recall(query, bank=bank, trace=True)
    assert result.trace is not None
    found = set(_ids(result.trace.arms["keyword"]))
    if "quokka" in query.lower():
        assert ids["quokka"] in found
    if "tea" in query.lower().split() or "tea}" in query:
        assert ids["tea"] in found


def test_chinese_query_found_by_keyword_arm(
    qeng: MemoryEngine, keyword_bank: tuple[str, dict[str, str]]
) -> None:
    bank, ids = keyword_bank
    result = qeng.recall("北京烤鸭好吃吗？", bank=bank, trace=True)
    assert result.trace is not None
    assert ids["zh"] in _ids(result.trace.arms["keyword"])
    assert result.memories and result.memories[0].id == ids["zh"]
    assert "keyword" in result.memories[0].scores.arm_ranks


def test_japanese_query_found_by_keyword_arm(
    qeng: MemoryEngine, keyword_bank: tuple[str, dict[str, str]]
) -> None:
    bank, ids = keyword_bank
    result = qeng.recall("東京タワー", bank=bank, trace=True)
    assert result.trace is not None
    assert _ids(result.trace.arms["keyword"]) == [ids["ja"]]


# --- temporal arm -------------------------------------------------------------------------------

SPRING = TimeWindow(
    start=dt.datetime(2024, 3, 1, tzinfo=UTC), end=dt.datetime(2024, 5, 31, 23, 59, 59, tzinfo=UTC)
)


@pytest.fixture(scope="module")
def temporal_bank(engine: MemoryEngine) -> tuple[str, dict[str, str], dict[str, dt.datetime]]:
    bank = _bank("recall-temporal")
    dates = {
        "centre": SPRING.centre,
        "edge": dt.datetime(2024, 3, 3, tzinfo=UTC),
        "late": dt.datetime(2024, 5, 20, tzinfo=UTC),
        "before": dt.datetime(2023, 1, 10, tzinfo=UTC),
        "after": dt.datetime(2024, 9, 1, tzinfo=UTC),
    }
    # "before"/"after" are the most similar to the query, yet dated outside the window;
    # "sem" is dated inside and similar enough for the semantic arm too.
    cosines = {"centre": 0.2, "edge": 0.2, "late": 0.2, "before": 0.9, "after": 0.9}
    items = [
        MemoryItem(
            text=f"Event {k} happened.", occurred_start=dates[k], embedding=vec(cosines[k], axis=40 + i)
        )
        for i, k in enumerate(dates)
    ]
    dates["sem"] = dt.datetime(2024, 4, 1, tzinfo=UTC)
    items.append(
        MemoryItem(text="Event sem happened.", occurred_start=dates["sem"], embedding=vec(0.8, axis=60))
    )
    ids = engine.retain(items, bank=bank)
    return bank, dict(zip(dates, ids, strict=True)), dates


def _proximity(date: dt.datetime, window: TimeWindow) -> float:
    half = window.span.total_seconds() / 2
    return 1 - min(abs((date - window.centre).total_seconds()) / half, 1.0)


def test_temporal_arm_entry_points_are_inside_the_window(
    qeng: MemoryEngine, temporal_bank: tuple[str, dict[str, str], dict[str, dt.datetime]]
) -> None:
    bank, ids, dates = temporal_bank
    result = qeng.recall("xyzzy", bank=bank, temporal_window=SPRING, trace=True)
    assert result.trace is not None
    assert result.trace.time_window == SPRING
    assert result.trace.time_window_source == "caller"
    temporal = dict(result.trace.arms["temporal"])
    assert {ids["centre"], ids["edge"], ids["late"], ids["sem"]} <= set(temporal)
    # the memories dated outside are not entry points: at most reached by spreading along
    # temporal links (decay 0.7 x link weight <= 1), never with an entry point's proximity
    for key in ("before", "after"):
        if ids[key] in temporal:
            assert 0 < temporal[ids[key]] <= 0.7 * temporal[ids["centre"]] + 1e-9
            assert temporal[ids[key]] != pytest.approx(_proximity(dates[key], SPRING))
    # proximity 1 - |date - centre| / (span / 2): highest at the centre
    for key in ("centre", "edge", "late", "sem"):
        assert temporal[ids[key]] == pytest.approx(_proximity(dates[key], SPRING), abs=1e-6)
    assert temporal[ids["centre"]] == pytest.approx(1.0)
    assert temporal[ids["centre"]] > temporal[ids["late"]] > temporal[ids["edge"]]
    assert _ids(result.trace.arms["temporal"])[0] == ids["centre"]


def test_temporal_spread_skips_neighbours_unrelated_to_the_query(
    qeng: MemoryEngine, engine: MemoryEngine
) -> None:
    """Spreading from the entry points follows temporal links, but (as in the reference, and
    like the entry points themselves) only to units with cosine >= 0.1 to the query."""
    bank = _bank("recall-spread")
    ids = engine.retain(
        [
            MemoryItem(
                text="Entry at the centre.", occurred_start=SPRING.centre, embedding=vec(0.5, axis=130)
            ),
            MemoryItem(
                text="Related, just after.",
                occurred_start=dt.datetime(2024, 6, 3, tzinfo=UTC),
                embedding=vec(0.5, axis=131),
            ),
            MemoryItem(
                text="Unrelated, just after.",
                occurred_start=dt.datetime(2024, 6, 4, tzinfo=UTC),
                embedding=vec(0.0, axis=132),
            ),
        ],
        bank=bank,
    )
    result = qeng.recall("xyzzy", bank=bank, temporal_window=SPRING, trace=True)
    assert result.trace is not None
    temporal = set(_ids(result.trace.arms["temporal"]))
    # 1.0 (proximity) x 0.3 (link weight floor) x 0.7 (decay) = 0.21 > 0.2: spread reaches both
    assert {ids[0], ids[1]} <= temporal
    assert ids[2] not in temporal
    assert ids[2] not in {m.id for m in result.memories}


def test_window_with_nothing_dated_inside_has_no_entry_points(
    qeng: MemoryEngine, temporal_bank: tuple[str, dict[str, str], dict[str, dt.datetime]]
) -> None:
    bank, ids, _ = temporal_bank
    empty = TimeWindow(start=dt.datetime(2020, 1, 1, tzinfo=UTC), end=dt.datetime(2020, 12, 31, tzinfo=UTC))
    result = qeng.recall("xyzzy", bank=bank, temporal_window=empty, trace=True)
    assert result.trace is not None
    # "before"/"after" are the most similar memories (cosine 0.9) but dated outside 2020
    assert result.trace.arms["temporal"] == []
    assert {ids["before"], ids["after"]} <= set(_ids(result.trace.arms["semantic"]))


def test_no_temporal_arm_without_a_window(
    qeng: MemoryEngine, temporal_bank: tuple[str, dict[str, str], dict[str, dt.datetime]]
) -> None:
    bank, _, _ = temporal_bank
    result = qeng.recall("xyzzy", bank=bank, trace=True)
    assert result.trace is not None
    assert result.trace.time_window is None and result.trace.time_window_source == "none"
    assert result.trace.arms["temporal"] == []


def test_fusion_keeps_semantic_and_temporal_evidence(
    qeng: MemoryEngine, temporal_bank: tuple[str, dict[str, str], dict[str, dt.datetime]]
) -> None:
    bank, ids, dates = temporal_bank
    # passthrough: the boosts apply (the learned reranker reads proximity as a feature instead)
    result = qeng.recall("xyzzy", bank=bank, temporal_window=SPRING, trace=True, reranker="none")
    by_id = {m.id: m for m in result.memories}
    sem = by_id[ids["sem"]]
    assert {"semantic", "temporal"} <= set(sem.scores.arm_ranks)
    assert sem.scores.arm_scores["semantic"] == pytest.approx(0.8, abs=1e-3)
    expected = _proximity(dates["sem"], SPRING)
    assert expected < 1.0  # dated inside the window, off its centre
    # the arm ranks by the centre-peaked proximity; the boost reads the window match, which is
    # 1 anywhere inside the window (boosts.window_match)
    assert sem.scores.arm_scores["temporal"] == pytest.approx(expected, abs=1e-6)
    assert sem.scores.temporal_proximity == pytest.approx(1.0)
    # RRF sums every arm's weighted reciprocal rank (k = 60)
    ranks = sem.scores.arm_ranks
    assert sem.scores.rrf == pytest.approx(
        sum(DEFAULT_ARM_WEIGHTS[arm] / (60 + r) for arm, r in ranks.items())
    )
    # and the window match feeds the temporal boost: 1 + 0.2 × (1 − 0.5)
    assert sem.scores.temporal_boost == pytest.approx(1.1, abs=1e-6)


def test_memory_dated_outside_the_window_has_zero_proximity(
    qeng: MemoryEngine, temporal_bank: tuple[str, dict[str, str], dict[str, dt.datetime]]
) -> None:
    """Issue 4: every candidate carries the temporal proximity its boost reads (since session
    19 ``boosts.window_match``: 1 inside the window, falling to 0 half a span beyond its edges).
    "before" (Jan 2023) is 1.4 years outside a spring-2024 window: 0, and so
    a temporal boost of 1 + 0.2 × (0 − 0.5) = 0.9, however it was reached (semantic arm, or
    spreading along a temporal link from an entry point)."""
    bank, ids, _ = temporal_bank
    result = qeng.recall("xyzzy", bank=bank, temporal_window=SPRING, trace=True, reranker="none")
    before = {m.id: m for m in result.memories}[ids["before"]]
    assert "semantic" in before.scores.arm_ranks
    assert before.scores.temporal_proximity == pytest.approx(0.0)
    assert before.scores.temporal_boost == pytest.approx(0.9)


# --- graph arm ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def causal_bank(engine: MemoryEngine) -> tuple[str, list[str]]:
    bank = _bank("recall-causal")
    items = [
        MemoryItem(text="The reactor coolant pump failed.", embedding=vec(0.9, axis=70)),
        # orthogonal to the query, no shared words: only a link can reach these
        MemoryItem(
            text="Technicians evacuated the turbine hall.", embedding=vec(0.0, axis=71), caused_by=[0]
        ),
        MemoryItem(text="Budget cuts postponed maintenance.", embedding=vec(0.0, axis=72), causes=[0]),
        MemoryItem(text="Penguins waddle across the snow.", embedding=vec(0.0, axis=73)),
    ]
    return bank, engine.retain(items, bank=bank)


def test_graph_arm_follows_explicit_causal_links(
    qeng: MemoryEngine, engine: MemoryEngine, causal_bank: tuple[str, list[str]]
) -> None:
    bank, ids = causal_bank
    assert _links_written(engine, bank), "retain wrote no memory_links for caused_by/causes"
    result = qeng.recall("pump", bank=bank, trace=True)
    assert result.trace is not None
    graph = set(_ids(result.trace.arms["graph"]))
    assert {ids[1], ids[2]} <= graph  # effect (to_id) and cause (from_id): both directions
    assert ids[3] not in graph
    by_id = {m.id: m for m in result.memories}
    assert dict(by_id[ids[1]].scores.arm_ranks).keys() == {"graph"}
    assert ids[3] not in by_id


@pytest.fixture(scope="module")
def zorblax_bank(engine: MemoryEngine) -> tuple[str, list[str]]:
    bank = _bank("recall-multihop")
    items = [
        MemoryItem(
            text="Alice got a new job at Zorblax Corp.",
            entities=["Zorblax Corp"],
            embedding=vec(0.9, axis=80),
        ),
        MemoryItem(
            text="Zorblax Corp relocated its headquarters to Lisbon.",
            entities=["Zorblax Corp"],
            embedding=vec(0.0, axis=81),
        ),
        MemoryItem(text="Penguins waddle across the snow.", embedding=vec(0.0, axis=82)),
        # A realistic bank holds more than three memories: the entity weight is an IDF, and in
        # a three-memory bank an entity named twice is "common".
        *[
            MemoryItem(text=f"Unrelated note number {i}.", entities=[], embedding=vec(0.0, axis=100 + i))
            for i in range(20)
        ],
    ]
    return bank, engine.retain(items, bank=bank)


def test_multi_hop_only_the_graph_arm_finds(
    qeng: MemoryEngine, engine: MemoryEngine, zorblax_bank: tuple[str, list[str]]
) -> None:
    bank, ids = zorblax_bank
    assert _entities_written(engine, bank), "retain wrote no unit_entities for entities=[...]"
    result = qeng.recall("What is the new job?", bank=bank, trace=True)
    assert result.trace is not None
    by_id = {m.id: m for m in result.memories}
    assert "semantic" in by_id[ids[0]].scores.arm_ranks
    hop = by_id[ids[1]]
    assert set(hop.scores.arm_ranks) == {"graph"}
    assert "Zorblax Corp" in hop.entities
    assert ids[1] not in _ids(result.trace.arms["semantic"])
    assert ids[1] not in _ids(result.trace.arms["keyword"])
    assert ids[2] not in by_id


def test_graph_arm_does_not_rerank_its_own_seeds(qeng: MemoryEngine, engine: MemoryEngine) -> None:
    """The graph arm expands *from* the semantic seeds: a seed reached again through a link
    to another seed is not new evidence. Here B and C (cosines 0.8 and 0.5, both seeds) are
    causally linked; A (cosine 0.9, found by the semantic arm only) must stay first. When
    the graph arm lists B/C, they get a second RRF term (1/61 + 1/62 > 1/61) and outrank A."""
    bank = _bank("recall-seeds")
    ids = engine.retain(
        [
            MemoryItem(text="Otters hold hands while sleeping.", embedding=vec(0.9, axis=120)),
            MemoryItem(text="The dam burst overnight.", embedding=vec(0.8, axis=121), caused_by=[2]),
            MemoryItem(text="Heavy rain fell for a week.", embedding=vec(0.5, axis=122)),
        ],
        bank=bank,
    )
    result = qeng.recall("qqq", bank=bank, trace=True)
    assert result.trace is not None
    seeds = set(_ids(result.trace.arms["semantic"]))
    assert seeds == set(ids)
    assert not set(_ids(result.trace.arms["graph"])) & seeds
    assert result.memories[0].id == ids[0]


def test_the_graph_arm_alone_still_spreads_from_the_semantic_hits(
    qeng: MemoryEngine, zorblax_bank: tuple[str, list[str]]
) -> None:
    """Asked for the graph arm only, recall still finds the seeds it spreads from (the
    semantic arm runs) but reports and ranks the graph arm's hits alone."""
    bank, ids = zorblax_bank
    result = qeng.recall("What is the new job?", bank=bank, arms=["graph"], trace=True)
    assert result.trace is not None
    assert ids[1] in _ids(result.trace.arms["graph"])
    assert result.trace.arms["semantic"] == [] and result.trace.arms["keyword"] == []
    assert all(set(m.scores.arm_ranks) <= {"graph"} for m in result.memories if not m.below_threshold)


def test_a_keyword_hit_seeds_the_graph_arm(qeng: MemoryEngine, engine: MemoryEngine) -> None:
    """A memory only the keyword arm finds (orthogonal to the query vector) still seeds the
    spread: its entity reaches a memory that shares no word and no direction with the query."""
    bank = _bank("recall-kwseed")
    ids = engine.retain(
        [
            MemoryItem(
                text="The quokka survey was run by the Vellmar Institute.",
                entities=["Vellmar Institute"],
                embedding=vec(0.0, axis=130),
            ),
            MemoryItem(
                text="Vellmar Institute moved to Perth last spring.",
                entities=["Vellmar Institute"],
                embedding=vec(0.0, axis=131),
            ),
            *[
                MemoryItem(text=f"Unrelated entry {i}.", entities=[], embedding=vec(0.0, axis=140 + i))
                for i in range(10)
            ],
        ],
        bank=bank,
    )
    result = qeng.recall("quokka", bank=bank, trace=True)
    assert result.trace is not None
    assert _ids(result.trace.arms["semantic"]) == []
    assert _ids(result.trace.arms["keyword"]) == [ids[0]]
    assert ids[1] in _ids(result.trace.arms["graph"])


def test_a_filtered_out_memory_does_not_seed_the_graph_arm(qeng: MemoryEngine, engine: MemoryEngine) -> None:
    """The seeds obey the recall's filter: a memory the tags exclude spreads nothing, even to
    a memory the tags keep."""
    bank = _bank("recall-seedfilter")
    ids = engine.retain(
        [
            MemoryItem(
                text="Marisol Ebert joined Tarnwick Labs.",
                entities=["Tarnwick Labs"],
                embedding=vec(0.9, axis=150),
                tags=["b"],
            ),
            MemoryItem(
                text="Tarnwick Labs opened an office in Oslo.",
                entities=["Tarnwick Labs"],
                embedding=vec(0.0, axis=151),
                tags=["a"],
            ),
            *[
                MemoryItem(text=f"Filler record {i}.", entities=[], embedding=vec(0.0, axis=160 + i))
                for i in range(10)
            ],
        ],
        bank=bank,
    )
    unfiltered = qeng.recall("qqq", bank=bank, trace=True)
    assert unfiltered.trace is not None and ids[1] in _ids(unfiltered.trace.arms["graph"])
    filtered = qeng.recall("qqq", bank=bank, tags=["a"], tags_match="any_strict", trace=True)
    assert filtered.trace is not None
    assert _ids(filtered.trace.arms["graph"]) == []


# --- tags ---------------------------------------------------------------------------------------

TAGGED = {"untagged": (), "a": ("a",), "b": ("b",), "ab": ("a", "b"), "ac": ("a", "c"), "c": ("c",)}


@pytest.fixture(scope="module")
def tags_bank(engine: MemoryEngine) -> tuple[str, dict[str, str]]:
    bank = _bank("recall-tags")
    # semantic (cos 0.7) and keyword ("heron") both find every memory
    items = [
        MemoryItem(text=f"The heron {k} stands still.", tags=list(t), embedding=vec(0.7, axis=90 + i))
        for i, (k, t) in enumerate(TAGGED.items())
    ]
    # fillers that neither arm finds, so "heron" stays a rare term (a term in more than 25% of
    # a bank is dropped from the keyword query)
    fillers = [
        MemoryItem(text=f"Filler note number {i}.", tags=["filler"], embedding=vec(0.0, axis=200 + i))
        for i in range(4 * len(TAGGED))
    ]
    ids = engine.retain([*items, *fillers], bank=bank)
    return bank, dict(zip(TAGGED, ids, strict=False))


@pytest.mark.parametrize(
    ("tags", "mode", "expected"),
    [
        (["a", "b"], "any", {"untagged", "a", "b", "ab", "ac"}),
        (["a", "b"], "all", {"untagged", "ab"}),
        (["a", "b"], "any_strict", {"a", "b", "ab", "ac"}),
        (["a", "b"], "all_strict", {"ab"}),
        (["a", "b"], "exact", {"ab"}),
        (["a"], "exact", {"a"}),
        (["b", "a"], "exact", {"ab"}),
        (None, "exact", {"untagged"}),
        ([], "exact", {"untagged"}),
        (None, "any", set(TAGGED)),
        ([], "any_strict", set(TAGGED)),
        (None, "all_strict", set(TAGGED)),
        (["zzz"], "any", {"untagged"}),
        (["zzz"], "any_strict", set()),
    ],
)
def test_tags_match_modes(
    qeng: MemoryEngine,
    tags_bank: tuple[str, dict[str, str]],
    tags: list[str] | None,
    mode: str,
    expected: set[str],
) -> None:
    bank, ids = tags_bank
    result = qeng.recall("heron", bank=bank, tags=tags, tags_match=mode, trace=True)
    names = {v: k for k, v in ids.items()}
    assert {names[m.id] for m in result.memories} == expected
    assert result.trace is not None
    for arm in ("semantic", "keyword"):  # the filter is inside each arm's SQL
        assert {names[i] for i in _ids(result.trace.arms[arm])} == expected


# --- token cut and budgets ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def cut_bank(engine: MemoryEngine) -> tuple[str, list[str]]:
    bank = _bank("recall-cut")
    texts = [
        "Short first memory.",
        "Second memory, also fairly short.",
        "The third memory is much longer than the others: " + "lorem ipsum " * 40,
        "Fourth.",
        "Fifth one.",
    ]
    # decreasing cosine = the ranking order
    items = [MemoryItem(text=t, embedding=vec(0.9 - 0.1 * i, axis=100 + i)) for i, t in enumerate(texts)]
    return bank, engine.retain(items, bank=bank)


def test_max_tokens_is_a_greedy_prefix(
    engine: MemoryEngine, qeng: MemoryEngine, cut_bank: tuple[str, list[str]]
) -> None:
    bank, ids = cut_bank
    full = qeng.recall("qqq", bank=bank, arms=["semantic"])
    assert [m.id for m in full.memories] == ids
    count = engine.token_counter.count
    first_two = count(full.memories[0].text) + count(full.memories[1].text)
    third = count(full.memories[2].text)
    # room for the first two and everything but the long third: the cut stops at the third,
    # it does not skip it to take the short fourth and fifth
    budget = first_two + third - 1
    assert budget >= first_two + count(full.memories[3].text) + count(full.memories[4].text)
    small = qeng.recall("qqq", bank=bank, arms=["semantic"], max_tokens=budget)
    assert [m.id for m in small.memories] == ids[:2]
    exact = qeng.recall("qqq", bank=bank, arms=["semantic"], max_tokens=first_two + third)
    assert [m.id for m in exact.memories] == ids[:3]
    one = qeng.recall("qqq", bank=bank, arms=["semantic"], max_tokens=1)
    assert one.memories == [] or [m.id for m in one.memories] == ids[:1]
    assert sum(count(m.text) for m in one.memories) <= 1


@pytest.mark.parametrize(
    ("budget", "n"),
    [
        ("low", 100),
        ("mid", 300),
        ("high", 1000),
        ("HIGH", 1000),
        ("adaptive", 307),
        ("adaptive-low", 102),
        ("adaptive-high", 1024),
    ],
)
def test_budget_names(qeng: MemoryEngine, cut_bank: tuple[str, list[str]], budget: str, n: int) -> None:
    bank, ids = cut_bank
    result = qeng.recall("qqq", bank=bank, budget=budget, max_tokens=4096, trace=True)
    assert result.trace is not None and result.trace.budget_n == n
    assert [m.id for m in result.memories] == ids


def test_adaptive_budget_floor(qeng: MemoryEngine, cut_bank: tuple[str, list[str]]) -> None:
    bank, _ = cut_bank
    result = qeng.recall("qqq", bank=bank, budget="adaptive", max_tokens=10, trace=True)
    assert result.trace is not None and result.trace.budget_n == 20


# --- async twin ---------------------------------------------------------------------------------


def test_arecall_returns_the_same_ids(
    engine: MemoryEngine, temporal_bank: tuple[str, dict[str, str], dict[str, dt.datetime]]
) -> None:
    bank, _, _ = temporal_bank

    async def both() -> tuple[list[str], list[str]]:
        async with MemoryEngine(engine.dsn, embedder=FixedQueryEmbedder()) as eng:
            sync = await asyncio.to_thread(eng.recall, "Event", bank=bank, temporal_window=SPRING)
            asynchronous = await eng.arecall("Event", bank=bank, temporal_window=SPRING)
        return [m.id for m in sync.memories], [m.id for m in asynchronous.memories]

    sync_ids, async_ids = asyncio.run(both())
    assert len(sync_ids) == 6
    assert async_ids == sync_ids
