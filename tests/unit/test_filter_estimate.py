"""A filtered recall asks the planner how many memories its filter matches before the arms
start; the semantic arm skips its capped exact read when the estimate says the cap would be
passed anyway (issue 13: `tags` in the default `any` mode let 39,699 of 100k through)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from shared_core.config import DEFAULT_FILTER_WALK_HITS
from shared_core.errors import ConfigurationError
from shared_core.recall.arms import ArmQuery
from shared_core.recall.arms.semantic import (
    EXACT_SKIP_ESTIMATE,
    FILTER_INDEX_MIN_ESTIMATE,
    filter_index_prefix,
    walks_filter,
)
from shared_core.recall.arms.temporal import TEMPORAL
from shared_core.recall.filters import compile_filter
from shared_core.recall.hydrate import HYDRATE
from shared_core.recall.options import RecallOptions
from shared_core.recall.pipeline import recall_plan
from shared_core.recall.settings import RecallSettings
from shared_core.storage.plan import Concurrently, Launch, Operation, Pipeline, Query
from shared_core.types import FACT_TYPES
from tests.fakes import run_recorded, statement_text
from tests.unit.test_plans import A, B, _answer, _context

ARMS: dict[str, list[dict[str, Any]] | BaseException] = {
    "semantic": [{"id": A, "score": 0.9}, {"id": B, "score": 0.5}],
    "keyword": [{"id": B, "score": 3.0}],
}


def _explains(query: Query) -> bool:
    return statement_text(query).lstrip().startswith("EXPLAIN")


def _estimating(estimate: float, *, declared: str | None = None) -> Callable[[Query], Any]:
    """Recorded rows, plus ``estimate`` as the planner's row estimate of any EXPLAIN; ``declared``
    the name of an index declared for the bank's filter, which the planner would walk."""
    recorded = _answer(ARMS)

    def answer(query: Query) -> Any:
        text = statement_text(query)
        if "pg_class" in text:
            return [{"yes": declared is not None}]
        if _explains(query) and "ORDER BY" in text:
            scan = {"Node Type": "Index Scan", "Index Name": declared or "memory_units_embedding_d384"}
            return [{"QUERY PLAN": [{"Plan": {"Node Type": "Limit", "Plans": [scan]}}]}]
        if _explains(query):
            return [{"QUERY PLAN": [{"Plan": {"Node Type": "Bitmap Heap Scan", "Plan Rows": estimate}}]}]
        return recorded(query)

    return answer


def _plan_questions(ops: list[Operation]) -> list[str]:
    """The statements asking the planner which index a filtered scan would walk."""
    return [
        text for op in ops for q in _queries(op) if _explains(q) and "ORDER BY" in (text := statement_text(q))
    ]


def _queries(op: Operation) -> tuple[Query, ...]:
    """The statements ``op`` runs, wherever it runs them."""
    if isinstance(op, Query):
        return (op,)
    return op.queries if isinstance(op, Concurrently | Launch | Pipeline) else ()


def _estimate_ops(ops: list[Operation]) -> list[int]:
    """Where the planner's estimate runs: a Concurrently of one, on a pooled connection of its
    own, never the plan's (held to the plan's end, it would be held while the graph statement
    waits for a pooled one: a stall with more recalls than the pool has connections)."""
    assert not any(isinstance(op, Query) and _explains(op) for op in ops)
    return [i for i, op in enumerate(ops) if any(_explains(q) for q in _queries(op))]


def _first_round(ops: list[Operation]) -> int:
    """Where the first round's vector statements start (launched beside the keyword arm's
    early hits, or run together): the first batch reading by distance that is neither the
    planner's estimate nor a hydration of known ids."""
    return next(
        i
        for i, op in enumerate(ops)
        if isinstance(op, Concurrently | Launch)
        and not any(_explains(q) for q in op.queries)
        and any(_is_arm_by_distance(q) for q in op.queries)
    )


def _is_arm_by_distance(query: Query) -> bool:
    return "<=>" in (text := statement_text(query)) and text != HYDRATE


def _semantic(ops: list[Operation]) -> str:
    """The semantic arm's statement, from the first round of arms."""
    first = ops[_first_round(ops)]
    return next(statement_text(q) for q in first.queries if _is_arm_by_distance(q))


@pytest.mark.parametrize("options", [{"tags": ["travel"]}, {"filter": {"team": "er"}}, {"types": ["world"]}])
def test_a_filter_expected_to_match_many_memories_goes_straight_to_the_hnsw_scan(
    options: dict[str, Any],
) -> None:
    result, ops = run_recorded(
        recall_plan(_context(), "Where does Bob live?", RecallOptions(trace=True, **options)),
        _estimating(EXACT_SKIP_ESTIMATE + 1),
    )
    estimates = _estimate_ops(ops)
    # One estimate, on a pooled connection of its own, before any arm starts.
    assert len(estimates) == 1 and estimates[0] < _first_round(ops)
    (estimate,) = [q for q in _queries(ops[estimates[0]]) if _explains(q)]
    explained = statement_text(estimate)
    assert "SELECT 1 FROM memory_units u" in explained and "ANALYZE" not in explained
    semantic = _semantic(ops)
    # The HNSW scan with the filter, without the capped exact read before it.
    assert "few" not in semantic and "matching" not in semantic
    assert [m.id for m in result.memories] == [B, A]
    trace = result.trace
    assert trace is not None and "filter_estimate" in trace.timings_ms
    assert f"semantic: about {EXACT_SKIP_ESTIMATE + 1:,} memories match the filter (planner): HNSW scan" in (
        trace.notes
    )


def test_a_filter_expected_to_match_few_memories_tries_the_exact_ranking() -> None:
    # At the threshold and below (a low estimate is harmless: the statement counts itself).
    for estimate in (EXACT_SKIP_ESTIMATE, 10):
        result, ops = run_recorded(
            recall_plan(_context(), "Where does Bob live?", RecallOptions(trace=True, tags=["travel"])),
            _estimating(estimate),
        )
        assert "few" in _semantic(ops)
        assert result.trace is not None and not any("planner" in note for note in result.trace.notes)


# The broad-filter walk is opt-in (RecallSettings.filter_walk_min_estimate, None by default).
WALK = 8_000


def test_with_the_walk_on_a_filter_below_its_threshold_is_still_ranked_exactly() -> None:
    for estimate in (WALK - 1, 10):
        result, ops = run_recorded(
            recall_plan(
                _context(filter_walk_min_estimate=WALK),
                "Where does Bob live?",
                RecallOptions(trace=True, tags=["travel"]),
            ),
            _estimating(estimate),
        )
        assert "few" in _semantic(ops)
        assert result.trace is not None and not any("planner" in note for note in result.trace.notes)


def _semantic_query(ops: list[Operation]) -> Query:
    first = ops[_first_round(ops)]
    return next(q for q in first.queries if _is_arm_by_distance(q))


@pytest.mark.parametrize("estimate", [WALK, EXACT_SKIP_ESTIMATE])
@pytest.mark.parametrize("budget", ["mid", "high", "low"])
def test_a_broad_filter_walks_the_index_for_fewer_hits(estimate: int, budget: str) -> None:
    """A filter the planner expects to match many memories (but not more than the skip
    threshold) walks the bank's HNSW index for max(filter_walk_hits, n // 3) hits, at most n,
    instead of reading every match; the temporal arm keeps its exact ranking of the filter's
    dated memories (its walk past the date test costs more than the read)."""
    options = RecallOptions(trace=True, filter={"team": "er"}, budget=budget)
    result, ops = run_recorded(
        recall_plan(_context(filter_walk_min_estimate=WALK), "Where does Bob live?", options),
        _estimating(float(estimate)),
    )
    query = _semantic_query(ops)
    semantic = statement_text(query)
    assert isinstance(query.params, dict)
    assert "few" not in semantic and "matching" not in semantic
    # The filter, in the walk's own WHERE (the scan tests each row it visits).
    assert '"metadata" @? %(mf_0)s' in semantic and query.params["mf_0"] == '$."team" ? (@ == "er")'
    n = {"low": 100, "mid": 300, "high": 1000}[budget]
    hits = min(n, max(DEFAULT_FILTER_WALK_HITS, n // 3))
    assert query.params["n"] == hits
    assert result.trace is not None
    assert (
        f"semantic: about {estimate:,} memories match the filter (planner): HNSW scan of the top {hits}"
        in result.trace.notes
    )
    # A "when" question's dated evidence is still ranked exactly under the filter.
    q = ArmQuery(
        bank="b",
        vector=np.ones(384, np.float32),
        words=(),
        bigrams=(),
        types=FACT_TYPES,
        tags=None,
        tags_match="any",
        n=n,
        window=None,
        settings=RecallSettings(filter_walk_min_estimate=WALK),
        filter=compile_filter({"team": "er"}),
        asks_when=True,
        matching_estimate=float(estimate),
    )
    assert walks_filter(q)
    dated = TEMPORAL.start(q)
    assert dated is not None and "few" in statement_text(dated)


def test_the_walk_is_off_by_default_and_with_a_declared_index() -> None:
    assert RecallSettings().filter_walk_min_estimate is None
    options = RecallOptions(trace=True, filter={"team": "er"})
    _, ops = run_recorded(
        recall_plan(_context(), "Where does Bob live?", options), _estimating(float(EXACT_SKIP_ESTIMATE))
    )
    assert "few" in _semantic(ops)
    declared = filter_index_prefix("default") + "0123456789abcdef"
    result, ops = run_recorded(
        recall_plan(_context(filter_walk_min_estimate=WALK), "Where does Bob live?", options),
        _estimating(float(WALK), declared=declared),
    )
    query = _semantic_query(ops)
    assert isinstance(query.params, dict) and query.params["n"] == 300  # the declared walk's own n
    assert result.trace is not None
    assert f"semantic: the filter's declared index {declared}: HNSW scan" in result.trace.notes


@pytest.mark.parametrize("settings", [{"filter_walk_hits": 0}, {"filter_walk_min_estimate": -1}])
def test_the_walk_settings_are_checked(settings: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match="filter_walk"):
        RecallSettings(**settings)


def test_an_unfiltered_recall_asks_for_no_estimate() -> None:
    result, ops = run_recorded(
        recall_plan(_context(), "Where does Bob live?", RecallOptions(trace=True)), _estimating(10**9)
    )
    assert not _estimate_ops(ops)
    assert "few" not in _semantic(ops)
    assert result.trace is not None and "filter_estimate" not in result.trace.timings_ms


def test_the_keyword_arm_alone_asks_for_no_estimate() -> None:
    _, ops = run_recorded(
        recall_plan(_context(), "Where does Bob live?", RecallOptions(tags=["travel"], arms=["keyword"])),
        _estimating(10**9),
    )
    assert not _estimate_ops(ops)


def test_the_estimate_reads_every_test_as_the_planner_estimates_it() -> None:
    """The arms run ``$ne``'s key test as ``jsonb_path_exists`` (out of the GIN index's scans:
    it cannot narrow by it); the planner's estimate, which decides the exact attempt, still reads
    it as ``@?`` (sample-based), so the decision is the one the filter always had."""
    _, ops = run_recorded(
        recall_plan(_context(), "Where does Bob live?", RecallOptions(filter={"team": {"$ne": "er"}})),
        _estimating(10.0),
    )
    explained = next(statement_text(q) for op in ops for q in _queries(op) if _explains(q))
    assert explained.count("@?") == 2 and "jsonb_path_exists" not in explained
    semantic = _semantic(ops)
    assert "jsonb_path_exists" in semantic and semantic.count("@?") == 2  # NOT @? (the values)


def test_a_bank_without_a_declared_index_never_asks_which_index_the_planner_would_walk() -> None:
    """Whether the bank has a declared index is read in the estimate's own round trip; without
    one, a broad filter's recall asks the planner nothing more (no second round trip)."""
    result, ops = run_recorded(
        recall_plan(_context(), "Where does Bob live?", RecallOptions(trace=True, filter={"team": "er"})),
        _estimating(FILTER_INDEX_MIN_ESTIMATE + 1),
    )
    assert not _plan_questions(ops)
    (estimate,) = _estimate_ops(ops)
    assert any("pg_class" in statement_text(q) for q in _queries(ops[estimate]))
    assert "few" in _semantic(ops)
    assert result.trace is not None and not any("declared" in note for note in result.trace.notes)


def test_a_broad_filter_with_a_declared_index_walks_it() -> None:
    declared = filter_index_prefix("default") + "0123456789abcdef"
    result, ops = run_recorded(
        recall_plan(_context(), "Where does Bob live?", RecallOptions(trace=True, filter={"team": "er"})),
        _estimating(FILTER_INDEX_MIN_ESTIMATE + 1, declared=declared),
    )
    assert len(_plan_questions(ops)) == 1
    semantic = _semantic(ops)
    assert "few" not in semantic and "matching" not in semantic
    assert result.trace is not None
    assert f"semantic: the filter's declared index {declared}: HNSW scan" in result.trace.notes


def test_a_narrow_filter_is_ranked_exactly_even_with_a_declared_index() -> None:
    declared = filter_index_prefix("default") + "0123456789abcdef"
    _, ops = run_recorded(
        recall_plan(_context(), "Where does Bob live?", RecallOptions(filter={"team": "er"})),
        _estimating(FILTER_INDEX_MIN_ESTIMATE - 1, declared=declared),
    )
    assert not _plan_questions(ops)
    assert "few" in _semantic(ops)
