"""The temporal arm: memories dated inside the query's window, spread along links; for a
"when" question without a date, the matching memories that state their own date.

With a window, entry points are the most similar memories dated in the window, spread over the
window (:func:`select_entry_points`); from them, activation spreads breadth-first along temporal
and causal links. A hit's proximity (:func:`temporal_proximity`) feeds the temporal boost.

Without a window, a question asking *when* something happened (:func:`asks_when`) is answered
by a memory that says when: the arm ranks, by similarity to the question, the memories whose
own text stated a time (``occurred_start`` is set at retain from a date in the text, relative
ones like "yesterday" resolved against the memory's time). Memories dated only by when they
were said or stored are not candidates: every chat turn has that date, so it says nothing.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from psycopg import sql

from shared_core.recall.arms import TYPES_TEST, Arm, ArmQuery, ArmResult, rows_or_raise, type_clause
from shared_core.recall.arms.semantic import EXACT_MAX_ROWS, matching_head, skips_exact
from shared_core.recall.boosts import effective_date
from shared_core.recall.fusion import ArmHit
from shared_core.recall.timing import Stopwatch
from shared_core.storage.dimensions import Dimension
from shared_core.storage.plan import GENERIC_PLAN, Plan, Query
from shared_core.storage.statements import flat
from shared_core.types import DateGrain, TimeWindow

__all__ = [
    "TEMPORAL",
    "WHEN_QUESTION",
    "DatedHit",
    "asks_when",
    "dated_evidence_statement",
    "filtered_dated_evidence_statement",
    "filtered_temporal_entry_statement",
    "select_entry_points",
    "temporal_entry_statement",
    "temporal_hop_statement",
    "temporal_proximity",
]

_CAUSAL_BOOST = 2.0
_TEMPORAL_MAX_DEPTH = 3
_TEMPORAL_FANOUT = 10
_TEMPORAL_MIN_SCORE = 0.2
_TEMPORAL_FRONTIER = 20
# A neighbour reached through links but dated outside the window: some temporal evidence.
_NEIGHBOUR_NO_DATE_PROXIMITY = 0.3

_UNIT = r"(days?|weeks?|weekends?|months?|years?|seasons?|decades?)"
WHEN_QUESTION = re.compile(
    r"\b(when|what (year|month|date|day|time)|how long ago|since when|which "
    r"(year|month|day))\b"
    # A question asking how long a state has held or a thing took ("How long has Mara worked
    # at Novabank?", "For how long has Nate had his turtles?", "How long did it take ...?"),
    # which week or season, or how many units passed ("How many weeks passed between ...?",
    # "After how many days ...?") is answered by when things happened as a "when" question
    # is: by memories stating a time ("I've had them for 3 years now" is dated from when the
    # state began, "joined Novabank in 2019"). A habit's length ("How long does she hold the
    # pose?") is not one: only the past and perfect forms and "for how long" count. Not tuned
    # (no constant); on LoCoMo 0-4 (traces re-extracted, benchmarks/temporal_ablation.py)
    # overall R@10 81.8 -> 82.0, temporal R@10 92.9 both (R@5 90.5 -> 89.9): 17 questions move.
    rf"|\bhow long (has|have|had|did|was|were)\b|\bfor how long\b"
    rf"|\b(which|what) (week|weekend|season|decade)\b"
    rf"|\bhow many {_UNIT} (ago|passed|went by|after|before|between|since|later|earlier|elapsed)\b"
    rf"|\b(after|within|in) how many {_UNIT}\b",
    re.IGNORECASE,
)
"""A question asking for a time ("When did ...?", "What year ...?", "How long ago ...?") or for
how long something has held or took ("How long has ...?", "How many weeks passed ...?")."""


def asks_when(text: str) -> bool:
    """Whether ``text`` asks when something happened.

    >>> asks_when("When did Mara move to Cremona?"), asks_when("Where does Mara work?")
    (True, False)
    """
    return WHEN_QUESTION.search(text) is not None


_DATED_COLUMNS = sql.SQL("""u.occurred_start, u.occurred_end, u.mentioned_at, u.date_grain""")

# The window test (the memory happened in the window, i.e. occurred_start..occurred_end
# overlaps it, or was said in it), as both paths of _TEMPORAL_ENTRY apply it.
_IN_WINDOW = sql.SQL("""((u.occurred_start IS NOT NULL AND u.occurred_start <= %(wend)s
            AND coalesce(u.occurred_end, u.occurred_start) >= %(wstart)s)
           OR u.mentioned_at BETWEEN %(wstart)s AND %(wend)s)""")
# A superset of the window's rows that btrees find (a BitmapOr), for the exact path: began in
# the window (memory_units_bank_type_occurred), has a real span (an end after its start) ending
# in or after the window's start (the small partial index of migration 0012), was said in the
# window (memory_units_bank_mentioned). A memory that began before the window yet overlaps it
# has an end after its start, so nothing in the window is missed; _IN_WINDOW then drops the
# spans that start after the window. The span branch has no bound on occurred_start, and
# _IN_WINDOW is applied above an optimisation fence (OFFSET 0), so that the planner cannot
# serve either from memory_units_bank_type_occurred as `occurred_start <= end`: a scan of every
# memory older than the window's end (12k rows instead of 4k for March 2023 at 100k).
_WINDOW_ROWS = sql.SQL("""(u.occurred_start BETWEEN %(wstart)s AND %(wend)s
           OR (u.occurred_end > u.occurred_start AND u.occurred_end >= %(wstart)s)
           OR u.mentioned_at BETWEEN %(wstart)s AND %(wend)s)""")

# A window holding few memories is ranked exactly (its rows found through the btrees of
# _WINDOW_ROWS, every cosine computed, a top-N sort) instead of walking the HNSW graph past
# the memories outside the window. Measured at 100k (bench bank, statement alone, interleaved
# with the former statement, load ~12.5): a one-month window (~4,400 of 100,000 memories) walked
# ~1,500 rejected rows (15k buffers, 97-138 ms) against ~4,300 heap pages exact (61-81 ms); a
# three-month window (~13k rows) is cheaper on the HNSW path (40-72 ms), which keeps it.
# Which path runs is decided inside the statement, as in the semantic arm: ``few`` bounds the
# window's rows by capped index-only counts, one per branch of _WINDOW_ROWS (at most half the cap
# began in the window, at most half spans into it or was said in it; the branches overlap, so
# the exact path never ranks more rows than the cap), and gates each path as a one-time filter.
# A broad window costs the first count only: an index-only scan of half the cap's entries. The HNSW
# branch is the former statement, unchanged. Both compute the same cosine expression, so a
# memory scores the same on either; where the HNSW scan is exact (small banks) both return
# the same rows.
ENTRY_EXACT_MAX_ROWS = 10_000
_ENTRY_COLUMNS = sql.SQL("""u.id::text AS id, 1 - ({vec} <=> {qvec}) AS similarity, {dated}""")
_TEMPORAL_ENTRY = sql.SQL("""
WITH began AS MATERIALIZED (
    SELECT count(*) AS n FROM (
        SELECT 1 FROM memory_units u
        WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[])
          AND u.occurred_start BETWEEN %(wstart)s AND %(wend)s LIMIT {half} + 1) a
),
few AS MATERIALIZED (
    SELECT CASE WHEN b.n > {half} THEN false ELSE
        (SELECT count(*) FROM (
            SELECT 1 FROM memory_units u
            WHERE u.bank_id = %(bank)s AND u.occurred_end > u.occurred_start
              AND u.occurred_end >= %(wstart)s LIMIT {half} + 1) s)
        + (SELECT count(*) FROM (
            SELECT 1 FROM memory_units u
            WHERE u.bank_id = %(bank)s AND u.mentioned_at BETWEEN %(wstart)s AND %(wend)s
            LIMIT {half} + 1) m) <= {half} END AS yes
    FROM began b
){filter_ctes}
SELECT id, similarity, occurred_start, occurred_end, mentioned_at, date_grain FROM ((
    SELECT {columns}
    FROM (SELECT * FROM memory_units u
          WHERE (SELECT yes FROM few) AND u.bank_id = %(bank)s AND {rows}
          OFFSET 0) u
    WHERE u.fact_type = ANY(%(types)s::text[]) AND {dims} AND {tags} AND {in_window}
    ORDER BY 1 - ({vec} <=> {qvec}) DESC, u.id
    LIMIT %(pool)s)
  UNION ALL ({filter_branch}
    SELECT {columns}
    FROM memory_units u
    WHERE NOT (SELECT yes FROM few) AND u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[])
      AND {dims} AND {tags} AND {in_window}{filter_gate}
    ORDER BY {vec} <=> {qvec}
    LIMIT %(pool)s)) e""")
# Under a tag or metadata filter a broad window's HNSW branch walks the graph past every memory
# outside the window or the filter: at 100k (bench bank, team=er, 12,300 of 100,000 match) the
# entry statement took 54 ms p50 (12 dated queries; 31 ms when the same queries ran unfiltered;
# benchmarks/filtered_profile.py, load ~2). So, as the semantic arm does, a filter matching at
# most EXACT_MAX_ROWS memories of the window (its btrees' superset, _WINDOW_ROWS) is ranked
# exactly when the window itself is too broad to be: ``fmatching`` reads those memories (only
# when ``few`` is false: a small window keeps its own exact branch), each one's distance and
# whether it is in the window, and ``ffew`` gates the third branch, the top ``pool`` of those
# in the window by distance, joined to their dates. The same cosine expression, so a memory
# scores the same on every branch; the rows are the window's true top ``pool`` among the
# filter's memories, which the HNSW walk approximated. Measured at 100k (team=er, the 12
# dated bench queries' entry statements x 3 rounds interleaved, load ~4.2,
# benchmarks/filtered_temporal_ab.py): p50 24.9 -> 14.7 ms; per statement from 40 -> 15 ms
# (a narrow window across the filter) to 24 -> 41 ms (a window holding half the bank, whose
# HNSW walk finds its 60 rows early); every row the walk returned is in the exact top. These
# CTEs, the branch and the HNSW branch's gate fill _TEMPORAL_ENTRY's three slots, empty without
# a filter (the statement is then the one it always was, character for character).
# ``{types}`` is the arm's type_clause: under a filter asking every fact type, TRUE (the test
# is vacuous, and its estimate below 1 misled the planner). Measured at 100k (the 12 dated bench
# queries, load ~3.5, benchmarks/statement_cpu_ab.py): ``fmatching``'s statement 0.83x (``$and``)
# and 0.87x (``team``) of server CPU, identical results; ~2,900 fewer buffers of ~75,000
# (benchmarks/type_test_whatif.py, docs/benchmarks/filt3_statements.md).
_FILTERED_ENTRY_CTES = sql.SQL(""",
fmatching AS MATERIALIZED (
    SELECT u.id, {vec} <=> {qvec} AS distance, {in_window} AS inside
    FROM memory_units u
    WHERE NOT (SELECT yes FROM few) AND u.bank_id = %(bank)s AND {rows}
      AND {types} AND {dims} AND {tags}
    LIMIT {cap} + 1
),
ffew AS MATERIALIZED (
    SELECT count(*) <= {cap} AS yes FROM fmatching
)""")
_FILTERED_ENTRY_BRANCH = sql.SQL("""
    SELECT u.id::text AS id, 1 - m.distance AS similarity, {dated}
    FROM (SELECT m.id, m.distance FROM fmatching m
          WHERE (SELECT yes FROM ffew) AND m.inside
          ORDER BY m.distance, m.id
          LIMIT %(pool)s) m
    JOIN memory_units u ON u.bank_id = %(bank)s AND u.id = m.id)
  UNION ALL (""")
_FILTERED_ENTRY_GATE = sql.SQL(" AND NOT (SELECT yes FROM ffew)")
# The exact branch is planned even when the HNSW branch runs: a parallel plan for it launched
# workers that cost ~50 ms under load without reading a row, and the sequential scan the planner
# sometimes preferred to the BitmapOr (its row estimates for the window are poor) read the whole
# bank (~190 ms against ~50 ms, at 100k).
ENTRY_SETTINGS = {"max_parallel_workers_per_gather": "0", "enable_seqscan": "off"}


def filtered_temporal_entry_statement(
    tags: sql.Composable,
    dimension: Dimension,
    *,
    exact_max: int = ENTRY_EXACT_MAX_ROWS,
    filter_max: int = EXACT_MAX_ROWS,
    types: sql.Composable = TYPES_TEST,
) -> sql.Composed:
    """:func:`temporal_entry_statement` under a tag or metadata filter (``tags``): a broad
    window is ranked exactly among the filter's memories when at most ``filter_max`` match,
    else by the HNSW scan. ``types``: the fact-type test of that exact read
    (:func:`~shared_core.recall.arms.type_clause`)."""
    return _entry(tags, dimension, exact_max=exact_max, filter_max=filter_max, types=types)


def _dated_statement(template: sql.SQL, tags: sql.Composable, dimension: Dimension) -> sql.Composed:
    return template.format(
        dated=_DATED_COLUMNS,
        tags=tags,
        vec=dimension.column,
        qvec=dimension.query(),
        dims=dimension.predicate,
    )


def temporal_entry_statement(
    tags: sql.Composable, dimension: Dimension, *, exact_max: int = ENTRY_EXACT_MAX_ROWS
) -> sql.Composed:
    """The most similar memories dated inside the window (occurred or mentioned): ranked
    exactly when the window holds at most about ``exact_max`` memories, else by an HNSW scan."""
    return _entry(tags, dimension, exact_max=exact_max, filter_max=None, types=TYPES_TEST)


def _entry(
    tags: sql.Composable,
    dimension: Dimension,
    *,
    exact_max: int,
    filter_max: int | None,
    types: sql.Composable,
) -> sql.Composed:
    """The entry statement; with ``filter_max``, the filter's exact branch and its gate too."""
    vec, qvec = dimension.column, dimension.query()
    names = {"rows": _WINDOW_ROWS, "in_window": _IN_WINDOW, "tags": tags, "vec": vec, "qvec": qvec}
    empty = sql.SQL("")
    return _TEMPORAL_ENTRY.format(
        half=sql.Literal(int(exact_max) // 2),
        columns=_ENTRY_COLUMNS.format(vec=vec, qvec=qvec, dated=_DATED_COLUMNS),
        dims=dimension.predicate,
        filter_ctes=empty
        if filter_max is None
        else _FILTERED_ENTRY_CTES.format(
            cap=sql.Literal(int(filter_max)), dims=dimension.predicate, types=types, **names
        ),
        filter_branch=empty if filter_max is None else _FILTERED_ENTRY_BRANCH.format(dated=_DATED_COLUMNS),
        filter_gate=empty if filter_max is None else _FILTERED_ENTRY_GATE,
        **names,
    )


_DATED_EVIDENCE = sql.SQL("""
SELECT u.id::text AS id, 1 - ({vec} <=> {qvec}) AS similarity, {dated}
FROM memory_units u
WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[]) AND {dims} AND {tags}
  AND u.occurred_start IS NOT NULL
ORDER BY {vec} <=> {qvec}
LIMIT %(n)s""")


def dated_evidence_statement(tags: sql.Composable, dimension: Dimension) -> sql.Composed:
    """The memories most similar to the query among those whose text stated a time."""
    return _dated_statement(_DATED_EVIDENCE, tags, dimension)


# Under a tag or metadata filter the HNSW scan above walks past every memory the filter or the
# date test rejects: at 100k (bench bank, team=er, 12,300 of 100,000 match, all dated) it took
# 102 ms p50 against 17 ms unfiltered (4 "when" questions of 50; benchmarks/filtered_profile.py,
# load ~2-3). So, as the semantic arm does, when at most EXACT_MAX_ROWS dated memories pass the
# filter they are ranked exactly (the semantic arm's head, ``matching_head``, over the filter
# and the date test) and the top n joined to their dates, in order; otherwise the scan above
# runs, unchanged. The same cosine expression: a memory scores the same on either branch.
# Interleaved with the HNSW statement (team=er, the 4 "when" bench questions x 3 rounds, load
# ~4.2, benchmarks/filtered_temporal_ab.py): p50 57.2 -> 44.5 ms (11,969 buffers against
# 21,703 for the walk); 99.4% of the walk's 300 rows are in the exact top 300 (min 98.0%).
_FILTERED_DATED_EVIDENCE = sql.SQL("""{matching}SELECT * FROM ((
    SELECT u.id::text AS id, 1 - m.distance AS similarity, {dated}
    FROM (SELECT m.id, m.distance FROM matching m
          WHERE (SELECT yes FROM few)
          ORDER BY m.distance, m.id
          LIMIT %(n)s) m
    JOIN memory_units u ON u.bank_id = %(bank)s AND u.id = m.id
    ORDER BY m.distance, m.id)
  UNION ALL ({scan})) e""")
_DATED = sql.SQL("u.occurred_start IS NOT NULL")


def filtered_dated_evidence_statement(
    tags: sql.Composable,
    dimension: Dimension,
    *,
    exact_max: int = EXACT_MAX_ROWS,
    types: sql.Composable = TYPES_TEST,
) -> sql.Composed:
    """:func:`dated_evidence_statement` under a tag or metadata filter (``tags``): the dated
    memories it lets through ranked exactly when at most ``exact_max`` of them, else the HNSW
    scan. ``types`` is the exact read's fact-type test, as the semantic arm's
    (:func:`~shared_core.recall.arms.type_clause`); the scan keeps its own."""
    dated = sql.SQL("({} AND {})").format(tags, _DATED)
    gate = sql.SQL("NOT (SELECT yes FROM few) AND {}").format(tags)
    return _FILTERED_DATED_EVIDENCE.format(
        matching=matching_head(dated, dimension, exact_max, types=types),
        dated=_DATED_COLUMNS,
        scan=_dated_statement(_DATED_EVIDENCE, gate, dimension),
    )


# One hop of spreading along temporal and causal links: for each frontier memory, its
# %(fanout)s strongest out-links to memories at least %(temporal_min)s similar to the query
# (of the requested types and tags). The plan runs one hop per round trip and keeps the
# frontier de-duplicated and capped: a recursive CTE cannot de-duplicate across iterations,
# and on chat data (same-session temporal links of weight 1, in both directions) its paths
# multiplied to seconds per query (measured on LoCoMo).
# Under a tag or metadata filter each link's memory is read by its primary key (a LATERAL
# behind OFFSET 0, ``_HOP_MEMORY_FENCED``) and filtered there: the planner, misjudging a
# selective filter (10 memories estimated for {"user": ...}, 517 match at 100k), read every
# matching memory through the GIN index for each frontier memory and probed the links for
# each: 4,550 probes, 23,813 buffers, 44 ms for one hop, against ~20 links per frontier memory
# read in link order (862 buffers, the unfiltered plan's). Unfiltered recalls keep the plain
# join (the statement they always ran: a hop's ties in weight come out in its plan's order).
# ``{types}`` is the arm's type_clause (TRUE under a filter asking every fact type).
_TEMPORAL_HOP = sql.SQL("""
SELECT f.id::text AS from_id, nxt.to_id::text AS id, nxt.link_type, nxt.weight, nxt.similarity,
       nxt.occurred_start, nxt.occurred_end, nxt.mentioned_at, nxt.date_grain
FROM unnest(%(frontier)b::uuid[]) AS f(id)
CROSS JOIN LATERAL (
    SELECT l.to_id, l.link_type, l.weight, 1 - ({vec} <=> {qvec}) AS similarity,
           {dated}
    FROM memory_links l
    {memory}
    WHERE l.bank_id = %(bank)s AND l.from_id = f.id AND l.weight >= 0.1
      AND l.link_type IN ('temporal', 'causes', 'caused_by', 'enables', 'prevents')
      AND {types} AND {tags}
      AND {dims} AND 1 - ({vec} <=> {qvec}) >= %(temporal_min)s
    ORDER BY l.weight DESC
    LIMIT %(fanout)s) nxt""")


_HOP_MEMORY = sql.SQL("JOIN memory_units u ON u.bank_id = l.bank_id AND u.id = l.to_id")
_HOP_MEMORY_FENCED = sql.SQL("""CROSS JOIN LATERAL (SELECT * FROM memory_units u
                        WHERE u.bank_id = l.bank_id AND u.id = l.to_id OFFSET 0) u""")


def temporal_hop_statement(
    tags: sql.Composable, dimension: Dimension, *, filtered: bool = False, types: sql.Composable = TYPES_TEST
) -> sql.Composed:
    """One hop of spreading from ``%(frontier)b`` along temporal and causal links (the ids as
    text, sent in binary: see :data:`~shared_core.recall.hydrate.HYDRATE`; ``filtered``:
    ``tags`` holds a tag or metadata filter, each link's memory read by primary key; ``types``:
    the fact-type test, :func:`~shared_core.recall.arms.type_clause`)."""
    return _TEMPORAL_HOP.format(
        types=types,
        memory=_HOP_MEMORY_FENCED if filtered else _HOP_MEMORY,
        dated=_DATED_COLUMNS,
        tags=tags,
        vec=dimension.column,
        qvec=dimension.query(),
        dims=dimension.predicate,
    )


NO_DATE_PROXIMITY = 0.5


@dataclass(frozen=True, slots=True, kw_only=True)
class DatedHit:
    """A memory with its similarity to the query and its dates: one row of
    :func:`temporal_entry_statement` and :func:`dated_evidence_statement`."""

    id: str
    similarity: float
    occurred_start: _dt.datetime | None
    occurred_end: _dt.datetime | None
    mentioned_at: _dt.datetime | None
    date_grain: DateGrain | None

    @property
    def date(self) -> _dt.datetime | None:
        return effective_date(self.occurred_start, self.occurred_end, self.mentioned_at, self.date_grain)


def temporal_proximity(date: _dt.datetime | None, window: TimeWindow) -> float:
    """``1 - min(|date - centre| / (span / 2), 1)``: 1 at the window's centre, 0 at its edges
    and beyond; 0.5 (neutral) for an undated memory.

    >>> import datetime as dt
    >>> w = TimeWindow(start=dt.datetime(2024, 3, 1), end=dt.datetime(2024, 3, 31))
    >>> temporal_proximity(dt.datetime(2024, 3, 16, tzinfo=dt.UTC), w)
    1.0
    """
    if date is None:
        return NO_DATE_PROXIMITY
    half = window.span.total_seconds() / 2
    distance = abs((date - window.centre).total_seconds())
    if half <= 0:
        return 1.0 if distance == 0 else 0.0
    return 1.0 - min(distance / half, 1.0)


def select_entry_points(
    hits: Sequence[DatedHit], window: TimeWindow, *, buckets: int, keep: int
) -> list[DatedHit]:
    """Pick ``keep`` entry points spread over ``buckets`` equal slices of the window.

    Round-robin by tier: the most similar hit of every populated bucket first (earliest
    bucket first), then the second of each, and so on. A query about "2023" thus sees the
    whole year rather than the ten most similar memories of one week.
    """
    if keep <= 0 or not hits:
        return []
    span = window.span.total_seconds()
    slots: list[list[DatedHit]] = [[] for _ in range(max(1, buckets))]
    for hit in sorted(hits, key=lambda h: (-h.similarity, h.id)):
        date = hit.date
        if date is None or span <= 0:
            index = 0
        else:
            offset = (min(max(date, window.start), window.end) - window.start).total_seconds()
            index = min(int(offset / span * len(slots)), len(slots) - 1)
        slots[index].append(hit)
    chosen: list[DatedHit] = []
    tier = 0
    while len(chosen) < keep and any(len(s) > tier for s in slots):
        for slot in slots:
            if tier < len(slot) and len(chosen) < keep:
                chosen.append(slot[tier])
        tier += 1
    return chosen


def _hit_of(row: _HopRow | _SpreadRow) -> DatedHit:
    """The dated memory of a spread's row (its similarity may come as numeric: read as float)."""
    return DatedHit(
        id=row.id,
        similarity=float(row.similarity),
        occurred_start=row.occurred_start,
        occurred_end=row.occurred_end,
        mentioned_at=row.mentioned_at,
        date_grain=row.date_grain,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _HopRow:
    """One row of :func:`temporal_hop_statement`: a link from ``from_id`` to the dated ``id``."""

    from_id: str
    id: str
    link_type: str
    weight: float
    similarity: float
    occurred_start: _dt.datetime | None
    occurred_end: _dt.datetime | None
    mentioned_at: _dt.datetime | None
    date_grain: DateGrain | None

    @property
    def hit(self) -> DatedHit:
        return _hit_of(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Reached:
    """A memory the spread reached, and the best score it carried."""

    hit: DatedHit
    propagated: float


@dataclass(frozen=True, slots=True, kw_only=True)
class _SpreadRow:
    """One row of :data:`_SPREAD` (``recall_temporal_spread``, migration 0026): a memory the
    spread reached, its best score, its similarity to the query and its dates."""

    id: str
    propagated: float
    similarity: float
    occurred_start: _dt.datetime | None
    occurred_end: _dt.datetime | None
    mentioned_at: _dt.datetime | None
    date_grain: DateGrain | None

    @property
    def reached(self) -> _Reached:
        return _Reached(hit=_hit_of(self), propagated=float(self.propagated))


# An unfiltered recall's whole spread in one call (migration 0026): the loop of _spread on the
# server, the same statement per hop and the same arithmetic in the same order (see the
# migration), instead of one round trip per hop on a dated question's critical path. Filtered
# recalls keep the loop (their hop statement reads each link's memory behind a fence, and
# their filters are the arms' composed SQL), and so do dimensions indexed as halfvec (the
# function compares full-precision vectors, as the vector(d) cast does).
_SPREAD = """
SELECT id, propagated, similarity, occurred_start, occurred_end, mentioned_at, date_grain
FROM recall_temporal_spread(%(bank)s, %(qvec)s, %(dims)s, %(types)s::text[], %(entries)b::uuid[],
                            %(scores)s::float8[], %(depth)s, %(fanout)s, %(frontier_max)s,
                            %(temporal_min)s, %(decay)s, %(causal_boost)s, %(min_score)s)"""


def _dated(hit: DatedHit) -> DatedHit:
    # Postgres may hand a similarity over as numeric (a Decimal): read it as float.
    return dataclasses.replace(hit, similarity=float(hit.similarity))


def _temporal_hits(
    entries: Sequence[DatedHit], neighbours: Sequence[_Reached], window: TimeWindow
) -> list[ArmHit]:
    """Entry points score their proximity; neighbours the better of their own proximity and
    what spread to them. Sorted best first (the arm's rank order)."""
    hits: dict[str, tuple[float, float, float]] = {}  # id -> (score, similarity, proximity)
    for e in entries:
        own = temporal_proximity(e.date, window)
        hits[e.id] = (own, e.similarity, own)
    for reached in neighbours:
        hit = reached.hit
        own = temporal_proximity(hit.date, window) if hit.date else _NEIGHBOUR_NO_DATE_PROXIMITY
        # Spread evidence ranks the neighbour, but its proximity (and so its boost) is its own.
        score = max(own, float(reached.propagated))
        if hit.id not in hits or hits[hit.id][0] < score:
            hits[hit.id] = (score, hit.similarity, own)
    ranked = sorted(hits.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))
    return [ArmHit(id=i, score=s, temporal_proximity=p) for i, (s, _, p) in ranked]


def _spread(
    q: ArmQuery, entries: Sequence[DatedHit], window: TimeWindow, budget: int
) -> Plan[list[_Reached]]:
    """Breadth-first spreading from the entry points: the best ``budget`` memories reached
    (entry points left out), best first.

    score(neighbour) = score(parent) x link weight x (2 for causal links) x decay; a node keeps
    its best score, and the next frontier is the best ``_TEMPORAL_FRONTIER`` new nodes still
    above ``_TEMPORAL_MIN_SCORE``. Unfiltered, in one call (:func:`_spread_in_one_call`);
    filtered, one statement per hop (:func:`_spread_by_hops`).
    """
    best = {e.id: temporal_proximity(e.date, window) for e in entries}
    one_call = not q.filtered and q.dimension.kind == "vector"
    reached = yield from (_spread_in_one_call(q, best) if one_call else _spread_by_hops(q, best))
    entry_ids = {e.id for e in entries}
    neighbours = [r for i, r in reached.items() if i not in entry_ids]
    neighbours.sort(key=lambda r: (-r.propagated, r.hit.id))
    return neighbours[:budget]


def _spread_in_one_call(q: ArmQuery, best: dict[str, float]) -> Plan[dict[str, _Reached]]:
    """The spread from the entry points ``best`` (id -> score) by ``recall_temporal_spread``
    (migration 0026): every memory reached, by id, with its best score."""
    settings = q.settings
    rows: list[_SpreadRow] = yield Query(
        _SPREAD,
        q.params(
            dims=q.dimension.size,
            entries=list(best),
            scores=list(best.values()),
            depth=_TEMPORAL_MAX_DEPTH,
            fanout=_TEMPORAL_FANOUT,
            frontier_max=_TEMPORAL_FRONTIER,
            temporal_min=settings.temporal_min_similarity,
            decay=settings.temporal_decay,
            causal_boost=_CAUSAL_BOOST,
            min_score=_TEMPORAL_MIN_SCORE,
        ),
        row_type=_SpreadRow,
        binary=True,
    )
    return {r.id: r.reached for r in rows}


def _spread_by_hops(q: ArmQuery, best: dict[str, float]) -> Plan[dict[str, _Reached]]:
    """The spread from the entry points ``best`` (id -> score; updated), one statement per hop:
    every memory reached, by id, with its best score."""
    settings = q.settings
    statement = (
        _unfiltered_hop_statement(q.dimension)
        if not q.filtered
        else temporal_hop_statement(q.where_sql, q.dimension, filtered=True, types=type_clause(q))
    )
    reached: dict[str, _Reached] = {}
    frontier = list(best)
    for _ in range(_TEMPORAL_MAX_DEPTH):
        if not frontier:
            break
        rows: list[_HopRow] = yield Query(
            statement,
            q.params(
                frontier=frontier,
                fanout=_TEMPORAL_FANOUT,
                temporal_min=settings.temporal_min_similarity,
            ),
            # Text rows: the link weight is a real, whose text form (0.9644676) is not the
            # float the binary one gives (0.9644675850868225), and the spread multiplies it.
            row_type=_HopRow,
        )
        grown: dict[str, float] = {}
        for row in rows:
            boost = 1.0 if row.link_type == "temporal" else _CAUSAL_BOOST
            score = best[row.from_id] * float(row.weight) * boost * settings.temporal_decay
            if score <= _TEMPORAL_MIN_SCORE or score <= best.get(row.id, 0.0):
                continue
            best[row.id] = score
            grown[row.id] = score
            reached[row.id] = _Reached(hit=row.hit, propagated=score)
        frontier = sorted(grown, key=lambda i: -grown[i])[:_TEMPORAL_FRONTIER]
    return reached


def _exact_filter(q: ArmQuery) -> bool:
    """Whether a tag or metadata filter may be narrow enough to rank its memories exactly
    (an unfiltered recall, or one the planner expects to match many, runs the statements it
    always ran)."""
    return q.filtered and not skips_exact(q)


def _start(q: ArmQuery) -> Query | None:
    exact = _exact_filter(q)
    if q.window is None:
        if not (q.asks_when and q.settings.temporal_when_questions):
            return None
        dated = (
            filtered_dated_evidence_statement(q.where_sql, q.dimension, types=type_clause(q))
            if exact
            else dated_evidence_statement(q.where_sql, q.dimension)
            if q.filtered
            else _unfiltered_dated_evidence_statement(q.dimension)
        )
        return Query(dated, q.params(), row_type=DatedHit, binary=True)
    entry = (
        filtered_temporal_entry_statement(q.where_sql, q.dimension, types=type_clause(q))
        if exact
        else temporal_entry_statement(q.where_sql, q.dimension)
        if q.filtered
        else _unfiltered_entry_statement(q.dimension)
    )
    return Query(
        entry,
        q.params(wstart=q.window.start, wend=q.window.end, pool=q.settings.temporal_entry_pool),
        # Unfiltered, with a generic plan (framed anyway for ENTRY_SETTINGS: nothing added):
        # its btree and HNSW paths are gated inside the statement, by capped counts, not by the
        # planner's window estimates. Measured at 100k (bench bank, the 12 dated bench queries'
        # entry statements prepared, one connection, 4 rounds, load ~3): server CPU p50 8.88 ->
        # 8.23 ms, mean 8.39 -> 7.54, rows identical. A filter's clauses (tags, jsonpath) keep
        # custom plans: their selectivity is the planner's to read from the values.
        settings=ENTRY_SETTINGS if q.filtered else {**ENTRY_SETTINGS, **GENERIC_PLAN},
        row_type=DatedHit,
        binary=True,
    )


def _finish(q: ArmQuery, rows: Sequence[DatedHit] | BaseException, watch: Stopwatch) -> Plan[ArmResult]:
    window = q.window
    settings = q.settings
    if window is None:  # a "when" question: the matching memories that state a date
        hits = [
            ArmHit(id=r.id, score=float(r.similarity))
            for r in rows_or_raise(rows)
            if float(r.similarity) >= settings.temporal_min_similarity
        ]
        return ArmResult(hits=hits)
    with watch.stage("temporal_spread"):
        pool = [_dated(r) for r in rows_or_raise(rows)]
        pool = [h for h in pool if h.similarity >= settings.temporal_min_similarity]
        entries = select_entry_points(
            pool, window, buckets=settings.temporal_buckets, keep=settings.temporal_entry_points
        )
        neighbours: list[_Reached] = []
        budget_left = q.n - len(entries)
        if entries and budget_left > 0:
            neighbours = yield from _spread(q, entries, window, budget_left)
        hits = _temporal_hits(entries, neighbours, window)
    return ArmResult(hits=hits)


# The unfiltered statements (their ``where_sql`` is then always ``(TRUE AND TRUE)``, the type
# test TYPES_TEST), composed once (shared_core.storage.statements), as the other arms' are: the
# hop statement was composed once per spread and rendered at each of its (usually three) hops,
# one after another on a dated recall's path (~0.15 ms composing and 0.05 ms rendering each
# time), the entry statement (2,454 bytes) composed and rendered at every dated recall
# (0.12 ms rendering). Measured with timeit, 2026-12-03 (docs/benchmarks/crit19_recall.md).
@functools.cache
def _unfiltered_hop_statement(dimension: Dimension) -> sql.SQL:
    return flat(
        temporal_hop_statement(ArmQuery.unfiltered_where(), dimension, filtered=False, types=TYPES_TEST)
    )


@functools.cache
def _unfiltered_entry_statement(dimension: Dimension) -> sql.SQL:
    return flat(temporal_entry_statement(ArmQuery.unfiltered_where(), dimension))


@functools.cache
def _unfiltered_dated_evidence_statement(dimension: Dimension) -> sql.SQL:
    return flat(dated_evidence_statement(ArmQuery.unfiltered_where(), dimension))


TEMPORAL = Arm(start=_start, finish=_finish)
