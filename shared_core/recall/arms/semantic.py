"""The semantic arm: nearest memories by cosine distance, one HNSW scan (or, under a narrow
filter, an exact ranking)."""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import sql

from shared_core.recall.arms import Arm, ArmQuery, ArmResult, ScoredRow, ranked, rows_or_raise
from shared_core.recall.filters import MATCH_ALL
from shared_core.recall.timing import Stopwatch
from shared_core.storage.dimensions import Dimension
from shared_core.storage.plan import Plan, Query
from shared_core.types import FACT_TYPES

__all__ = ["EXACT_MAX_ROWS", "SEMANTIC", "filtered_semantic_statement", "semantic_statement"]

# One HNSW scan over the asked fact types, on the dimension's index (its expression and
# predicate inlined, migration 0006), ranked by cosine. It used to be one scan of LIMIT n per
# fact type, each on a partial index of that type (dropped in 0013): 3n rows of which fusion
# ranks everything by cosine anyway (``ranked``), so the extra 2n were the tail of the arm's
# ranking. Measured at 100k (bench bank, benchmarks/semantic_ab.py, the 50 bench queries x 2
# rounds interleaved, load ~13): p50 51.2 -> 21.8 ms, p95 68.1 -> 32.4 ms, 12,625 -> 6,550
# buffers for the slowest query; of the three scans' top 100 by cosine, the one scan returns
# 99.2%. A subset of the types is a filter (below): the index holds every type.
# Rows below %(semantic_min)s cosine are dropped after the LIMIT.
_SEMANTIC_SCAN = sql.SQL("""
    SELECT u.id::text AS id, 1 - ({vec} <=> {qvec}) AS score
    FROM memory_units u
    WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[]) AND {dims} AND {tags}
    ORDER BY {vec} <=> {qvec}
    LIMIT %(n)s""")
_SEMANTIC = sql.SQL("SELECT id, score FROM ({scan}) s WHERE score >= %(semantic_min)s")


# A filtered recall (tags, a metadata filter, some fact types only) ranks the matching
# memories exactly when at most EXACT_MAX_ROWS of the bank match, else by the HNSW scan above
# with the filter, which iterates past the rows the filter rejects: n / selectivity index
# tuples, each a graph step and a row read, against one row read and one distance per match
# for the exact ranking (the planner's choice between the two rests on a fixed selectivity
# guess for jsonpath tests, so the statement decides itself). ``matching`` reads the matching
# rows once, up to the cap plus one (a LIMIT: a broad filter stops there), keeping each one's
# id and distance only (the vectors of 15,000 rows outgrew work_mem when they were kept);
# ``few`` says whether the cap was reached and gates each branch as a one-time filter, so the
# branch not taken never runs. Both branches compute the same cosine expression, so a memory
# scores the same on either. A broad filter pays the capped read before its HNSW scan.
# The cap, measured at 100k (bench bank, n=300, benchmarks/semantic_ab.py, 20 queries
# interleaved, load ~13; semantic statement p50, previous statement -> this one):
# team=er (12,300 matches) 93 -> 34 ms (HNSW alone 42); tags any_strict (9,757) 187 -> 43 (88);
# source and year>=2024 (12,448; the range is not indexed) 187 -> 108 (80); user-017 (517)
# 4.4 -> 1.9; tags any, untagged included (39,699) 81 -> 101 (HNSW alone 27: the 15,001 rows
# read first are the cost). With a cap of 10,000: 65 / 43 / 166 / 1.9 / 77.
EXACT_MAX_ROWS = 15_000
_FILTERED_SEMANTIC = sql.SQL("""
WITH matching AS MATERIALIZED (
    SELECT u.id, {vec} <=> {qvec} AS distance
    FROM (SELECT * FROM memory_units u
          WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[]) AND {dims} AND {tags}
          LIMIT {cap} + 1) u
),
few AS MATERIALIZED (
    SELECT count(*) <= {cap} AS yes FROM matching
)
SELECT id, score FROM ((
    SELECT m.id::text AS id, 1 - m.distance AS score
    FROM matching m
    WHERE (SELECT yes FROM few)
    ORDER BY m.distance, m.id
    LIMIT %(n)s)
  UNION ALL ({scan})) s
WHERE score >= %(semantic_min)s""")


def _scan(tags: sql.Composable, dimension: Dimension) -> sql.Composed:
    return _SEMANTIC_SCAN.format(
        tags=tags, vec=dimension.column, qvec=dimension.query(), dims=dimension.predicate
    )


def semantic_statement(tags: sql.Composable, dimension: Dimension) -> sql.Composed:
    """The semantic arm: one HNSW scan of the memories of the asked fact types."""
    return _SEMANTIC.format(scan=_scan(tags, dimension))


def filtered_semantic_statement(
    tags: sql.Composable, dimension: Dimension, *, exact_max: int = EXACT_MAX_ROWS
) -> sql.Composed:
    """The semantic arm under a filter: an exact ranking of the matching memories when at most
    ``exact_max`` match, else the HNSW scan of :func:`semantic_statement`."""
    gate = sql.SQL("NOT (SELECT yes FROM few) AND {}").format(tags)
    return _FILTERED_SEMANTIC.format(
        cap=sql.Literal(int(exact_max)),
        dims=dimension.predicate,
        tags=tags,
        vec=dimension.column,
        qvec=dimension.query(),
        scan=_scan(gate, dimension),
    )


def _filtered(q: ArmQuery) -> bool:
    """Whether anything but the bank restricts the memories searched (a subset of the fact
    types is a filter too: the HNSW index holds every type)."""
    return (
        q.filter is not MATCH_ALL
        or bool(q.tags)
        or q.tags_match == "exact"
        or set(q.types) != set(FACT_TYPES)
    )


def _start(q: ArmQuery) -> Query:
    build = filtered_semantic_statement if _filtered(q) else semantic_statement
    return Query(
        build(q.where_sql, q.dimension),
        q.params(semantic_min=q.settings.semantic_min_similarity),
        row_type=ScoredRow,
    )


def relative_cut(rows: Sequence[ScoredRow], fraction: float | None) -> Sequence[ScoredRow]:
    """Keep rows scoring at least ``fraction`` of the best score (all when ``fraction`` is
    None or the best is not positive): the cut for models whose cosine scale was not tuned.

    >>> rows = [ScoredRow(id="a", score=0.2), ScoredRow(id="b", score=0.05)]
    >>> [r.id for r in relative_cut(rows, 0.5)]
    ['a']
    """
    if fraction is None or not rows:
        return rows
    best = max(float(r.score) for r in rows)
    if best <= 0:
        return rows
    return [r for r in rows if float(r.score) >= best * fraction]


def _finish(q: ArmQuery, rows: Sequence[ScoredRow] | BaseException, watch: Stopwatch) -> Plan[ArmResult]:
    return ArmResult(hits=ranked(relative_cut(rows_or_raise(rows), q.settings.relative_semantic_cut)))
    yield  # a plan with no further I/O


SEMANTIC = Arm(start=_start, finish=_finish)
