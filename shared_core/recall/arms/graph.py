"""The graph arm: expansion from the top semantic seeds along shared entities and links."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg import sql

from shared_core.recall.arms import Arm, ArmQuery, ArmResult, rows_or_raise
from shared_core.recall.fusion import ArmHit
from shared_core.recall.timing import Stopwatch
from shared_core.storage.dimensions import Dimension
from shared_core.storage.plan import Concurrently, Plan, Query

__all__ = ["GRAPH", "graph_statement"]
_GRAPH_SEEDS = sql.SQL("""
seeds AS MATERIALIZED (
    SELECT id FROM (
        SELECT u.id, {vec} <=> {qvec} AS distance FROM memory_units u
        WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[]) AND {dims}
          AND {tags}
        ORDER BY {vec} <=> {qvec}
        LIMIT %(seed_limit)s) s
    WHERE 1 - distance >= %(seed_min)s
)""")

# Units sharing the seeds' entities, at most %(per_entity)s per entity (newest first: ids are
# time-ordered), each shared entity weighted by its IDF, ln(N / mentions) / ln(N), so a hub
# entity ("user", a chat speaker's own name, in half the bank) counts for almost nothing and a
# rare one for almost 1. Candidates scoring %(graph_min)s or less are noise, not evidence.
_GRAPH_ENTITY = sql.SQL("""
seed_entities AS (
    SELECT DISTINCT ue.entity_id FROM unit_entities ue JOIN seeds s ON ue.unit_id = s.id
    WHERE ue.bank_id = %(bank)s
),
bank_size AS (
    SELECT greatest(coalesce(max(memories), 0), 2)::float8 AS n
    FROM bank_stats WHERE bank_id = %(bank)s
),
entity_hits AS (
    SELECT t.unit_id, 0::float8 AS sw, 0::float8 AS cw,
           sum(greatest(ln(bs.n / greatest(e.mention_count, 1)), 0) / ln(bs.n)) AS ew
    FROM seed_entities se
    CROSS JOIN bank_size bs
    JOIN entities e ON e.bank_id = %(bank)s AND e.id = se.entity_id
    CROSS JOIN LATERAL (
        SELECT ue.unit_id FROM unit_entities ue
        WHERE ue.bank_id = %(bank)s AND ue.entity_id = se.entity_id
          AND ue.unit_id NOT IN (SELECT id FROM seeds)
        ORDER BY ue.unit_id DESC
        LIMIT %(per_entity)s) t
    GROUP BY t.unit_id
),""")

_GRAPH_LINKS = sql.SQL("""
link_hits AS (
    SELECT l.to_id AS unit_id, l.link_type, l.weight FROM memory_links l JOIN seeds s
      ON l.from_id = s.id
    WHERE l.bank_id = %(bank)s AND l.link_type <> 'temporal'
      AND l.to_id NOT IN (SELECT id FROM seeds)
    UNION ALL
    SELECT l.from_id, l.link_type, l.weight FROM memory_links l JOIN seeds s ON l.to_id = s.id
    WHERE l.bank_id = %(bank)s AND l.link_type <> 'temporal'
      AND l.from_id NOT IN (SELECT id FROM seeds)
),
link_scores AS (
    SELECT unit_id,
           coalesce(max(weight) FILTER (WHERE link_type = 'semantic'), 0) AS sw,
           coalesce(max(weight) FILTER (WHERE link_type <> 'semantic'), 0) AS cw,
           0::float8 AS ew
    FROM link_hits GROUP BY unit_id
),""")

_GRAPH_SELECT = sql.SQL("""
scored AS (
    SELECT unit_id, sum(ew) AS ew, sum(sw) AS sw, sum(cw) AS cw FROM (
        {sources}
    ) x GROUP BY unit_id
)
SELECT u.id::text AS id, tanh(0.5 * sc.ew) + %(graph_sw)s * sc.sw + sc.cw AS score,
       sc.ew AS entity_weight, sc.sw AS semantic_weight, sc.cw AS causal_weight
FROM scored sc JOIN memory_units u ON u.bank_id = %(bank)s AND u.id = sc.unit_id
WHERE u.fact_type = ANY(%(types)s::text[]) AND {tags}
  AND tanh(0.5 * sc.ew) + %(graph_sw)s * sc.sw + sc.cw > %(graph_min)s
ORDER BY score DESC, u.id DESC
LIMIT %(n)s""")


def graph_statement(tags: sql.Composable, dimension: Dimension, *, with_entities: bool) -> sql.Composed:
    """Link expansion from the top semantic seeds: shared entities, semantic links (both
    directions) and causal links; ``tanh(0.5 x weighted shared entities) + %(graph_sw)s x
    semantic weight + causal weight``, kept above ``%(graph_min)s``. Tag filters apply inside
    the SQL, to seeds and results alike."""
    seeds = _GRAPH_SEEDS.format(
        tags=tags, vec=dimension.column, qvec=dimension.query(), dims=dimension.predicate
    )
    parts: list[sql.Composable] = [sql.SQL("WITH "), seeds, sql.SQL(",")]
    if with_entities:
        parts.append(_GRAPH_ENTITY)
    parts.append(_GRAPH_LINKS)
    sources: sql.Composable = sql.SQL("SELECT unit_id, ew, sw, cw FROM link_scores")
    if with_entities:
        sources = sql.SQL("SELECT unit_id, ew, sw, cw FROM entity_hits UNION ALL ") + sources
    parts.append(_GRAPH_SELECT.format(sources=sources, tags=tags))
    return sql.Composed(parts)


def _params(q: ArmQuery) -> dict[str, Any]:
    s = q.settings
    return q.params(
        seed_limit=s.graph_seed_limit,
        seed_min=s.graph_seed_min_similarity,
        per_entity=s.graph_per_entity_limit,
        graph_min=s.graph_min_score,
        graph_sw=s.graph_semantic_link_factor,
    )


def _start(q: ArmQuery) -> Query:
    return Query(
        graph_statement(q.where_sql, q.dimension, with_entities=True),
        _params(q),
        timeout_ms=q.settings.graph_timeout_ms,
    )


def _finish(
    q: ArmQuery, rows: Sequence[Mapping[str, Any]] | BaseException, watch: Stopwatch
) -> Plan[ArmResult]:
    notes: tuple[str, ...] = ()
    if isinstance(rows, psycopg.errors.QueryCanceled):
        # Entity expansion over hub entities can blow up: fall back to links only, which are
        # bounded by the seeds' out-degree.
        notes = (
            f"graph arm timed out after {q.settings.graph_timeout_ms} ms: "
            "fell back to semantic and causal links only",
        )
        with watch.stage("graph_fallback"):
            (rows,) = yield Concurrently(
                (Query(graph_statement(q.where_sql, q.dimension, with_entities=False), _params(q)),)
            )
    # Already ordered by the SQL (score, then id descending).
    return ArmResult(
        hits=[ArmHit(id=r["id"], score=float(r["score"])) for r in rows_or_raise(rows)], notes=notes
    )


GRAPH = Arm(start=_start, finish=_finish)
