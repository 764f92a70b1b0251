"""The recall and retain plans driven without a database, from recorded rows."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from shared_core.config import EngineConfig
from shared_core.models import Models
from shared_core.recall.arms import ScoredRow
from shared_core.recall.hydrate import MemoryDetails, MemoryRow
from shared_core.recall.learned import LearnedScorer
from shared_core.recall.options import RecallOptions
from shared_core.recall.pipeline import ARMS, RecallContext, _analyse, recall_plan
from shared_core.recall.rerank import Reranker
from shared_core.recall.settings import RecallSettings
from shared_core.retain.flow import RetainContext, retain_flow
from shared_core.retain.small import SMALL_RETAIN_MAX_UNITS
from shared_core.storage.plan import Collect, Compute, Concurrently, Launch, Query
from shared_core.tokens import default_token_counter
from shared_core.types import TimeWindow
from tests.fakes import FakeScorer, FixedQueryEmbedder, run_recorded, statement_text
from tests.unit.test_rerank import tiny_cross_encoder  # noqa: F401  (a fixture)

NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
A, B, C = (
    "00000000-0000-7000-8000-00000000000a",
    "00000000-0000-7000-8000-00000000000b",
    "00000000-0000-7000-8000-00000000000c",
)


def _row(memory_id: str, text: str, **extra: Any) -> dict[str, Any]:
    row = {
        "id": memory_id,
        "text": text,
        "context": None,
        "fact_type": "world",
        "occurred_start": None,
        "occurred_end": None,
        "mentioned_at": NOW,
        "date_grain": None,
        "tags": [],
        "metadata": {},
        "proof_count": 1,
        "document_id": None,
        "chunk_id": None,
        "similarity": 0.5,
        "piece": 0,
        "pieces": 1,
        "entities": [],
    }
    row.update(extra)
    return row


STORED = {
    A: _row(A, "Alice works at Google."),
    B: _row(B, "Bob lives in Paris."),
    C: _row(C, "Carol plays chess."),
}


def _context(reranker: Any = "none", **settings: Any) -> RecallContext:
    return RecallContext(
        embed_query=FixedQueryEmbedder().embed_query,
        parse_query_dates=None,
        counter=default_token_counter(),
        reranker=Reranker.from_spec(reranker),
        settings=dataclasses.replace(RecallSettings(), **settings),
        now=lambda: NOW,
    )


def _semantic(query: Query, rows: list[dict[str, Any]] | BaseException) -> Any:
    """The recorded semantic rows (id, score) as the statement returns them: the unfiltered
    scan reads each hit's ranking fields too (a MemoryRow, its score the similarity)."""
    if query.row_type is not MemoryRow or isinstance(rows, BaseException):
        return rows
    columns = {f.name for f in dataclasses.fields(MemoryRow)}
    return [{**{k: STORED[r["id"]][k] for k in columns}, "similarity": r["score"]} for r in rows]


def _spread_rows(query: Query, hops: list[dict[str, Any]] | BaseException) -> Any:
    """The recorded hop rows as the one-call spread (migration 0026) returns them, one hop
    deep: each link from an entry point scored entry x weight x boost x decay, as the function
    scores it (the spread's arithmetic itself is tested against the hops in
    tests/integration/test_temporal_spread.py)."""
    if isinstance(hops, BaseException):
        return hops
    p: dict[str, Any] = query.params  # type: ignore[assignment]
    score = dict(zip(p["entries"], p["scores"], strict=True))
    rows = []
    for h in hops:
        if h["from_id"] in score:
            boost = 1.0 if h["link_type"] == "temporal" else p["causal_boost"]
            propagated = score[h["from_id"]] * h["weight"] * boost * p["decay"]
            if propagated > p["min_score"]:
                dates = ("similarity", "occurred_start", "occurred_end", "mentioned_at", "date_grain")
                rows.append({"id": h["id"], "propagated": propagated, **{k: h[k] for k in dates}})
    return rows


def _answer(arms: dict[str, list[dict[str, Any]] | BaseException]):  # type: ignore[no-untyped-def]
    """Rows per arm, recognised by their SQL; hydration from STORED."""

    def answer(query: Query) -> Any:
        text = statement_text(query)
        if "seeds AS MATERIALIZED" in text:
            return arms.get("graph_fallback" if "entity_hits" not in text else "graph", [])
        if "kterms" in text:
            return arms.get("keyword", [])
        if "unnest(%(frontier)" in text:  # sent as %s or %b
            return arms.get("temporal_hop", [])
        if "FROM recall_temporal_spread(" in text:
            return _spread_rows(query, arms.get("temporal_hop", []))
        if "mentioned_at BETWEEN" in text:
            return arms.get("temporal", [])
        if '"embedding"::vector(384)) <=>' in text:
            return _semantic(query, arms.get("semantic", []))
        if (
            "FROM memory_units u\nWHERE u.bank_id = %(bank)s AND u.id = ANY" in text
            or "FROM recall_details(" in text
        ):
            # hydration (ranking fields) and details (returned memories, the recall_details
            # function of migration 0023): the columns the statement's row type reads
            wanted = {str(i) for i in query.params["ids"]}  # type: ignore[index]
            columns = {f.name for f in dataclasses.fields(query.row_type)}  # type: ignore[arg-type]
            return [{k: r[k] for k in columns} for i, r in STORED.items() if i in wanted]
        if "u.embedding <=>" in text:
            return _semantic(query, arms.get("semantic", []))
        if "s.id::text AS seed" in text:
            # the graph's second round: the document neighbours of the reranker's seeds
            return arms.get("neighbours", [])
        raise AssertionError(f"unexpected statement {text[:80]!r}")

    return answer


def test_recall_plan_fuses_the_recorded_arms_and_traces_every_stage() -> None:
    arms = {
        "semantic": [{"id": A, "score": 0.9}, {"id": B, "score": 0.5}],
        "keyword": [{"id": B, "score": 3.0}],
        "graph": [{"id": C, "score": 0.8}],
    }
    result, ops = run_recorded(
        recall_plan(_context(), "Where does Bob live?", RecallOptions(trace=True)), _answer(arms)
    )  # type: ignore[arg-type]
    # keyword (weight 3) puts B first; the keyword statement went out before the query was
    # embedded (it needs no vector), the other arms' first statements launched in one batch
    # after it; while they run, the keyword statement is collected and its hit B hydrated,
    # then they are collected and the graph arm's (seeded by their hits) launched in a second
    # batch; while it runs, the candidates the first round fuses into are hydrated (none
    # left here: the semantic statement read A's and B's rows itself, B was read early), and
    # after fusion the graph's C
    assert [m.id for m in result.memories] == [B, A, C]
    keyword, first, graph = (op for op in ops if isinstance(op, Launch))
    (embedding,) = (i for i, op in enumerate(ops) if isinstance(op, Compute) and op.fn is _analyse)
    assert ops.index(keyword) < embedding
    assert [q.row_type for q in keyword.queries] == [ScoredRow]
    assert "u.search_vector @@ kq.q" in statement_text(keyword.queries[0])
    assert len(first.queries) == 1  # the semantic statement; no window: no temporal statement
    assert "<=>" in statement_text(first.queries[0])
    keyword_collect, first_collect, graph_collect = (op for op in ops if isinstance(op, Collect))
    assert embedding < ops.index(first) < ops.index(keyword_collect) < ops.index(first_collect)
    assert ops.index(first_collect) < ops.index(graph)
    assert len(graph.queries) == 1 and graph.queries == tuple(_graph_queries(ops))
    ahead = [op for op in ops if isinstance(op, Concurrently)]
    # while the graph statement runs: the details of the first round's ranking (A, B), each
    # statement on a connection of its own
    assert [
        (op.queries[0].row_type, sorted(op.queries[0].params["ids"]))  # type: ignore[index]
        for op in ahead
        if ops.index(graph) < ops.index(op) < ops.index(graph_collect)
    ] == [(MemoryDetails, [A, B])]
    hydrations = [
        (i, sorted(q.params["ids"]))  # type: ignore[index]
        for i, q in _statements(ops)
        if q.row_type is MemoryRow and "u.id = ANY" in statement_text(q)
    ]
    # B, the keyword's hit, while the semantic statement runs; C after the graph's collection
    assert hydrations == [(ops.index(keyword_collect) + 1, [B]), (ops.index(graph_collect) + 1, [C])]
    trace = result.trace
    assert trace is not None and trace.time_window_source == "none"
    assert [i for i, _ in trace.arms["semantic"]] == [A, B]
    assert set(trace.timings_ms) >= {
        "query_embedding",
        "date_parsing",
        "arms",
        "seeded_arms",
        "fusion",
        "hydrate",
        "rerank",
        "boosts",
        "token_budget",
        "total",
    }
    assert result.memories[0].scores.arm_ranks == {"semantic": 2, "keyword": 1}


def test_the_first_rounds_candidates_are_hydrated_before_the_graph_statement_is_collected() -> None:
    """B, found by the keyword arm alone, is read while the semantic statement runs (the
    keyword statement, launched before the embedding, is in by then); C, reached by the
    temporal arm's spread alone, between the graph statement's launch and its collection
    (hydration ahead); nothing after fusion. The memories and their order are those of
    hydrating everything after fusion."""
    window = TimeWindow(start=dt.datetime(2024, 5, 1), end=dt.datetime(2024, 5, 31))
    entry, hop = _dated_entry_and_hop()
    arms = {
        "semantic": [{"id": A, "score": 0.9}],
        "keyword": [{"id": B, "score": 3.0}],
        "graph": [],
        "temporal": [entry],
        "temporal_hop": [{**hop, "id": C}],
    }
    result, ops = run_recorded(
        recall_plan(_context(), "Where does Bob live?", RecallOptions(trace=True, temporal_window=window)),
        _answer(arms),
    )  # type: ignore[arg-type]
    (graph,) = _graph_queries(ops)
    launch = next(i for i, op in enumerate(ops) if isinstance(op, Launch) and graph in op.queries)
    collect = next(i for i, op in enumerate(ops) if isinstance(op, Collect) and i > launch)
    first = next(
        i for i, op in enumerate(ops) if isinstance(op, Launch) and "<=>" in statement_text(op.queries[0])
    )
    keyword_collect, first_collect = (i for i, op in enumerate(ops) if isinstance(op, Collect) and i < launch)
    hydrations = [
        (i, sorted(q.params["ids"]))  # type: ignore[index]
        for i, q in _statements(ops)
        if q.row_type is MemoryRow and "u.id = ANY" in statement_text(q)
    ]
    assert first < keyword_collect < first_collect
    assert [ids for _, ids in hydrations] == [[B], [C]]
    assert keyword_collect < hydrations[0][0] < first_collect
    assert launch < hydrations[1][0] < collect
    assert result.trace is not None
    assert list(dict(result.trace.arms["temporal"])) == [A, C]
    assert {"hydrate_early", "hydrate_ahead", "seeded_arms", "hydrate"} <= set(result.trace.timings_ms)
    assert {m.id for m in result.memories} == {A, B, C}


@pytest.mark.parametrize(("graph_rows", "fusions"), [([], 1), ([{"id": C, "score": 0.8}], 2)])
def test_fusion_ahead_is_reused_when_the_graph_adds_no_hit(
    monkeypatch: pytest.MonkeyPatch, graph_rows: list[dict[str, Any]], fusions: int
) -> None:
    """The candidates fused ahead of the graph's rows are the final ones when it found
    nothing: fused once; with a graph hit, fused again (and C is among the memories)."""
    import shared_core.recall.pipeline as pipeline

    calls: list[int] = []
    fuse = pipeline.reciprocal_rank_fusion

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return fuse(*args, **kwargs)

    monkeypatch.setattr(pipeline, "reciprocal_rank_fusion", counted)
    arms = {"semantic": [{"id": A, "score": 0.9}], "keyword": [{"id": B, "score": 3.0}], "graph": graph_rows}
    result, _ = run_recorded(
        recall_plan(_context(), "Where does Bob live?", RecallOptions(trace=True)), _answer(arms)
    )  # type: ignore[arg-type]
    assert len(calls) == fusions
    assert [m.id for m in result.memories] == [B, A, *(r["id"] for r in graph_rows)]


def test_a_model_reranker_does_not_rank_ahead() -> None:
    """The learned reranker's scoring (and its neighbours statement) would be wasted whenever
    the graph adds a hit: nothing is ranked or read for details before the graph's rows."""
    arms = {"semantic": [{"id": A, "score": 0.9}], "keyword": [{"id": B, "score": 3.0}], "graph": []}
    result, ops = run_recorded(
        recall_plan(_context("learned"), "Where does Bob live?", RecallOptions(trace=True)), _answer(arms)
    )  # type: ignore[arg-type]
    collect = max(i for i, op in enumerate(ops) if isinstance(op, Collect))
    assert [i for i, q in _statements(ops) if q.row_type is MemoryDetails and i < collect] == []
    assert result.trace is not None and "rank_ahead" not in result.trace.timings_ms
    assert [m.id for m in result.memories] == [B, A]


@pytest.mark.parametrize("reranker", ["none"])
def test_the_ranking_ahead_is_the_ranking_when_the_graph_adds_no_hit(reranker: str) -> None:
    """The first round's candidates are ranked, and their details read, while the graph
    statement runs; when it adds no hit that ranking is returned: no statement after the
    graph's collection. With a graph hit, it is ranked again and only the new memory's details
    are read."""
    arms = {"semantic": [{"id": A, "score": 0.9}], "keyword": [{"id": B, "score": 3.0}], "graph": []}
    result, ops = run_recorded(
        recall_plan(_context(reranker), "Where does Bob live?", RecallOptions(trace=True)), _answer(arms)
    )  # type: ignore[arg-type]
    (graph,) = _graph_queries(ops)
    launch = next(i for i, op in enumerate(ops) if isinstance(op, Launch) and graph in op.queries)
    collect = next(i for i, op in enumerate(ops) if isinstance(op, Collect) and i > launch)
    details = [i for i, q in _statements(ops) if q.row_type is MemoryDetails]
    assert len(details) == 1 and launch < details[0] < collect
    assert not [op for op in ops[collect + 1 :] if isinstance(op, (Query, Launch, Concurrently))]
    # every statement on a pooled connection of its own: the plan never opened its own
    assert not [op for op in ops if isinstance(op, Query)]
    assert [m.id for m in result.memories] == [B, A]
    assert result.trace is not None
    assert {"rank_ahead", "rerank", "boosts", "token_budget", "details"} <= set(result.trace.timings_ms)
    # with the graph's hit C (fused last) the ranking runs again
    with_hit, ops = run_recorded(
        recall_plan(_context(reranker), "Where does Bob live?", RecallOptions(trace=True)),
        _answer({**arms, "graph": [{"id": C, "score": 0.8}]}),
    )  # type: ignore[arg-type]
    assert [m.id for m in with_hit.memories] == [B, A, C]
    # after the graph's collection: C hydrated, then the details of C alone
    collect = max(i for i, op in enumerate(ops) if isinstance(op, Collect))
    after = [(q.row_type, q.params["ids"]) for i, q in _statements(ops) if i > collect]  # type: ignore[index]
    assert [(t, [str(i) for i in ids]) for t, ids in after if t in (MemoryRow, MemoryDetails)] == [
        (MemoryRow, [C]),
        (MemoryDetails, [C]),
    ]


def test_graph_timeout_falls_back_to_links_and_says_so() -> None:
    arms = {
        "semantic": [{"id": A, "score": 0.9}],
        "graph": psycopg.errors.QueryCanceled("timeout"),
        "graph_fallback": [{"id": C, "score": 0.7}],
    }
    result, _ = run_recorded(
        recall_plan(_context(), "chess?", RecallOptions(trace=True, arms=["semantic", "graph"])),
        _answer(arms),
    )  # type: ignore[arg-type]
    assert result.trace is not None
    assert [i for i, _ in result.trace.arms["graph"]] == [C]
    assert any("graph arm timed out" in n for n in result.trace.notes)
    assert "graph_fallback" in result.trace.timings_ms


def _statements(ops: list[Any]) -> list[tuple[int, Query]]:
    """Every statement the plan ran by itself, with its operation's index: on the plan's own
    connection (a Query) or on one of its own (a Concurrently of one: what a recall reads while
    its graph statement runs)."""
    return [
        (i, q)
        for i, op in enumerate(ops)
        for q in ((op,) if isinstance(op, Query) else op.queries if isinstance(op, Concurrently) else ())
        if isinstance(op, Query) or len(op.queries) == 1
    ]


def _graph_queries(ops: list[Any]) -> list[Query]:
    return [
        q
        for op in ops
        if isinstance(op, Concurrently | Launch)
        for q in op.queries
        if "seeds AS MATERIALIZED" in statement_text(q)
    ]


def test_the_graph_arm_starts_from_the_semantic_and_keyword_hits() -> None:
    """Seeds: the semantic hits at or above the seed similarity (their links followed too)
    and the keyword hits; the graph statement goes out once they are in, and its rows are the
    arm's hits."""
    arms = {
        "semantic": [{"id": A, "score": 0.9}, {"id": B, "score": 0.2}],  # B: below the seed cut
        "keyword": [{"id": B, "score": 3.0}],
        "graph": [{"id": C, "score": 0.8}],
    }
    result, ops = run_recorded(
        recall_plan(_context(graph_seed_min_similarity=0.3), "chess?", RecallOptions(trace=True)),
        _answer(arms),
    )  # type: ignore[arg-type]
    (graph,) = _graph_queries(ops)
    assert graph.params is not None
    assert dict(zip(graph.params["seed_ids"], graph.params["seed_mass"], strict=True)) == {A: 1.0, B: 1.0}
    assert graph.params["link_seeds"] == [A]
    assert result.trace is not None
    assert [i for i, _ in result.trace.arms["graph"]] == [C]
    assert ops.index(next(op for op in ops if isinstance(op, Concurrently))) < ops.index(
        next(op for op in ops if isinstance(op, Concurrently | Launch) and graph in op.queries)
    )


def test_the_graph_arm_alone_runs_its_seed_arms_without_reporting_them() -> None:
    arms = {
        "semantic": [{"id": A, "score": 0.9}],
        "keyword": [{"id": B, "score": 3.0}],
        "graph": [{"id": C, "score": 0.8}],
    }
    result, ops = run_recorded(
        recall_plan(_context(), "chess?", RecallOptions(trace=True, arms=["graph"])), _answer(arms)
    )  # type: ignore[arg-type]
    assert _graph_queries(ops)
    assert [m.id for m in result.memories] == [C]
    assert result.trace is not None
    assert result.trace.arms["semantic"] == [] and result.trace.arms["keyword"] == []


def test_with_nothing_to_spread_from_the_graph_arm_sends_no_statement() -> None:
    """No semantic seed, no keyword hit, no words that could name an entity."""
    result, ops = run_recorded(
        recall_plan(_context(), "???", RecallOptions(trace=True)), _answer({"semantic": []})
    )  # type: ignore[arg-type]
    assert _graph_queries(ops) == []
    assert result.trace is not None and result.trace.arms["graph"] == []


def test_the_arms_an_arm_needs_need_nothing_themselves() -> None:
    """Recall runs arms in two rounds: an arm's needs must all finish in the first."""
    assert any(arm.needs for arm in ARMS.values())
    assert all(not ARMS[need].needs for arm in ARMS.values() for need in arm.needs)


def _dated_entry_and_hop() -> tuple[dict[str, object], dict[str, object]]:
    """A temporal-arm row for A dated inside May 2024, and A's temporal link to undated B."""
    entry = {
        "id": A,
        "similarity": 0.8,
        "occurred_start": dt.datetime(2024, 5, 16, tzinfo=dt.UTC),
        "occurred_end": None,
        "mentioned_at": NOW,
        "date_grain": "day",
    }
    hop = {
        "from_id": A,
        "id": B,
        "link_type": "temporal",
        "weight": 1.0,
        "similarity": 0.5,
        "occurred_start": None,
        "occurred_end": None,
        "mentioned_at": None,
        "date_grain": None,
    }
    return entry, hop


def test_temporal_arm_runs_with_a_window_and_spreads_along_links() -> None:
    window = TimeWindow(start=dt.datetime(2024, 5, 1), end=dt.datetime(2024, 5, 31))
    entry, hop = _dated_entry_and_hop()
    result, _ = run_recorded(
        recall_plan(
            _context(), "what happened?", RecallOptions(trace=True, arms=["temporal"], temporal_window=window)
        ),
        _answer({"temporal": [entry], "temporal_hop": [hop]}),
    )  # type: ignore[arg-type]
    assert result.trace is not None and result.trace.time_window_source == "caller"
    hits = dict(result.trace.arms["temporal"])
    assert list(hits) == [A, B] and hits[A] == pytest.approx(1.0, abs=0.05)
    assert "temporal_spread" in result.trace.timings_ms


def test_the_graph_statement_runs_while_the_temporal_arm_spreads() -> None:
    """The graph arm needs the semantic and keyword hits only: its statement goes out once they
    are in, before the temporal arm's spread, and is collected after it; the results are those
    of the rounds run one after the other. The spread (one call, migration 0026) runs meanwhile
    on a pooled connection of its own (a Concurrently of one), never on the plan's, which would
    be held while the graph statement waits for a pooled one."""
    window = TimeWindow(start=dt.datetime(2024, 5, 1), end=dt.datetime(2024, 5, 31))
    entry, hop = _dated_entry_and_hop()
    arms = {
        "semantic": [{"id": A, "score": 0.9}],
        "keyword": [{"id": B, "score": 3.0}],
        "graph": [{"id": C, "score": 0.8}],
        "temporal": [entry],
        "temporal_hop": [hop],
    }
    result, ops = run_recorded(
        recall_plan(_context(), "chess in May?", RecallOptions(trace=True, temporal_window=window)),
        _answer(arms),
    )  # type: ignore[arg-type]
    (graph,) = _graph_queries(ops)
    launch = next(i for i, op in enumerate(ops) if isinstance(op, Launch) and graph in op.queries)
    hops = [
        i
        for i, op in enumerate(ops)
        if isinstance(op, Concurrently)
        and len(op.queries) == 1
        and "FROM recall_temporal_spread(" in statement_text(op.queries[0])
    ]
    collect = next(i for i, op in enumerate(ops) if isinstance(op, Collect) and i > launch)
    assert hops and launch < hops[0] and hops[-1] < collect
    # Nothing on the plan's own connection before the graph statement is collected.
    assert not any(isinstance(op, Query) for op in ops[:collect])
    assert result.trace is not None
    assert [i for i, _ in result.trace.arms["graph"]] == [C]
    assert list(dict(result.trace.arms["temporal"])) == [A, B]
    assert {"temporal_spread", "seeded_arms"} <= set(result.trace.timings_ms)


def test_retain_flow_writes_everything_in_one_plan() -> None:
    models = Models(embedder=FixedQueryEmbedder(), token_counter=default_token_counter())
    config = EngineConfig(extract_dates=False, extract_entities=False)
    context = RetainContext(models=models, config=config, now=lambda: NOW)

    def answer(query: Query) -> Any:
        text = statement_text(query)
        if "SELECT embedding_model, embedding_dimension FROM banks" in text:
            return [{"embedding_model": FixedQueryEmbedder.model_name, "embedding_dimension": 384}]
        return []

    # More items than the small path takes (retain/small.py): the batch plan's staging table.
    texts = ["Alice works at Google.", "Bob skis.", *(f"Note {i}." for i in range(SMALL_RETAIN_MAX_UNITS))]
    ids, ops = run_recorded(retain_flow(context, texts, bank="unit"), answer)
    assert len(ids) == len(texts) and ids[0] < ids[1]
    statements = [statement_text(op) for op in ops if isinstance(op, Query)]
    assert any("INSERT INTO banks" in s for s in statements)
    stage = next(op for op in ops if type(op).__name__ == "Copy" and op.rows and len(op.rows[0]) == 17)
    assert [row[1] for row in stage.rows] == texts
    assert np.allclose(np.linalg.norm(stage.rows[0][3]), 1.0)


# --- which reranker ran, and the settings that go with it (issue 11, items 1 and 5) ------------
_ARMS = {
    "semantic": [{"id": A, "score": 0.9}, {"id": B, "score": 0.5}],
    "keyword": [{"id": C, "score": 3.0}],
}


def _recall(reranker: Any) -> Any:
    result, _ = run_recorded(
        recall_plan(_context(reranker), "Who plays chess?", RecallOptions(trace=True)), _answer(_ARMS)
    )  # type: ignore[arg-type]
    return result


def test_learned_reranker_gives_calibrated_scores_and_is_named_in_the_trace() -> None:
    result = _recall("learned")
    assert result.trace.reranker == "learned"
    assert {m.id for m in result.memories} == {A, B, C}
    assert all(0.0 <= m.score <= 1.0 for m in result.memories)
    for m in result.memories:
        # no boost on top: the score is the model's probability
        assert m.scores.recency_boost == m.scores.temporal_boost == m.scores.proof_boost == 1.0
        assert m.score == m.scores.reranker
    # the keyword arm's weight (3) still shapes the fused list the model reads
    assert result.trace.fusion[0] == (C, 3 / 61)


def _neighbour_lookups(ops: list[Any]) -> list[Query]:
    return [q for _, q in _statements(ops) if "s.id::text AS seed" in statement_text(q)]


def test_the_learned_reranker_looks_up_the_document_neighbours_of_its_first_stage_seeds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # three candidates: all of them are seeds (the five best), so no mark changes a score here
    options = RecallOptions(trace=True)
    # a seed is looked up only when another candidate (not a seed) shares its document: every
    # candidate being a seed here, as though two shared one with a third that is not
    import shared_core.recall.pipeline as pipeline

    monkeypatch.setattr(
        pipeline, "_seeds_sharing_a_document", lambda cut, rows, seeds: [cut[i].id for i in seeds]
    )
    result, ops = run_recorded(recall_plan(_context("learned"), "Who plays chess?", options), _answer(_ARMS))  # type: ignore[arg-type]
    (lookup,) = _neighbour_lookups(ops)
    scorer = LearnedScorer.default()
    assert set(lookup.params["ids"]) == {A, B, C}  # type: ignore[index]
    assert lookup.params["window"] == scorer.neighbour_window  # type: ignore[index]
    monkeypatch.undo()
    # as they are: no candidate has a document, so no neighbour can be marked, and none is read
    unread, ops = run_recorded(recall_plan(_context("learned"), "Who plays chess?", options), _answer(_ARMS))  # type: ignore[arg-type]
    assert _neighbour_lookups(ops) == []
    assert [(m.id, m.score) for m in unread.memories] == [(m.id, m.score) for m in result.memories]
    again, _ = run_recorded(
        recall_plan(_context("learned", graph_neighbours=False), "Who plays chess?", options), _answer(_ARMS)
    )  # type: ignore[arg-type]
    assert [m.score for m in again.memories] == [m.score for m in result.memories]
    for context, opts in (
        (_context("learned", graph_neighbours=False), options),
        (_context("learned"), RecallOptions(trace=True, arms=("semantic", "keyword", "temporal"))),
        (_context("none"), options),
    ):
        _, ops = run_recorded(recall_plan(context, "Who plays chess?", opts), _answer(_ARMS))  # type: ignore[arg-type]
        assert _neighbour_lookups(ops) == []


def test_a_cross_encoder_switches_arm_weights_and_boosts() -> None:
    scorer = FakeScorer([0.0, 0.0, 0.0])
    result = _recall(scorer)
    assert result.trace.reranker == "fake-ce"
    # every arm weighted 1 with a cross-encoder: C's keyword hit counts 1/61, not 3/61
    assert dict(result.trace.fusion)[C] == 1 / 61
    # recency alpha 0.2 (memories said at query time: recency 1 -> boost 1 + 0.2 x 0.5)
    assert {m.scores.recency_boost for m in result.memories} == {1.1}
    # passthrough keeps the gentler recency tuned for it
    passthrough = _recall("none")
    assert {m.scores.recency_boost for m in passthrough.memories} == {1.025}


def test_the_cross_encoder_sees_event_dates_only() -> None:
    occurred = dt.datetime(2022, 6, 5, tzinfo=dt.UTC)
    STORED[A] = _row(A, "Alice works at Google.", occurred_start=occurred)
    try:
        scorer = FakeScorer([0.0, 0.0, 0.0])
        _recall(scorer)
        documents = {doc for pairs, _ in scorer.calls for _, doc in pairs}
        # A happened on a known day; B and C were only said (mentioned_at): no date for them
        assert documents == {
            "[Date: June 05, 2022 (2022-06-05)] Alice works at Google.",
            "Bob lives in Paris.",
            "Carol plays chess.",
        }
    finally:
        STORED[A] = _row(A, "Alice works at Google.")


def test_a_real_tiny_cross_encoder_gets_the_cross_encoder_profile(tiny_cross_encoder: Path) -> None:  # noqa: F811
    spec = str(tiny_cross_encoder)
    result = _recall(spec)
    assert result.trace.reranker == spec
    assert dict(result.trace.fusion)[C] == 1 / 61
    assert all(m.scores.reranker_raw is not None for m in result.memories)
    assert {m.scores.recency_boost for m in result.memories} == {1.1}


def test_the_semantic_hits_are_not_hydrated_again() -> None:
    """The unfiltered semantic statement reads its hits' ranking fields: hydration reads only
    what the other arms alone found, and nothing at all when the cut is the semantic hits."""
    semantic = [{"id": A, "score": 0.9}, {"id": B, "score": 0.5}]
    for arms, hydrated in (
        ({"semantic": semantic}, []),
        ({"semantic": semantic, "keyword": [{"id": C, "score": 2.0}]}, [[C]]),
    ):
        result, ops = run_recorded(
            recall_plan(
                _context(), "Where does Bob live?", RecallOptions(trace=True, arms=["semantic", "keyword"])
            ),
            _answer(arms),
        )  # type: ignore[arg-type]
        # on the plan's connection or one of its own (C, the keyword's, beside the semantic statement)
        hydrations = [q for _, q in _statements(ops) if "u.embedding <=> %(qvec)s" in statement_text(q)]
        assert [sorted(q.params["ids"]) for q in hydrations] == hydrated  # type: ignore[index]
        by_id = {m.id: m for m in result.memories}
        assert {A, B} <= set(by_id)
        # the ranking fields as hydration would have read them; the similarity is the score
        assert (by_id[A].text, by_id[A].similarity, by_id[B].similarity) == (STORED[A]["text"], 0.9, 0.5)


def test_details_are_read_for_the_returned_memories_only() -> None:
    """Tags, metadata, document pieces and entity names cost a JSON parse and an entity lookup
    per row: they are read for what the token cut keeps, not for every fused candidate."""
    saved = dict(STORED)
    STORED[A] = _row(A, "Alice works at Google.", tags=["work"], metadata={"src": "hr"}, entities=["Alice"])
    STORED[B] = _row(
        B, "Bob lives in Paris.", document_id="doc", piece=1, pieces=2, entities=["Bob", "Paris"]
    )
    try:
        arms = {
            "semantic": [{"id": A, "score": 0.9}, {"id": B, "score": 0.5}],
            "keyword": [{"id": B, "score": 3.0}],
            "graph": [{"id": C, "score": 0.8}],
        }
        # 6 tokens: "Bob lives in Paris." fits, Alice's memory does not
        result, ops = run_recorded(
            recall_plan(_context(), "Where does Bob live?", RecallOptions(max_tokens=6, trace=True)),
            _answer(arms),
        )  # type: ignore[arg-type]
        hydrations = [
            q
            for _, q in _statements(ops)
            if any(s in statement_text(q) for s in ("u.id = ANY", "recall_details("))
        ]
        # the keyword's hit B read while the semantic statement runs (its rows unknown then);
        # details the memory the cut kept, read once: with the ranking ahead of the graph's rows
        # (while its statement runs), whose cut kept B too; then hydration reads the graph's C
        # only (the semantic statement read A and B whole)
        assert [(q.row_type, sorted(q.params["ids"])) for q in hydrations] == [  # type: ignore[index]
            (MemoryRow, [B]),
            (MemoryDetails, [B]),
            (MemoryRow, [C]),
        ]
        (bob,) = result.memories
        assert (bob.id, bob.entities, bob.document_id, bob.piece, bob.pieces) == (
            B,
            ("Bob", "Paris"),
            "doc",
            1,
            2,
        )
        assert result.trace is not None and "details" in result.trace.timings_ms
        # with room for all: each memory carries its own details
        full, _ = run_recorded(
            recall_plan(_context(), "Where does Bob live?", RecallOptions(trace=True)), _answer(arms)
        )  # type: ignore[arg-type]
        alice = next(m for m in full.memories if m.id == A)
        assert (alice.tags, dict(alice.metadata), alice.entities) == (("work",), {"src": "hr"}, ("Alice",))
    finally:
        STORED.clear()
        STORED.update(saved)
