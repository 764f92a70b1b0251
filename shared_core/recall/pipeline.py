"""The recall plan: analyse → four arms → RRF → hydrate → rerank → boosts → budgets, traced.

Every stage lives in its own module (the arms in :mod:`shared_core.recall.arms`, then fusion,
rerank, boosts, budget); this module only sequences them around the I/O, as a sans-I/O plan
that the sync and async runners share.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt

from shared_core.protocols import TokenCounter
from shared_core.recall.arms import Arm, ArmQuery, ArmResult
from shared_core.recall.arms.graph import GRAPH, neighbour_plan
from shared_core.recall.arms.keyword import KEYWORD, keyword_terms
from shared_core.recall.arms.semantic import SEMANTIC
from shared_core.recall.arms.temporal import NO_DATE_PROXIMITY, TEMPORAL, asks_when
from shared_core.recall.boosts import (
    BoostInput,
    apply_boosts,
    effective_date,
    stated_time_match,
    stated_time_of,
    window_match,
)
from shared_core.recall.budget import chunk_fill, resolve_budget, token_cut
from shared_core.recall.filters import compile_filter
from shared_core.recall.fusion import ArmHit, FusedCandidate, reciprocal_rank_fusion
from shared_core.recall.hydrate import (
    MemoryDetails,
    MemoryRow,
    chunks_plan,
    details_plan,
    fill_plan,
    hydrate_plan,
    rows_plan,
)
from shared_core.recall.learned import CandidateSignals, LearnedScorer, QuerySignals, unfuse_when_list
from shared_core.recall.options import RecallOptions
from shared_core.recall.query import bound_query, check_types
from shared_core.recall.rerank import Reranker, format_document, passthrough_scores
from shared_core.recall.settings import RecallSettings
from shared_core.recall.timing import Stopwatch
from shared_core.slots import builder
from shared_core.storage.plan import Collect, Compute, Concurrently, Launch, Launched, Pipeline, Plan, Query
from shared_core.types import (
    ARM_NAMES,
    ArmName,
    RecalledMemory,
    RecallResult,
    RecallTrace,
    ScoreBreakdown,
    TimeWindow,
)

__all__ = ["ARMS", "RecallContext", "RecallOptions", "RecallSettings", "recall_plan"]

ARMS: Mapping[ArmName, Arm] = {"semantic": SEMANTIC, "keyword": KEYWORD, "graph": GRAPH, "temporal": TEMPORAL}
"""The arms, in the order their results are read (and their notes traced)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallContext:
    """What the plan needs from the engine: models and settings (no connections)."""

    embed_query: Callable[[str], npt.NDArray[np.float32]]
    parse_query_dates: Callable[[str, _dt.datetime], TimeWindow | None] | None
    counter: TokenCounter
    reranker: Reranker
    settings: RecallSettings
    now: Callable[[], _dt.datetime]


def recall_plan(ctx: RecallContext, query: str, opts: RecallOptions) -> Plan[RecallResult]:
    """Run the TEMPR recall pipeline for one query."""
    watch, settings = Stopwatch(), ctx.settings
    text, truncated = bound_query(query, ctx.counter, settings.max_query_tokens)
    notes = [f"query cut to {settings.max_query_tokens} tokens"] if truncated else []
    n = resolve_budget(opts.budget, opts.max_tokens)
    now = opts.timestamp or ctx.now()
    terms = keyword_terms(text)
    unembedded = ArmQuery(
        bank=opts.bank,
        vector=_NO_VECTOR,
        words=terms.words,
        bigrams=terms.bigrams,
        types=check_types(opts.types),
        tags=_tuple(opts.tags),
        tags_match=opts.tags_match,
        n=n,
        window=None,
        settings=settings,
        # gin_only: tests the metadata index cannot narrow by stay out of its scans (filt).
        filter=compile_filter(opts.metadata_filter, gin_only=True),
        asks_when=asks_when(text),
    )
    running = opts.arm_names.union(*(ARMS[name].needs for name in opts.arm_names))
    # The vector-free arms' statements run while the query is embedded (see _search). Their
    # server process then shares the cores with the embedding: on 2 cores already busy with
    # other work, the embedding's wall time grew from 14.7 to 21.9 ms p50 beside the keyword
    # statement (27.3 beside a statement that only burns CPU, 14.0 beside one that sleeps;
    # its CPU time unchanged: 2026-12-02, load ~2.5, docs/benchmarks/latency.md). That is the
    # price of the overlap, which needs a free core to pay off, not a cost of the embedding.
    early = {
        name: first
        for name, arm in ARMS.items()
        if name in running and arm.vector_free and (first := arm.start(unembedded)) is not None
    }
    launched = (yield Launch(tuple(early.values()))) if early else None
    vector, window = yield Compute(_analyse, (ctx, text, now, opts.window, watch))
    aq = dataclasses.replace(unembedded, vector=vector, window=window)
    # Loads the cross-encoder on first use; its kind picks the arm weights and boosts.
    arm_weights, _ = settings.profile(ctx.reranker.kind)

    fused: list[tuple[dict[ArmName, Sequence[ArmHit]], list[FusedCandidate]]] = []

    def fuse(arms: Mapping[ArmName, Sequence[ArmHit]]) -> list[FusedCandidate]:
        present = {a: hits for a, hits in arms.items() if hits}
        # Fusion is a function of the hit lists: the same lists (the graph added none, as for
        # 42 of the 50 bench queries at 100k) give the candidates fused ahead, not built twice.
        for before, cut in fused:
            if before.keys() == present.keys() and all(before[a] is present[a] for a in present):
                return cut
        cut = reciprocal_rank_fusion(
            present, k=settings.rrf_k, weights=arm_weights, limit=settings.rerank_max_candidates
        )
        fused.append((present, cut))
        return cut

    # The ranking of the candidates fused ahead (below), kept with the stopwatch that timed it.
    ranked_ahead: list[tuple[list[FusedCandidate], Mapping[str, MemoryRow], _Ranking, Stopwatch]] = []
    # Details read so far, by id: a ranking after the graph's rows reads only the ones missing.
    details_read: dict[str, MemoryDetails] = {}

    def ahead(
        arms: Mapping[ArmName, Sequence[ArmHit]], known: Mapping[str, MemoryRow]
    ) -> Plan[dict[str, MemoryRow]]:
        # Every statement ahead on a pooled connection of its own, returned at once: a plan
        # holding its own connection while its graph statement waits for one stalls when
        # more recalls run than the pool has connections (tests/integration/test_launch.py).
        with watch.stage("hydrate_ahead"):
            cut, rows = yield from _one_offs(hydrate_plan(opts.bank, fuse(arms), vector, known))
        # Ranked ahead too, details read and all, while the graph statement still runs: its
        # rows usually change nothing (none for 42 of the 50 bench queries at 100k), and then
        # this is the ranking, off the path (boosts, token cut, the details statement and the
        # returned memories: ~9 ms of the path at load 2, 2026-12-02). With graph hits the
        # ranking runs again; of the details, only those of memories not read here. Under
        # passthrough only: a model's scoring would be wasted then (the learned reranker's
        # with its neighbours statement: at 100k its total with the embedding moved +1.5 ms
        # paired, load ~6, i.e. nothing gained), and costs more than the graph statement.
        if cut and ctx.reranker.is_passthrough:
            own = Stopwatch()
            with watch.stage("rank_ahead"):
                ranking = yield from _one_offs(
                    _rank(ctx, text, opts, cut, rows, n, now, window, own, details_read)
                )
            ranked_ahead.append((cut, rows, ranking, own))
        return rows

    arms, known = yield from _search(
        aq, opts.arm_names, running, (tuple(early), launched), watch, notes, ahead=ahead
    )
    with watch.stage("fusion"):
        cut = fuse(arms)
    memories: list[RecalledMemory] = []
    ranked: list[MemoryRow] = []
    chunks: dict[str, str] = {}
    truncated_chunks: frozenset[str] = frozenset()
    rerank_trace: list[tuple[str, float]] = []
    rows: Mapping[str, MemoryRow] = {}
    if cut:
        # The reads from here on (hydration, the learned reranker's neighbours, the details) run
        # as one-offs, as those ahead do: on the plan's own connection the first of them opened
        # a transaction (a BEGIN round trip before it, a COMMIT after the plan: two round trips
        # on the path of every learned recall, whose details are read here), and only reads
        # follow.
        with watch.stage("hydrate"):
            cut, rows = yield from _one_offs(hydrate_plan(opts.bank, cut, vector, known))
        # The ranking ahead is this one when it ranked the same candidates from the same rows.
        reused = next((r for r in ranked_ahead if _same_ranking_input(r[0], r[1], cut, rows)), None)
        if reused is not None:
            memories, ranked, rerank_trace = reused[2]
            for stage, ms in reused[3].timings.items():  # timed beside the graph statement
                watch.record(stage, ms)
        else:
            memories, ranked, rerank_trace = yield from _one_offs(
                _rank(ctx, text, opts, cut, rows, n, now, window, watch, details_read)
            )
    extra_rows: list[MemoryRow] = []
    if opts.k is not None and len(memories) < opts.k:
        with watch.stage("fill"):
            extra = yield from fill_plan(
                aq.where_sql, aq.params(), [c.id for c in cut], opts.k - len(memories)
            )
        # A calibrated reranker scores the fill too (after the fused candidates, found by no
        # arm), so a score threshold treats it like any other memory.
        relevance: list[float | None] = [None] * len(extra)
        if extra and not ctx.reranker.is_passthrough:
            # The learned reranker scores the fill in one list with the fused candidates: its
            # features are relative to the list (cosine z-score, coverage over the best, the
            # list's length), and a memory scored alone is the best of its own list (a fill
            # memory scored 0.081 above a ranked one's 0.078, tests/integration/
            # test_langchain_retriever.py). A cross-encoder scores each pair alone.
            head = list(cut) if ctx.reranker.is_learned else []
            with watch.stage("fill_rerank"):
                _, scored, _ = yield from _score(
                    ctx,
                    text,
                    window,
                    [*head, *(FusedCandidate(id=r.id, rrf=0.0) for r in extra)],
                    {**rows, **{r.id: r for r in extra}},
                    offset=len(cut) - len(head),
                    when_arm="temporal" in opts.arm_names,
                    watch=watch,
                )
            relevance = list(scored[len(head) :])
        with watch.stage("fill_details"):
            extra_details = yield from details_plan(opts.bank, [r.id for r in extra])
        memories += [
            _memory(row, details, 0.0, ScoreBreakdown(), below_threshold=True, relevance=rel)
            for row, rel in zip(extra, relevance, strict=True)
            if (details := extra_details.get(row.id)) is not None
        ]
        extra_rows = extra
        if extra:
            notes.append(f"{len(extra)} memories below the arms' thresholds filled k={opts.k}")
    if opts.include_chunks:
        # From the ranking, not from what max_tokens kept: max_tokens=0 returns chunks only.
        sources = ranked + extra_rows
        if sources:
            with watch.stage("chunks"):
                chunks, truncated_chunks = yield from _chunks(ctx, opts, sources)
    trace = None
    if opts.trace:
        if ctx.reranker.fallback_reason:
            notes.append(f"reranker fell back to {ctx.reranker.name}: {ctx.reranker.fallback_reason}")
        trace = RecallTrace(
            query=text,
            query_truncated=truncated,
            budget_n=n,
            time_window=window,
            time_window_source=(
                "caller" if opts.window is not None else "parsed" if window is not None else "none"
            ),
            arms={a: [(h.id, h.score) for h in hits] for a, hits in arms.items()},
            fusion=[(c.id, c.rrf) for c in cut],
            rerank=rerank_trace,
            reranker=ctx.reranker.name,
            timings_ms=watch.total(),
            notes=tuple(notes),
        )
    return RecallResult(memories=memories, chunks=chunks, trace=trace, truncated_chunks=truncated_chunks)


def _tuple(values: Sequence[str] | None) -> tuple[str, ...] | None:
    return tuple(values) if values is not None else None


def _analyse(
    ctx: RecallContext, text: str, reference: _dt.datetime, window: TimeWindow | None, watch: Stopwatch
) -> tuple[npt.NDArray[np.float32], TimeWindow | None]:
    """Embed the query and, unless the caller gave a window, parse its dates (CPU work)."""
    with watch.stage("query_embedding"):
        vector = ctx.embed_query(text)
    with watch.stage("date_parsing"):
        if window is None and ctx.parse_query_dates is not None:
            window = ctx.parse_query_dates(text, reference)
    return vector, window


_NO_VECTOR: npt.NDArray[np.float32] = np.zeros(0, dtype=np.float32)
"""The vector of the query the vector-free arms start from, before the embedding exists (their
statements do not read ``%(qvec)s``; psycopg sends only the parameters a statement names)."""

_Early: TypeAlias = tuple[tuple[ArmName, ...], Launched | None]
"""The arms whose first statements were launched before the embedding, and their handle."""

_Ahead: TypeAlias = Callable[
    [Mapping[ArmName, Sequence[ArmHit]], Mapping[str, MemoryRow]], Plan[dict[str, MemoryRow]]
]
"""Work run while the second round's statements run: from the first round's reported hits and
the rows its arms read, the rows of more candidates (hydration ahead of fusion)."""


def _search(
    aq: ArmQuery,
    wanted: frozenset[ArmName],
    running: frozenset[ArmName],
    early: _Early,
    watch: Stopwatch,
    notes: list[str],
    *,
    ahead: _Ahead | None = None,
) -> Plan[tuple[dict[ArmName, list[ArmHit]], dict[str, MemoryRow]]]:
    """The arms' hits, and the rows of those an arm read whole (the semantic arm's, for
    hydration), in two rounds, after each running arm's ``prepare`` (if it has one): first
    those that need no other arm's hits (stage ``arms``), then those that start from them (the
    graph arm, seeded by the semantic and keyword hits). An arm needed but not wanted (in
    ``running``) runs without being reported.

    The first round's statements run at once, each on its own connection (semantic and keyword
    as two statements, so the two cores share them: one UNION ALL ran them back to back in one
    backend, +8 ms p50 at 100k, measured); the ``early`` ones (keyword) were launched before
    the query was embedded and are collected with the round, so the ``arms`` stage counts only
    what is left of them by then (the rest overlapped ``query_embedding``). Then the arms that
    seed the second round finish, its statements are launched, and the other first-round arms
    finish meanwhile (the temporal spread's hops, stage ``temporal_spread``, each on a pooled
    connection of its own, not holding the plan's while its launched statements wait for
    one); stage ``seeded_arms`` is what is left of the second round after that.

    The ``early`` arms' hits are known while the round's other statements still run (the
    semantic statement, started after the embedding): a reported early arm's best hits (as
    many as fusion keeps) are hydrated meanwhile (stage ``hydrate_early``, out of ``arms``).

    ``ahead``, while the second round runs: the candidates the first round's hits fuse into are
    hydrated (stage ``hydrate_ahead``), since those the seeded arms add or push out are few
    (the graph returned no row for 42 of the 50 bench queries at 100k); hydration after fusion
    then reads only what is still missing, usually nothing. Its rows join the ones returned.
    """
    # Every statement of the arms before the graph statement is collected on a pooled
    # connection of its own (``_one_offs``): the plan's own, once taken, is held to the end,
    # so one taken here (a filter's estimate, a seeding arm's follow-up) was held while the
    # launched graph statement waited for one, a stall with more recalls than the pool has
    # connections (tests/integration/test_launch.py).
    for name, arm in ARMS.items():
        if name in running and arm.prepare is not None:
            aq = yield from _one_offs(arm.prepare(aq, watch))
    first = [name for name, arm in ARMS.items() if name in running and not arm.needs]
    seeded = [name for name, arm in ARMS.items() if name in running and arm.needs]
    # The early arms finished while the others' statements run, and the rows of their hits.
    finished: dict[ArmName, ArmResult] = {}
    early_known: dict[str, MemoryRow] = {}

    def beside(collected: Mapping[ArmName, Any]) -> Plan[None]:
        # The keyword statement ran beside the embedding; the semantic statement, started
        # after it, holds one core and leaves this thread waiting: reading the keyword hits'
        # rows now takes them off the path after it (hydration ahead read them there). As
        # many as fusion keeps: a hit ranked lower by the one arm that found it is below that
        # many candidates. Its error, if any, is raised where the arm finishes, as before.
        for name, raw in collected.items():
            if name in wanted and not isinstance(raw, BaseException):
                finished[name] = result = yield from _one_offs(ARMS[name].finish(aq, raw, watch))
                best = [h.id for h in result.hits[: aq.settings.rerank_max_candidates]]
                with watch.stage("hydrate_early", within="arms"):
                    early_known.update((yield from _one_offs(rows_plan(aq.bank, best, aq.vector))))

    def finish(name: ArmName, one_offs: bool) -> Plan[ArmResult]:
        if name in finished:
            return finished.pop(name)
        plan = ARMS[name].finish(aq, rows[name], watch)
        return (yield from (_one_offs(plan) if one_offs else plan))

    rows = yield from _first_round(aq, first, early, watch, beside=beside)
    results: dict[ArmName, ArmResult] = {}
    seeds = frozenset[ArmName]().union(*(ARMS[name].needs for name in seeded))
    for name in first:
        if name in seeds and name in rows:
            results[name] = yield from finish(name, True)
    seeded_aq = dataclasses.replace(aq, prior={name: result.hits for name, result in results.items()})
    second = {name: query for name in seeded if (query := ARMS[name].start(seeded_aq)) is not None}
    meanwhile = [name for name in first if name not in seeds and name in rows]
    # With work to do meanwhile (the temporal spread's hops, hydration ahead) the second round
    # is launched before it and collected after; with none it runs at once, which the sync
    # runner does in this thread (a Launch is always handed to another one, and this one would
    # only wait for it).
    launched = (yield Launch(tuple(second.values()))) if second and (meanwhile or ahead) else None
    for name in meanwhile:
        # The spread's hops too (on the plan's own connection, more dated recalls than the
        # pool has connections stalled until its timeout); with nothing launched, nothing
        # waits for a connection, and the hops keep the plan's.
        results[name] = yield from finish(name, launched is not None)
    early_rows: dict[str, MemoryRow] = {}
    if launched is not None and ahead is not None:
        so_far = {a: result.hits for a, result in results.items() if a in wanted}
        # an arm's own rows over those read early (the semantic statement's, as before)
        known_so_far = early_known | {
            i: row for a, result in results.items() if a in wanted for i, row in result.rows.items()
        }
        early_rows = yield from ahead(so_far, known_so_far)
    second_rows: list[Any] = []
    if second:
        with watch.stage("seeded_arms"):
            second_rows = yield (
                Collect(launched) if launched is not None else Concurrently(tuple(second.values()))
            )
    for name, result in zip(second, second_rows, strict=True):
        results[name] = yield from ARMS[name].finish(seeded_aq, result, watch)
    for name in ARMS:
        if name in wanted and name in results:
            notes.extend(results[name].notes)
    hits = {a: results[a].hits if a in wanted and a in results else [] for a in ARM_NAMES}
    # Only the reported arms' rows: an arm run for another's seeds fuses nothing.
    known = {i: row for a, result in results.items() if a in wanted for i, row in result.rows.items()}
    return hits, early_known | early_rows | known


def _first_round(
    aq: ArmQuery,
    names: Sequence[ArmName],
    early: _Early,
    watch: Stopwatch,
    *,
    beside: Callable[[Mapping[ArmName, Any]], Plan[None]] | None = None,
) -> Plan[dict[ArmName, Any]]:
    """The rows (or errors) of the first statements of the arms ``names``: those not launched
    ``early`` at once, then the early ones collected. With ``beside``, the others are
    launched, the early ones collected and handed to it, and the others collected after it."""
    launched_names, launched = early
    started = {
        name: query
        for name in names
        if name not in launched_names and (query := ARMS[name].start(aq)) is not None
    }
    rows: dict[ArmName, Any] = {}
    if not started and launched is None:
        return rows
    with watch.stage("arms"):
        if started and launched is not None and beside is not None:
            others = yield Launch(tuple(started.values()))
            collected = dict(zip(launched_names, (yield Collect(launched)), strict=True))
            yield from beside(collected)
            rows |= zip(started, (yield Collect(others)), strict=True)
            rows |= collected
            return rows
        if started:
            rows |= zip(started, (yield Concurrently(tuple(started.values()))), strict=True)
        if launched is not None:
            rows |= zip(launched_names, (yield Collect(launched)), strict=True)
    return rows


def _rank(
    ctx: RecallContext,
    text: str,
    opts: RecallOptions,
    cut: Sequence[FusedCandidate],
    rows: Mapping[str, MemoryRow],
    n: int,
    now: _dt.datetime,
    window: TimeWindow | None,
    watch: Stopwatch,
    details_read: dict[str, MemoryDetails],
) -> Plan[_Ranking]:
    """Rerank, boost and cut the hydrated candidates to ``max_tokens``; also the rows of the
    ranking before the cut (the first 2N), which chunks are chosen from. The details of the
    memories kept are taken from ``details_read`` (by id) or read, and added to it."""
    _, boosts = ctx.settings.profile(ctx.reranker.kind)
    with watch.stage("rerank"):
        # The graph arm's second round (document neighbours of the reranker's first-stage top
        # hits) runs with the graph arm: arms without "graph" leave it out too.
        graph = opts.bank if "graph" in opts.arm_names and ctx.settings.graph_neighbours else None
        raw, normalised, told = yield from _score(
            ctx,
            text,
            window,
            cut,
            rows,
            neighbours_in=graph,
            when_arm="temporal" in opts.arm_names,
            watch=watch,
        )
    with watch.stage("boosts"):
        # The years each text tells, as the learned reranker read them for its features (told
        # is None when it did not: another reranker, or no window), not found again.
        inputs = [
            _boost_input(c, rows[c.id], window, None if told is None else told.get(i, ()))
            for i, c in enumerate(cut)
        ]
        timed = ctx.settings.date_signals  # False: the question's time is ignored (ablations)
        scored = apply_boosts(
            normalised, inputs, now, timed and window is not None, boosts, asks_when=timed and asks_when(text)
        )
    with watch.stage("token_budget"):
        fused_by_id = {c.id: c for c in cut}
        raw_by_id = dict(zip([c.id for c in cut], raw, strict=True)) if raw is not None else {}
        scored = scored[: 2 * n]
        # k means k: with k, the k best are returned whatever their length; without, the
        # memories that fit max_tokens.
        kept = (
            min(opts.k, len(scored))
            if opts.k is not None
            else token_cut([rows[s.id].text for s in scored], opts.max_tokens, ctx.counter)
        )
        relevance_by_id = {} if ctx.reranker.is_passthrough else {s.id: s.reranker for s in scored[:kept]}
    with watch.stage("details"):
        missing = [s.id for s in scored[:kept] if s.id not in details_read]
        if missing:
            details_read.update((yield from details_plan(opts.bank, missing)))
    details = details_read
    # A memory deleted since hydration (another transaction) has no details: it is gone.
    memories = [
        _memory(
            rows[s.id],
            found,
            s.final,
            s.breakdown(fused_by_id[s.id], reranker_raw=raw_by_id.get(s.id)),
            relevance=relevance_by_id.get(s.id),
        )
        for s in scored[:kept]
        if (found := details.get(s.id)) is not None
    ]
    ranked = [rows[s.id] for s in scored]
    return memories, ranked, [(c.id, s) for c, s in zip(cut, normalised, strict=True)]


R = TypeVar("R")


def _one_offs(plan: Plan[R]) -> Plan[R]:
    """``plan`` with each statement run on a pooled connection of its own, outside the plan's
    transaction (a :class:`Concurrently` of one, run in the plan's thread), its error raised
    in ``plan`` as the plan's own statements' are. A recall only reads, and its arms' rows
    come from such statements already; a recall whose statements all run so never opens a
    transaction (no BEGIN, no COMMIT)."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            op = plan.throw(error) if error is not None else plan.send(value)
        except StopIteration as stop:
            result: R = stop.value
            return result
        error = None
        if isinstance(op, Query):
            (value,) = yield Concurrently((op,))
            if isinstance(value, BaseException):
                error, value = value, None
        elif isinstance(op, Pipeline) and op.wait:
            # Reads sent together (a range filter's lookups beside its estimate): at once, each
            # on its own pooled connection, the first error raised as the pipeline's would be.
            value = yield Concurrently(op.queries)
            error = next((v for v in value if isinstance(v, BaseException)), None)
            if error is not None:
                value = None
        else:
            value = yield op


_Scores: TypeAlias = tuple[list[float] | None, list[float], Mapping[int, Sequence[int]] | None]
"""What :func:`_score` returns: raw scores (None: none), normalised scores, the told years."""

_Ranking: TypeAlias = tuple[list[RecalledMemory], list[MemoryRow], list[tuple[str, float]]]
"""What :func:`_rank` returns: the memories, the rows of the ranking, the reranker's trace."""


def _same_ranking_input(
    cut: Sequence[FusedCandidate],
    rows: Mapping[str, MemoryRow],
    other_cut: Sequence[FusedCandidate],
    other_rows: Mapping[str, MemoryRow],
) -> bool:
    """Whether two rankings' inputs are the same candidates (the same objects: fusion reuses
    its list when the hit lists are the same) in the same order, with the same rows."""
    return len(cut) == len(other_cut) and all(
        a is b and rows[a.id] is other_rows[a.id] for a, b in zip(cut, other_cut, strict=True)
    )


def _score(
    ctx: RecallContext,
    text: str,
    window: TimeWindow | None,
    candidates: Sequence[FusedCandidate],
    rows: Mapping[str, MemoryRow],
    *,
    offset: int = 0,
    neighbours_in: str | None = None,
    when_arm: bool = True,
    watch: Stopwatch,
) -> Plan[_Scores]:
    """The reranker's ``(raw, normalised)`` scores of ``candidates`` (fused order, the first
    at position ``offset``): the learned reranker's probabilities, a cross-encoder's raw and
    sigmoid scores, or passthrough's rank-seeded scores (raw None); and the years each
    candidate's text tells (by index into ``candidates``, a text telling none left out) where
    the learned reranker read them (a window), else None. ``neighbours_in``: the bank whose
    documents the learned reranker's second graph round reads (None: no second round).
    ``when_arm``: whether the recall asked for the temporal arm."""
    if ctx.reranker.is_learned:
        scorer = LearnedScorer.default()
        timed = ctx.settings.date_signals  # False: the question's time is hidden (ablations)
        # A "when" question without a window is told as one only when the temporal arm answers
        # it: the model learnt its "when" columns beside the arm's rank (dated_evidence_rr), and
        # without that rank a memory stating its date is scored down (when_and_dated's weight
        # is negative): 37.5 R@1 on benchmarks' when-notes against 53.3 blind (docs/benchmarks.md).
        when = timed and (window is not None or (when_arm and ctx.settings.temporal_when_questions))
        query = QuerySignals.from_query(
            text,
            window if timed else None,
            asks_when=None if when else False,
            inflections=ctx.settings.keyword_inflections,
        )
        signals = [_signals(offset + i, c, rows[c.id]) for i, c in enumerate(candidates)]
        if query.window is None and query.asks_when:
            # the "when" list is read by its own column, not by the fused score and order it
            # lifts every dated memory in (learned.unfuse_when_list)
            weights, _ = ctx.settings.profile(ctx.reranker.kind)
            signals = unfuse_when_list(
                signals, weight=weights.get("temporal", 0.0), k=ctx.settings.rrf_k, offset=offset
            )
        features, seeds, told = yield Compute(scorer.prepare_told, (query, signals))
        marked: dict[int, list[int]] = {}
        # The graph's second round: the document neighbours of the first stage's top hits. Only
        # a candidate that is not a seed is marked, and only beside a seed of its own document,
        # so the seeds whose document no other candidate shares are not looked up, and with
        # none left neither is the statement: the same marks.
        sharing = _seeds_sharing_a_document(candidates, rows, seeds) if neighbours_in is not None else []
        if neighbours_in is not None and sharing:
            # Its own stage (I/O), out of the reranker's: the latency headline leaves out rerank.
            with watch.stage("graph_neighbours", within="rerank"):
                near = yield from neighbour_plan(neighbours_in, sharing, scorer.neighbour_window)
            index = {candidates[i].id: i for i in seeds}
            marked = {
                i: [index[s] for s in near[c.id]]
                for i, c in enumerate(candidates)
                if c.id in near and c.id not in index
            }
        normalised: list[float] = yield Compute(scorer.probabilities, (features, seeds, marked))
        # told is the texts' years, whatever the window: valid for the boosts' window too
        return None, normalised, told
    if ctx.reranker.is_passthrough:  # rank-seeded scores: no document strings to build
        return None, passthrough_scores(len(candidates)), None
    # The date a cross-encoder sees is when the memory happened, never when it was stored or
    # said (the ingest time would read as an event date).
    documents = [
        format_document(rows[c.id].text, rows[c.id].context, rows[c.id].occurred_start) for c in candidates
    ]
    raw, normalised = yield Compute(ctx.reranker.rerank, (text, documents, ctx.settings.rerank_batch_size))
    return raw, normalised, None


def _seeds_sharing_a_document(
    candidates: Sequence[FusedCandidate], rows: Mapping[str, MemoryRow], seeds: Sequence[int]
) -> list[str]:
    """The ids of the ``seeds`` (indices into ``candidates``) whose document holds another
    candidate that is not a seed: the only seeds whose neighbours can mark a candidate.

    >>> from shared_core.recall.hydrate import MemoryRow
    >>> def row(i, doc):
    ...     return MemoryRow(id=i, text="", context=None, fact_type="world", occurred_start=None,
    ...                      occurred_end=None, mentioned_at=None, date_grain=None, proof_count=1,
    ...                      document_id=doc, chunk_id=None, similarity=None)
    >>> rows = {r.id: r for r in [row("a", "d1"), row("b", "d1"), row("c", "d2"), row("d", None),
    ...                           row("e", None), row("f", "d3")]}
    >>> cut = [FusedCandidate(id=i, rrf=0.0) for i in "abcdef"]
    >>> _seeds_sharing_a_document(cut, rows, [0, 2, 3])  # b shares d1; nobody d2; no document
    ['a']
    >>> _seeds_sharing_a_document(cut, rows, [0, 1])  # a and b are both seeds
    []
    """
    chosen = set(seeds)
    others = {
        doc
        for i, c in enumerate(candidates)
        if i not in chosen and (doc := rows[c.id].document_id) is not None
    }
    return [candidates[i].id for i in seeds if rows[candidates[i].id].document_id in others]


def _chunks(
    ctx: RecallContext, opts: RecallOptions, ranked: Sequence[MemoryRow]
) -> Plan[tuple[dict[str, str], frozenset[str]]]:
    """The source texts of the ranked memories, in rank order, cut to ``max_chunk_tokens``
    (the last one truncated, and flagged): a split memory's chunk (the whole item), or a
    memory's own text when it was stored whole (keyed by its id)."""
    keys = list(dict.fromkeys(r.chunk_id if r.chunk_id is not None else r.id for r in ranked))
    stored = yield from chunks_plan(opts.bank, [r.chunk_id for r in ranked if r.chunk_id is not None])
    own = {r.id: r.text for r in ranked if r.chunk_id is None}
    texts = {k: stored[k] if k in stored else own[k] for k in keys if k in stored or k in own}
    ordered = list(texts)
    fill = chunk_fill([texts[c] for c in ordered], opts.max_chunk_tokens, ctx.counter)
    kept = ordered[: fill.kept]
    truncated = frozenset(k for k, cut in zip(kept, fill.truncated, strict=True) if cut)
    return dict(zip(kept, fill.texts, strict=True)), truncated


def _memory(
    row: MemoryRow,
    details: MemoryDetails,
    score: float,
    scores: ScoreBreakdown,
    *,
    below_threshold: bool = False,
    relevance: float | None = None,
) -> RecalledMemory:
    return _recalled_memory(
        row.id,
        row.text,
        row.fact_type,
        score,
        row.context,
        row.occurred_start,
        row.occurred_end,
        row.mentioned_at,
        tuple(details.tags),
        details.metadata,
        row.document_id,
        row.chunk_id,
        details.piece,
        details.pieces,
        tuple(details.entities),
        scores,
        float(row.similarity) if row.similarity is not None else 0.0,
        below_threshold,
        relevance,
    )


# Built without calling the frozen classes (shared_core.slots): a RecalledMemory per returned
# memory (~150 a recall at 100k; 6.0 us called, 19 fields, load ~5) and a BoostInput per fused
# candidate (~300; 2.1 us), on the recall's path.
_recalled_memory = builder(
    RecalledMemory,
    (
        "id",
        "text",
        "fact_type",
        "score",
        "context",
        "occurred_start",
        "occurred_end",
        "mentioned_at",
        "tags",
        "metadata",
        "document_id",
        "chunk_id",
        "piece",
        "pieces",
        "entities",
        "scores",
        "similarity",
        "below_threshold",
        "relevance",
    ),
)
_boost_input_of = builder(
    BoostInput,
    (
        "id",
        "occurred_start",
        "occurred_end",
        "mentioned_at",
        "date_grain",
        "proof_count",
        "temporal_proximity",
        "stated_time",
    ),
)


# Built without calling the frozen class too: one per fused candidate (~300 a learned recall at
# 100k), 4.5 us called (11 fields by name: 1.6 ms of a recall's CPU, the 50 bench queries at
# 100k, 2026-12-03, load ~1.5).
_candidate_signals = builder(
    CandidateSignals,
    (
        "position",
        "rrf",
        "ranks",
        "arm_scores",
        "cosine",
        "text",
        "occurred_start",
        "occurred_end",
        "mentioned_at",
        "date_grain",
        "context",
    ),
)


def _signals(position: int, candidate: FusedCandidate, row: MemoryRow) -> CandidateSignals:
    """What the learned reranker reads about a candidate at ``position`` in the fused order."""
    return _candidate_signals(
        position,
        candidate.rrf,
        candidate.ranks,
        candidate.arm_scores,
        row.similarity,
        row.text,
        row.occurred_start,
        row.occurred_end,
        row.mentioned_at,
        row.date_grain,
        row.context,
    )


def _boost_input(
    candidate: FusedCandidate, row: MemoryRow, window: TimeWindow | None, told: Sequence[int] | None = None
) -> BoostInput:
    """What the boosts read of ``candidate``; ``told``: the years its text tells, if known
    (:func:`shared_core.recall.learned.featurize_told`), else read here from its text."""
    proximity = candidate.temporal_proximity
    if window is not None:
        # However it was found (another arm's candidate still deserves its closeness to the
        # window; the leading implementation gives such candidates nothing), a dated memory is
        # boosted by how well its date (as a temporal hit's, DatedHit.date, without building one
        # per candidate) matches the window: fully anywhere inside it (window_match), not by the
        # arm's centre-peaked proximity, which put a turn said on the asked month's last days,
        # or on X itself under "as of X", at the edge (0). An undated one keeps what the arm
        # gave it (a neighbour reached by spreading).
        date = effective_date(row.occurred_start, row.occurred_end, row.mentioned_at, row.date_grain)
        if date is not None:
            proximity = window_match(date, window)
        elif proximity is None:
            proximity = NO_DATE_PROXIMITY
    return _boost_input_of(
        candidate.id,
        row.occurred_start,
        row.occurred_end,
        row.mentioned_at,
        row.date_grain,
        row.proof_count,
        proximity,
        None
        if window is None
        else stated_time_match(row.text, window)
        if told is None
        else stated_time_of(told, window),
    )
