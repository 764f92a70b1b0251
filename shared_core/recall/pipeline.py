"""The recall plan: analyse → four arms → RRF → rerank → boosts → budgets, with a trace.

Pure stages live in their own modules (fusion, boosts, budget, rerank, temporal, query); this
module only sequences them around the I/O, as a sans-I/O plan that the sync and async
runners share.
"""

from __future__ import annotations

import datetime as _dt
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import psycopg

from shared_core.config import (
    DEFAULT_ARM_WEIGHTS,
    DEFAULT_BM25_B,
    DEFAULT_BM25_K1,
    DEFAULT_GRAPH_MIN_SCORE,
    DEFAULT_GRAPH_PER_ENTITY_LIMIT,
    DEFAULT_GRAPH_SEED_LIMIT,
    DEFAULT_GRAPH_SEED_MIN_SIMILARITY,
    DEFAULT_GRAPH_SEMANTIC_LINK_FACTOR,
    DEFAULT_GRAPH_TIMEOUT_MS,
    DEFAULT_KEYWORD_BANK_MAX_DF,
    DEFAULT_KEYWORD_BANK_MIN_ROWS,
    DEFAULT_KEYWORD_MAX_POSTINGS,
    DEFAULT_KEYWORD_MAX_TERMS,
    DEFAULT_KEYWORD_RANKING,
    DEFAULT_MAX_QUERY_TOKENS,
    DEFAULT_RERANK_BATCH_SIZE,
    DEFAULT_RERANK_MAX_CANDIDATES,
    DEFAULT_RRF_K,
    DEFAULT_SEMANTIC_MIN_SIMILARITY,
    DEFAULT_TEMPORAL_BUCKETS,
    DEFAULT_TEMPORAL_DECAY,
    DEFAULT_TEMPORAL_ENTRY_POINTS,
    DEFAULT_TEMPORAL_ENTRY_POOL,
    DEFAULT_TEMPORAL_MIN_SIMILARITY,
)
from shared_core.errors import ConfigurationError, InvalidQueryError
from shared_core.protocols import TokenCounter
from shared_core.recall import sql as q
from shared_core.recall.boosts import BoostConfig, BoostInput, apply_boosts
from shared_core.recall.budget import chunk_fill, resolve_budget, token_cut
from shared_core.recall.fusion import ArmHit, FusedCandidate, reciprocal_rank_fusion
from shared_core.recall.query import (
    KEYWORD_RANKINGS,
    KeywordRanking,
    bound_query,
    check_tags,
    check_types,
    keyword_terms,
)
from shared_core.recall.rerank import Reranker, format_document
from shared_core.recall.temporal import DatedHit, select_entry_points, temporal_proximity
from shared_core.storage.plan import Compute, Concurrently, Plan, Query
from shared_core.types import (
    ARM_NAMES,
    ArmName,
    RecalledMemory,
    RecallResult,
    RecallTrace,
    TimeWindow,
    as_utc,
)

__all__ = ["RecallOptions", "RecallSettings", "recall_plan"]

_CAUSAL_BOOST = 2.0
_TEMPORAL_MAX_DEPTH = 3
_TEMPORAL_FANOUT = 10
_TEMPORAL_MIN_SCORE = 0.2
_TEMPORAL_FRONTIER = 20
# A neighbour reached through links but dated outside the window: some temporal evidence.
_NEIGHBOUR_NO_DATE_PROXIMITY = 0.3


def _default_arm_weights() -> dict[ArmName, float]:
    weights: dict[ArmName, float] = {arm: DEFAULT_ARM_WEIGHTS[arm] for arm in ARM_NAMES}
    return weights


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallSettings:
    """Engine-level recall tunables (thresholds calibrated for all-MiniLM-L6-v2)."""

    semantic_min_similarity: float = DEFAULT_SEMANTIC_MIN_SIMILARITY
    graph_seed_limit: int = DEFAULT_GRAPH_SEED_LIMIT
    graph_seed_min_similarity: float = DEFAULT_GRAPH_SEED_MIN_SIMILARITY
    graph_per_entity_limit: int = DEFAULT_GRAPH_PER_ENTITY_LIMIT
    graph_timeout_ms: int = DEFAULT_GRAPH_TIMEOUT_MS
    graph_min_score: float = DEFAULT_GRAPH_MIN_SCORE
    graph_semantic_link_factor: float = DEFAULT_GRAPH_SEMANTIC_LINK_FACTOR
    keyword: KeywordRanking = DEFAULT_KEYWORD_RANKING
    keyword_max_terms: int = DEFAULT_KEYWORD_MAX_TERMS
    keyword_max_postings: int = DEFAULT_KEYWORD_MAX_POSTINGS
    keyword_bank_max_df: float = DEFAULT_KEYWORD_BANK_MAX_DF
    keyword_bank_min_rows: int = DEFAULT_KEYWORD_BANK_MIN_ROWS
    bm25_k1: float = DEFAULT_BM25_K1
    bm25_b: float = DEFAULT_BM25_B
    temporal_min_similarity: float = DEFAULT_TEMPORAL_MIN_SIMILARITY
    temporal_entry_pool: int = DEFAULT_TEMPORAL_ENTRY_POOL
    temporal_entry_points: int = DEFAULT_TEMPORAL_ENTRY_POINTS
    temporal_buckets: int = DEFAULT_TEMPORAL_BUCKETS
    temporal_decay: float = DEFAULT_TEMPORAL_DECAY
    rerank_max_candidates: int = DEFAULT_RERANK_MAX_CANDIDATES
    rerank_batch_size: int = DEFAULT_RERANK_BATCH_SIZE
    rrf_k: int = DEFAULT_RRF_K
    arm_weights: Mapping[ArmName, float] = field(default_factory=_default_arm_weights)
    max_query_tokens: int = DEFAULT_MAX_QUERY_TOKENS
    ts_config: str = "english"
    boosts: BoostConfig = field(default_factory=BoostConfig)

    def __post_init__(self) -> None:
        if self.keyword not in KEYWORD_RANKINGS:
            raise ConfigurationError(f"keyword must be one of {list(KEYWORD_RANKINGS)}, "
                                     f"got {self.keyword!r}")
        if self.bm25_k1 < 0 or not 0 <= self.bm25_b <= 1:
            raise ConfigurationError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got "
                                     f"k1={self.bm25_k1!r}, b={self.bm25_b!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallOptions:
    """One recall call's arguments (validated by :func:`recall_plan`)."""

    query: str
    bank: str
    max_tokens: int
    budget: str
    types: Sequence[str] | None
    tags: Sequence[str] | None
    tags_match: str
    query_timestamp: _dt.datetime | None
    temporal_window: TimeWindow | None
    include_chunks: bool
    max_chunk_tokens: int
    trace: bool
    arms: frozenset[ArmName] = frozenset(ARM_NAMES)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallContext:
    """What the plan needs from the engine: models and settings (no connections)."""

    embed_query: Callable[[str], npt.NDArray[np.float32]]
    parse_query_dates: Callable[[str, _dt.datetime], TimeWindow | None] | None
    counter: TokenCounter
    reranker: Reranker
    settings: RecallSettings
    now: Callable[[], _dt.datetime]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Analysis:
    vector: npt.NDArray[np.float32]
    window: TimeWindow | None
    embed_ms: float
    dates_ms: float


def _analyse(ctx: RecallContext, text: str, reference: _dt.datetime,
             window: TimeWindow | None) -> _Analysis:
    started = time.perf_counter()
    vector = ctx.embed_query(text)
    embedded = time.perf_counter()
    if window is None and ctx.parse_query_dates is not None:
        window = ctx.parse_query_dates(text, reference)
    return _Analysis(vector=vector, window=window, embed_ms=(embedded - started) * 1e3,
                     dates_ms=(time.perf_counter() - embedded) * 1e3)


def _check_limits(opts: RecallOptions) -> None:
    for name in ("max_tokens", "max_chunk_tokens"):
        value = getattr(opts, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidQueryError(f"{name} must be a positive integer, got {value!r}")
    unknown = set(opts.arms) - set(ARM_NAMES)
    if unknown or not opts.arms:
        raise InvalidQueryError(f"arms must be a non-empty subset of {list(ARM_NAMES)}")


def _rows_or_raise(result: Any) -> list[dict[str, Any]]:
    if isinstance(result, BaseException):
        raise result
    rows: list[dict[str, Any]] = result
    return rows


def _temporal_hits(entries: Sequence[DatedHit], neighbours: Sequence[dict[str, Any]],
                   window: TimeWindow) -> list[ArmHit]:
    """Entry points score their proximity; neighbours the better of their own proximity and
    what spread to them. Sorted best first (the arm's rank order)."""
    hits: dict[str, tuple[float, float, float]] = {}  # id -> (score, similarity, proximity)
    for e in entries:
        own = temporal_proximity(e.date, window)
        hits[e.id] = (own, e.similarity, own)
    for row in neighbours:
        hit = DatedHit(id=row["id"], similarity=float(row["similarity"]),
                       occurred_start=row["occurred_start"], occurred_end=row["occurred_end"],
                       mentioned_at=row["mentioned_at"], date_grain=row["date_grain"])
        own = temporal_proximity(hit.date, window) if hit.date else _NEIGHBOUR_NO_DATE_PROXIMITY
        # Spread evidence ranks the neighbour, but its proximity (and so its boost) is its own.
        score = max(own, float(row["propagated"]))
        if hit.id not in hits or hits[hit.id][0] < score:
            hits[hit.id] = (score, hit.similarity, own)
    ranked = sorted(hits.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))
    return [ArmHit(id=i, score=s, temporal_proximity=p) for i, (s, _, p) in ranked]


def _spread(statement: Any, params: Mapping[str, Any], entries: Sequence[DatedHit],
            window: TimeWindow, settings: RecallSettings, budget: int
            ) -> Plan[list[dict[str, Any]]]:
    """Breadth-first spreading from the entry points, one statement per hop.

    score(neighbour) = score(parent) x link weight x (2 for causal links) x decay; a node keeps
    its best score, and the next frontier is the best ``_TEMPORAL_FRONTIER`` new nodes still
    above ``_TEMPORAL_MIN_SCORE``.
    """
    best: dict[str, float] = {e.id: temporal_proximity(e.date, window) for e in entries}
    reached: dict[str, dict[str, Any]] = {}
    frontier = list(best)
    for _ in range(_TEMPORAL_MAX_DEPTH):
        if not frontier:
            break
        rows = yield Query(statement, {**params, "frontier": [uuid.UUID(i) for i in frontier],
                                       "fanout": _TEMPORAL_FANOUT,
                                       "temporal_min": settings.temporal_min_similarity})
        grown: dict[str, float] = {}
        for row in rows:
            boost = 1.0 if row["link_type"] == "temporal" else _CAUSAL_BOOST
            score = best[row["from_id"]] * float(row["weight"]) * boost * settings.temporal_decay
            if score <= _TEMPORAL_MIN_SCORE or score <= best.get(row["id"], 0.0):
                continue
            best[row["id"]] = score
            grown[row["id"]] = score
            reached[row["id"]] = {**row, "propagated": score}
        frontier = sorted(grown, key=lambda i: -grown[i])[:_TEMPORAL_FRONTIER]
    entry_ids = {e.id for e in entries}
    neighbours = [r for i, r in reached.items() if i not in entry_ids]
    neighbours.sort(key=lambda r: (-r["propagated"], r["id"]))
    return neighbours[:budget]


def recall_plan(ctx: RecallContext, opts: RecallOptions) -> Plan[RecallResult]:
    """Run the TEMPR recall pipeline for one query."""
    started = time.perf_counter()
    timings: dict[str, float] = {}
    notes: list[str] = []
    settings = ctx.settings
    _check_limits(opts)
    text, truncated = bound_query(opts.query, ctx.counter, settings.max_query_tokens)
    if truncated:
        notes.append(f"query cut to {settings.max_query_tokens} tokens")
    n = resolve_budget(opts.budget, opts.max_tokens)
    types = check_types(opts.types)
    tags, tags_match = check_tags(opts.tags, opts.tags_match)
    now = as_utc(opts.query_timestamp) if opts.query_timestamp is not None else ctx.now()
    window_source: Literal["parsed", "caller", "none"] = (
        "caller" if opts.temporal_window is not None else "none")

    analysis: _Analysis = yield Compute(_analyse, (ctx, text, now, opts.temporal_window))
    timings["query_embedding"] = analysis.embed_ms
    timings["date_parsing"] = analysis.dates_ms
    window = analysis.window
    if window is not None and window_source == "none":
        window_source = "parsed"

    terms = keyword_terms(text)
    words = list(terms.words)
    tag_sql = q.tag_clause(tags, tags_match)
    params: dict[str, Any] = {
        "bank": opts.bank, "qvec": analysis.vector, "types": list(types),
        "tags": list(tags or ()), "n": n, "semantic_min": settings.semantic_min_similarity,
        "ts_config": settings.ts_config, "bigrams": list(terms.bigrams),
        "seed_limit": settings.graph_seed_limit, "seed_min": settings.graph_seed_min_similarity,
        "per_entity": settings.graph_per_entity_limit, "graph_min": settings.graph_min_score,
        "graph_sw": settings.graph_semantic_link_factor,
    }
    params.update({"keyword_n": n * len(types), "words": words,
                   "max_terms": settings.keyword_max_terms,
                   "max_postings": settings.keyword_max_postings,
                   "bank_max_df": settings.keyword_bank_max_df,
                   "bank_min_rows": settings.keyword_bank_min_rows,
                   "bm25_k1": settings.bm25_k1, "bm25_b": settings.bm25_b})
    use_keyword = "keyword" in opts.arms and bool(terms)
    if use_keyword and len(words) + len(terms.bigrams) > settings.keyword_max_terms:
        notes.append(f"keyword terms cut to the {settings.keyword_max_terms} rarest")

    # --- arms, concurrently on separate pooled connections -------------------------------
    # Semantic and keyword run as two statements, so the two cores share them (one UNION ALL
    # ran them back to back in one backend: +8 ms p50 at 100k, measured).
    statements: list[tuple[str, Query]] = []
    if "semantic" in opts.arms:
        statements.append(("semantic", Query(q.semantic_statement(types, tag_sql), params)))
    if use_keyword:
        statements.append(("keyword", Query(q.keyword_statement(tag_sql, settings.keyword),
                                            params)))
    if "graph" in opts.arms:
        statements.append(("graph", Query(q.graph_statement(tag_sql, with_entities=True), params,
                                          timeout_ms=settings.graph_timeout_ms)))
    if "temporal" in opts.arms and window is not None:
        tparams = {**params, "wstart": window.start, "wend": window.end,
                   "pool": settings.temporal_entry_pool}
        statements.append(("temporal", Query(q.temporal_entry_statement(tag_sql), tparams)))
    t0 = time.perf_counter()
    results = yield Concurrently(tuple(query for _, query in statements))
    timings["arms"] = (time.perf_counter() - t0) * 1e3
    by_name = dict(zip([name for name, _ in statements], results, strict=True))

    arms: dict[ArmName, list[ArmHit]] = {a: [] for a in ARM_NAMES}
    for name in ("semantic", "keyword"):
        arms[name] = sorted((ArmHit(id=row["id"], score=float(row["score"]))
                             for row in _rows_or_raise(by_name.get(name, []))),
                            key=lambda h: (-h.score, h.id))

    if "graph" in by_name:
        graph_result = by_name["graph"]
        if isinstance(graph_result, psycopg.errors.QueryCanceled):
            notes.append(f"graph arm timed out after {settings.graph_timeout_ms} ms: "
                         "fell back to semantic and causal links only")
            t0 = time.perf_counter()
            (graph_result,) = yield Concurrently((Query(
                q.graph_statement(tag_sql, with_entities=False), params),))
            timings["graph_fallback"] = (time.perf_counter() - t0) * 1e3
        arms["graph"] = [ArmHit(id=r["id"], score=float(r["score"]))
                         for r in _rows_or_raise(graph_result)]

    if "temporal" in by_name and window is not None:
        t0 = time.perf_counter()
        pool = [DatedHit(id=r["id"], similarity=float(r["similarity"]),
                         occurred_start=r["occurred_start"], occurred_end=r["occurred_end"],
                         mentioned_at=r["mentioned_at"], date_grain=r["date_grain"])
                for r in _rows_or_raise(by_name["temporal"])]
        pool = [h for h in pool if h.similarity >= settings.temporal_min_similarity]
        entries = select_entry_points(pool, window, buckets=settings.temporal_buckets,
                                      keep=settings.temporal_entry_points)
        neighbours: list[dict[str, Any]] = []
        budget_left = n - len(entries)
        if entries and budget_left > 0:
            neighbours = yield from _spread(q.temporal_hop_statement(tag_sql), params, entries,
                                            window, settings, budget_left)
        arms["temporal"] = _temporal_hits(entries, neighbours, window)
        timings["temporal_spread"] = (time.perf_counter() - t0) * 1e3

    # --- fusion ---------------------------------------------------------------------------
    t0 = time.perf_counter()
    cut = reciprocal_rank_fusion({a: hits for a, hits in arms.items() if hits},
                                 k=settings.rrf_k, weights=settings.arm_weights,
                                 limit=settings.rerank_max_candidates)
    timings["fusion"] = (time.perf_counter() - t0) * 1e3

    memories: list[RecalledMemory] = []
    chunks: dict[str, str] = {}
    rerank_trace: list[tuple[str, float]] = []
    if cut:
        t0 = time.perf_counter()
        rows = yield Query(q.HYDRATE, {"bank": opts.bank,
                                       "ids": [uuid.UUID(c.id) for c in cut]})
        by_id = {r["id"]: r for r in rows}
        cut = [c for c in cut if c.id in by_id]
        timings["hydrate"] = (time.perf_counter() - t0) * 1e3

        t0 = time.perf_counter()
        documents = [format_document(by_id[c.id]["text"], by_id[c.id]["context"],
                                     by_id[c.id]["occurred_start"] or by_id[c.id]["mentioned_at"])
                     for c in cut]
        raw, normalised = yield Compute(ctx.reranker.rerank,
                                        (text, documents, settings.rerank_batch_size))
        timings["rerank"] = (time.perf_counter() - t0) * 1e3

        t0 = time.perf_counter()
        inputs = [_boost_input(c, by_id[c.id], window) for c in cut]
        scored = apply_boosts(normalised, inputs, now, window is not None, settings.boosts)
        timings["boosts"] = (time.perf_counter() - t0) * 1e3
        rerank_trace = [(c.id, s) for c, s in zip(cut, normalised, strict=True)]

        t0 = time.perf_counter()
        fused_by_id = {c.id: c for c in cut}
        raw_by_id = dict(zip([c.id for c in cut], raw, strict=True)) if raw is not None else {}
        scored = scored[:2 * n]
        kept = token_cut([by_id[s.id]["text"] for s in scored], opts.max_tokens, ctx.counter)
        for s in scored[:kept]:
            row = by_id[s.id]
            memories.append(RecalledMemory(
                id=s.id, text=row["text"], fact_type=row["fact_type"], score=s.final,
                context=row["context"], occurred_start=row["occurred_start"],
                occurred_end=row["occurred_end"], mentioned_at=row["mentioned_at"],
                tags=tuple(row["tags"]), metadata=row["metadata"],
                document_id=row["document_id"], chunk_id=row["chunk_id"],
                entities=tuple(row["entities"]),
                scores=s.breakdown(fused_by_id[s.id], reranker_raw=raw_by_id.get(s.id))))
        timings["token_budget"] = (time.perf_counter() - t0) * 1e3

        if opts.include_chunks:
            t0 = time.perf_counter()
            chunk_ids = list(dict.fromkeys(m.chunk_id for m in memories if m.chunk_id))
            if chunk_ids:
                chunk_rows = yield Query(q.CHUNKS, {"bank": opts.bank, "ids": chunk_ids})
                text_by_chunk = {r["chunk_id"]: r["text"] for r in chunk_rows}
                ordered = [c for c in chunk_ids if c in text_by_chunk]
                fill = chunk_fill([text_by_chunk[c] for c in ordered], opts.max_chunk_tokens,
                                  ctx.counter)
                chunks = dict(zip(ordered[:fill.kept], fill.texts, strict=False))
            timings["chunks"] = (time.perf_counter() - t0) * 1e3

    timings["total"] = (time.perf_counter() - started) * 1e3
    trace = None
    if opts.trace:
        if ctx.reranker.fallback_reason:
            notes.append(f"reranker fell back to passthrough: {ctx.reranker.fallback_reason}")
        trace = RecallTrace(
            query=text, query_truncated=truncated, budget_n=n, time_window=window,
            time_window_source=window_source,
            arms={a: [(h.id, h.score) for h in hits] for a, hits in arms.items()},
            fusion=[(c.id, c.rrf) for c in cut], rerank=rerank_trace,
            reranker=ctx.reranker.name, timings_ms=timings, notes=tuple(notes))
    return RecallResult(memories=memories, chunks=chunks, trace=trace)


def _boost_input(candidate: FusedCandidate, row: Mapping[str, Any],
                 window: TimeWindow | None) -> BoostInput:
    proximity = candidate.temporal_proximity
    if proximity is None and window is not None:
        # Found by another arm but dated: it still deserves its closeness to the window
        # (the leading implementation gives such candidates nothing).
        hit = DatedHit(id=candidate.id, similarity=0.0, occurred_start=row["occurred_start"],
                       occurred_end=row["occurred_end"], mentioned_at=row["mentioned_at"],
                       date_grain=row["date_grain"])
        proximity = temporal_proximity(hit.date, window)
    return BoostInput(id=candidate.id, occurred_start=row["occurred_start"],
                      occurred_end=row["occurred_end"], mentioned_at=row["mentioned_at"],
                      date_grain=row["date_grain"], proof_count=row["proof_count"],
                      temporal_proximity=proximity)
