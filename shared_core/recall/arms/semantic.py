"""The semantic arm: nearest memories by cosine distance, one HNSW scan per fact type."""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import sql

from shared_core.recall.arms import Arm, ArmQuery, ArmResult, ScoredRow, ranked, rows_or_raise
from shared_core.recall.timing import Stopwatch
from shared_core.storage.dimensions import Dimension
from shared_core.storage.plan import Plan, Query

__all__ = ["SEMANTIC", "semantic_statement"]

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


def semantic_statement(types: Sequence[str], tags: sql.Composable, dimension: Dimension) -> sql.Composed:
    """The semantic arm: one HNSW scan per fact type, as one ``UNION ALL``."""
    scans = sql.SQL(" UNION ALL ").join(
        _SEMANTIC_SCAN.format(
            ft=sql.Literal(t),
            tags=tags,
            vec=dimension.column,
            qvec=dimension.query(),
            dims=dimension.predicate,
        )
        for t in types
    )
    return sql.SQL("SELECT id, score FROM ({scans}) s WHERE score >= %(semantic_min)s").format(scans=scans)


def _start(q: ArmQuery) -> Query:
    return Query(
        semantic_statement(q.types, q.where_sql, q.dimension),
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
