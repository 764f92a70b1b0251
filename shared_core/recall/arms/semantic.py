"""The semantic arm: nearest memories by cosine distance, one HNSW scan per fact type."""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import sql

from shared_core.recall.arms import Arm, ArmQuery, ArmResult, ScoredRow, ranked, rows_or_raise
from shared_core.recall.filters import MATCH_ALL
from shared_core.recall.timing import Stopwatch
from shared_core.storage.dimensions import Dimension
from shared_core.storage.plan import Plan, Query

__all__ = ["EXACT_MAX_ROWS", "SEMANTIC", "filtered_semantic_statement", "semantic_statement"]

# One scan per fact type, the type and the dimension inlined as literals (a validated enum
# value, an int) so the planner picks that type's partial HNSW index for that dimension
# (migrations 0003, 0006) instead of filtering a shared one.
# Rows below %(semantic_min)s cosine are dropped after each scan's LIMIT.
_SEMANTIC_SCAN = sql.SQL("""(
    SELECT u.id::text AS id, 1 - ({vec} <=> {qvec}) AS score
    FROM memory_units u
    WHERE u.bank_id = %(bank)s AND u.fact_type = {ft} AND {dims} AND {tags}
    ORDER BY {vec} <=> {qvec}
    LIMIT %(n)s)""")


# A filtered recall (tags, a metadata filter) that matches at most EXACT_MAX_ROWS memories of
# the bank ranks them exactly instead: the HNSW scan, iterating past the memories the filter
# rejects, walked up to hnsw.max_scan_tuples per fact type to fill its LIMIT from a filter
# matching 1/200 of a bank (measured at 10k: 344 ms for one fact type's scan, against ~1 ms
# for a bitmap scan of the matching rows and a sort; the planner's choice between the two
# rests on a fixed selectivity guess for jsonpath tests). Which path runs is decided inside
# the statement: ``few`` counts matching rows up to the cap (a LIMIT, so a broad filter stops
# early) and gates each branch as a one-time filter, so the branch not taken never runs and
# ``matching`` (lazily materialised) is read only on the exact path. Both paths compute the
# same cosine expression, so a memory scores the same on either. The cap, measured at 100k
# (bench corpus, load ~3, semantic statement p50): 1,500 matches 734 ms HNSW -> 37 ms exact;
# 500 matches 90 -> 16 ms; 12,500 matches exact 163-285 ms vs HNSW 116-201 ms (the matching
# vectors outgrow work_mem), and the capped count costs a broad filter ~20 ms at 10,000 but
# less at 2,000.
EXACT_MAX_ROWS = 2_000
_FILTERED_SEMANTIC = sql.SQL("""
WITH few AS MATERIALIZED (
    SELECT count(*) <= {cap} AS yes FROM (
        SELECT 1 FROM memory_units u
        WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s) AND {dims} AND {tags}
        LIMIT {cap} + 1) c
),
matching AS MATERIALIZED (
    SELECT u.id, u.fact_type, {vec} AS v FROM memory_units u
    WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s) AND {dims} AND {tags}
)
SELECT id, score FROM ({exact} UNION ALL {scans}) s WHERE score >= %(semantic_min)s""")
_EXACT_SCAN = sql.SQL("""(
    SELECT m.id::text AS id, 1 - (m.v <=> {qvec}) AS score
    FROM matching m
    WHERE (SELECT yes FROM few) AND m.fact_type = {ft}
    ORDER BY m.v <=> {qvec}
    LIMIT %(n)s)""")


def _scans(types: Sequence[str], tags: sql.Composable, dimension: Dimension) -> sql.Composed:
    return sql.SQL(" UNION ALL ").join(
        _SEMANTIC_SCAN.format(
            ft=sql.Literal(t),
            tags=tags,
            vec=dimension.column,
            qvec=dimension.query(),
            dims=dimension.predicate,
        )
        for t in types
    )


def semantic_statement(types: Sequence[str], tags: sql.Composable, dimension: Dimension) -> sql.Composed:
    """The semantic arm: one HNSW scan per fact type, as one ``UNION ALL``."""
    return sql.SQL("SELECT id, score FROM ({scans}) s WHERE score >= %(semantic_min)s").format(
        scans=_scans(types, tags, dimension)
    )


def filtered_semantic_statement(
    types: Sequence[str], tags: sql.Composable, dimension: Dimension, *, exact_max: int = EXACT_MAX_ROWS
) -> sql.Composed:
    """The semantic arm under a filter: an exact ranking of the matching memories when at most
    ``exact_max`` match, else the HNSW scans of :func:`semantic_statement`."""
    gate = sql.SQL("NOT (SELECT yes FROM few) AND {}").format(tags)
    exact = sql.SQL(" UNION ALL ").join(
        _EXACT_SCAN.format(ft=sql.Literal(t), qvec=dimension.query()) for t in types
    )
    return _FILTERED_SEMANTIC.format(
        cap=sql.Literal(int(exact_max)),
        dims=dimension.predicate,
        tags=tags,
        vec=dimension.column,
        exact=exact,
        scans=_scans(types, gate, dimension),
    )


def _filtered(q: ArmQuery) -> bool:
    """Whether anything but the bank and the fact types restricts the memories searched."""
    return q.filter is not MATCH_ALL or bool(q.tags) or q.tags_match == "exact"


def _start(q: ArmQuery) -> Query:
    build = filtered_semantic_statement if _filtered(q) else semantic_statement
    return Query(
        build(q.types, q.where_sql, q.dimension),
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
