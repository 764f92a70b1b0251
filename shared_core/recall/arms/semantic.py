"""The semantic arm: nearest memories by cosine distance, one HNSW scan per fact type."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from psycopg import sql

from shared_core.recall.arms import Arm, ArmQuery, ArmResult, ranked, rows_or_raise
from shared_core.recall.timing import Stopwatch
from shared_core.storage.plan import Plan, Query

__all__ = ["SEMANTIC", "semantic_statement"]

# One scan per fact type, the type inlined as a literal (a validated enum value) so the planner
# picks that type's partial HNSW index (migration 0003) instead of filtering a shared one.
# Rows below %(semantic_min)s cosine are dropped after each scan's LIMIT.
_SEMANTIC_SCAN = sql.SQL("""(
    SELECT u.id::text AS id, 1 - (u.embedding <=> %(qvec)s) AS score
    FROM memory_units u
    WHERE u.bank_id = %(bank)s AND u.fact_type = {ft} AND {tags}
    ORDER BY u.embedding <=> %(qvec)s
    LIMIT %(n)s)""")


def semantic_statement(types: Sequence[str], tags: sql.Composable) -> sql.Composed:
    """The semantic arm: one HNSW scan per fact type, as one ``UNION ALL``."""
    scans = sql.SQL(" UNION ALL ").join(_SEMANTIC_SCAN.format(ft=sql.Literal(t), tags=tags) for t in types)
    return sql.SQL("SELECT id, score FROM ({scans}) s WHERE score >= %(semantic_min)s").format(scans=scans)


def _start(q: ArmQuery) -> Query:
    return Query(
        semantic_statement(q.types, q.tag_sql), q.params(semantic_min=q.settings.semantic_min_similarity)
    )


def _finish(
    q: ArmQuery, rows: Sequence[Mapping[str, Any]] | BaseException, watch: Stopwatch
) -> Plan[ArmResult]:
    return ArmResult(hits=ranked(rows_or_raise(rows)))
    yield  # a plan with no further I/O


SEMANTIC = Arm(start=_start, finish=_finish)
