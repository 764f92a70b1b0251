"""The graph arm: a personalised-PageRank spread over the memory-entity graph from the query's
own entities and the semantic and keyword arms' top hits, plus links from the semantic seeds.

The arm ``needs`` the semantic and keyword arms: it starts once their hits are in and spreads
from them, so the filters that shaped those hits shaped its seeds too."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from shared_core.extraction.entities import mention_keys
from shared_core.recall.arms import (
    TYPES_TEST,
    Arm,
    ArmQuery,
    ArmResult,
    ScoredRow,
    rows_or_raise,
    type_clause,
)
from shared_core.recall.fusion import ArmHit
from shared_core.recall.settings import RecallSettings
from shared_core.recall.timing import Stopwatch
from shared_core.storage.plan import GENERIC_PLAN, Concurrently, Plan, Query
from shared_core.storage.statements import flat
from shared_core.types import CAUSAL_LINK_TYPES

__all__ = ["GRAPH", "NEIGHBOURS", "graph_statement", "neighbour_plan", "query_entity_keys", "restart_mass"]

# The seeds arrive as arrays, from the semantic and keyword arms' hits (the arm ``needs`` both):
# the restart mass per seed memory (:func:`restart_mass`) and the semantic seeds, whose links
# are followed. Recomputing them here (an HNSW scan and the whole BM25 scoring, beside the
# semantic and keyword arms doing the same on the same cores) made this statement 58.8 ms p50
# at 100k, against ~10 ms for the expansion alone (measured, quiet machine).
_SEEDS = sql.SQL("""
seeds AS MATERIALIZED (SELECT unnest(%(link_seeds)b::uuid[]) AS id)""")
_RESTART = sql.SQL("""
restart AS MATERIALIZED (
    SELECT s.id, s.mass FROM unnest(%(seed_ids)b::uuid[], %(seed_mass)s::float8[]) AS s(id, mass)
)""")

# Two steps of a personalised PageRank over the bipartite memory-entity graph. The restart
# mass sits on the seed memories (``restart``) and on the entities the
# query names (%(qe_weight)s each, matched by key). Step one: each seed memory splits its mass
# evenly over its entities. Step two: each entity splits what it holds evenly over the memories
# that mention it (1 / mention_count, PageRank's degree normalisation): a hub entity (a chat
# speaker in half the bank) passes almost nothing to each of its memories, a rare one a lot,
# and a small bank keeps its shared entities (no IDF that vanishes when N is small). A memory
# never receives its own mass back (that is not evidence), and each entity reaches at most
# %(per_entity)s memories (newest first: ids are time-ordered), so the statement stays bounded.
# ``reach`` reads each entity's memories once, however many seeds gave it mass (joined with
# entity_mass first, the planner read them once per seed-entity pair: twice as many scans).
# A memory no link reaches scores its entity mass alone (its link terms sum to 0), so
# entity_hits drops those at or below %(graph_min)s before the scores are stacked, sorted and
# grouped (link_scores comes first in the WITH list for that): at 100k the entities reach
# ~2,000 memories and most are dropped, 42 of the 50 bench queries' statements keep none.
# The entity sums themselves are computed as before, so the scores are the same to the bit
# (tests/integration/test_graph_statement.py). Measured at 100k (the 50 bench queries'
# statements, load ~5): p50 5.5 -> 4.3 ms, same rows.
# Most memories were still read only to be dropped, so the entities are split first. An
# entity's share of any one memory is at most ``bound`` (the absolute mass it holds / its
# degree). Taken in ascending order, the entities whose bounds sum, all together, to at most
# %(graph_min)s are ``faint``: a memory only they reach cannot score above %(graph_min)s (its
# entity sum is at most theirs), so it is dropped unless a link reaches it; the 1e-9 margin
# covers the rounding of both sums. Only the strong entities are fanned out (``strong_reach``);
# a faint entity is read only for the memories the strong ones or the links reach
# (``candidates``, each memory's own entities by the primary key), and kept where it reached
# them: among its %(per_entity)s newest (``edge``, its oldest memory still reached, read once
# per entity). So ``reach`` holds, for every candidate, the rows the full fan-out held, and
# entity_hits sums them as before: same rows, same scores to the bit
# (tests/integration/test_graph_faint.py). A graph_min below 0 makes no entity faint. At 100k
# the seeds' entities are mostly hubs (a 1/rank mass over a few hundred mentions): 2,669
# memories read for "recall 7" of the bench queries became 0. The degree is read per
# entity by the primary key (OFFSET 0 keeps that lookup: the generic plan's hash join read
# every bank's entities). Measured at 100k (benchmarks/statement_cpu_ab.py, load 7.7): graph
# statement server CPU per recall 12.18 -> 3.90 ms, identical results 50 of 50.
_GRAPH_ENTITY = sql.SQL("""
entity_mass AS MATERIALIZED (
    SELECT ue.entity_id, r.id AS src, r.mass / count(*) OVER (PARTITION BY r.id) AS mass
    FROM restart r JOIN unit_entities ue ON ue.bank_id = %(bank)s AND ue.unit_id = r.id
    UNION ALL
    SELECT e.id, NULL::uuid, %(qe_weight)s::float8 FROM entities e
    WHERE e.bank_id = %(bank)s AND e.match_key = ANY(%(query_keys)s::text[])
),
spread AS MATERIALIZED (
    SELECT m.entity_id, d.degree,
           sum(sum(abs(m.mass)) / d.degree) OVER (ORDER BY sum(abs(m.mass)) / d.degree, m.entity_id)
               * (1 + 1e-9) <= %(graph_min)s AS faint
    FROM entity_mass m
    CROSS JOIN LATERAL (
        SELECT greatest(e.mention_count, 1)::float8 AS degree FROM entities e
        WHERE e.bank_id = %(bank)s AND e.id = m.entity_id
        OFFSET 0) d
    GROUP BY m.entity_id, d.degree
),
strong_reach AS MATERIALIZED (
    SELECT sp.entity_id, sp.degree, t.unit_id
    FROM spread sp
    CROSS JOIN LATERAL (
        SELECT ue.unit_id FROM unit_entities ue
        WHERE ue.bank_id = %(bank)s AND ue.entity_id = sp.entity_id
        ORDER BY ue.unit_id DESC
        LIMIT %(per_entity)s) t
    WHERE NOT sp.faint
),
candidates AS MATERIALIZED (
    SELECT unit_id FROM strong_reach UNION SELECT unit_id FROM link_scores
),
faint_links AS MATERIALIZED (
    SELECT c.unit_id, l.entity_id
    FROM candidates c
    CROSS JOIN LATERAL (
        SELECT ue.entity_id FROM unit_entities ue
        WHERE ue.bank_id = %(bank)s AND ue.unit_id = c.unit_id
        OFFSET 0) l
    WHERE l.entity_id IN (SELECT entity_id FROM spread WHERE faint)
),
edge AS MATERIALIZED (
    SELECT f.entity_id, (
        SELECT ue.unit_id FROM unit_entities ue
        WHERE ue.bank_id = %(bank)s AND ue.entity_id = f.entity_id
        ORDER BY ue.unit_id DESC
        OFFSET greatest(%(per_entity)s - 1, 0) LIMIT 1) AS oldest
    FROM (SELECT DISTINCT entity_id FROM faint_links) f
),
reach AS MATERIALIZED (
    SELECT entity_id, degree, unit_id FROM strong_reach
    UNION ALL
    SELECT sp.entity_id, sp.degree, fl.unit_id
    FROM faint_links fl
    JOIN edge ON edge.entity_id = fl.entity_id
    JOIN spread sp ON sp.entity_id = fl.entity_id
    WHERE %(per_entity)s > 0 AND (edge.oldest IS NULL OR fl.unit_id >= edge.oldest)
),
entity_hits AS (
    SELECT r.unit_id, sum(m.mass / r.degree ORDER BY m.entity_id, m.src) AS ew, 0::float8 AS sw,
           0::float8 AS cw
    FROM reach r
    JOIN entity_mass m ON m.entity_id = r.entity_id AND m.src IS DISTINCT FROM r.unit_id
    GROUP BY r.unit_id
    HAVING sum(m.mass / r.degree ORDER BY m.entity_id, m.src) > %(graph_min)s
        OR r.unit_id IN (SELECT unit_id FROM link_scores)
),""")

# A memory's entity terms are summed in one order, (entity, source memory), whatever join order
# the planner picks: float addition is not associative, and sums in the order rows arrived
# differed in the last bit between plans (a custom and a generic plan, the statement with and
# without its pruning), enough to swap near-ties.
# The link types followed (%(link_types)s, see _followed_links) are an index condition of
# memory_links_from / _to (bank_id, id, link_type, ...): the temporal links, most of a chat
# bank's (60 of 88 per seed at 100k), are never fetched from the heap only to be filtered out.
_GRAPH_LINKS = sql.SQL("""
link_hits AS (
    SELECT l.to_id AS unit_id, l.link_type, l.weight FROM memory_links l JOIN seeds s
      ON l.from_id = s.id
    WHERE l.bank_id = %(bank)s AND l.link_type = ANY(%(link_types)s::text[])
      AND l.to_id NOT IN (SELECT id FROM seeds)
    UNION ALL
    SELECT l.from_id, l.link_type, l.weight FROM memory_links l JOIN seeds s ON l.to_id = s.id
    WHERE l.bank_id = %(bank)s AND l.link_type = ANY(%(link_types)s::text[])
      AND l.from_id NOT IN (SELECT id FROM seeds)
),
link_scores AS (
    SELECT unit_id,
           coalesce(max(weight) FILTER (WHERE link_type = 'semantic'), 0) AS sw,
           coalesce(max(weight) FILTER (WHERE link_type <> 'semantic'), 0) AS cw,
           0::float8 AS ew
    FROM link_hits GROUP BY unit_id
),""")

_SCORED = sql.SQL("""
scored AS (
    SELECT unit_id, sum(ew) AS ew, sum(sw) AS sw, sum(cw) AS cw FROM (
        {sources}
    ) x GROUP BY unit_id
)""")
_GRAPH_SELECT = sql.SQL("""
SELECT u.id::text AS id, sc.ew + %(graph_sw)s * sc.sw + sc.cw AS score
FROM scored sc JOIN memory_units u ON u.bank_id = %(bank)s AND u.id = sc.unit_id
WHERE {types} AND {tags}
  AND sc.ew + %(graph_sw)s * sc.sw + sc.cw > %(graph_min)s
ORDER BY score DESC, u.id DESC
LIMIT %(n)s""")
# Under a tag or metadata filter the scored memories are read by their primary key: ``kept``
# (the spread's memories above graph_min, each with its score, the same expression as above, so
# the same bits) gives the ids, and the filter is tested on those rows only. Joined as above,
# the generic plan (the arm's: _start) could not tell how selective the filter is: under the
# bench's ``$and`` filter at 100k it built a bitmap of every memory the filter matches from its
# GIN index (12,448) and hash-joined their heap rows with the scored ids, for a spread that
# keeps a few dozen. ``u.id = ANY(ARRAY(...))`` is an index condition on the primary key
# whatever the filter's estimate. Measured at 100k (the 50 bench queries' statements, load
# ~3.5): under ``$and`` the graph statement's server CPU per recall 9.92 -> 1.64 ms, identical
# results 50 of 50 (benchmarks/statement_cpu_ab.py); ``team`` and tags unchanged (their generic
# plans were already driven by the scored ids; benchmarks/type_test_whatif.py,
# docs/benchmarks/filt3_statements.md). Unfiltered, the join above stays.
_GRAPH_SELECT_FILTERED = sql.SQL(""",
kept AS MATERIALIZED (
    SELECT sc.unit_id, sc.ew + %(graph_sw)s * sc.sw + sc.cw AS score FROM scored sc
    WHERE sc.ew + %(graph_sw)s * sc.sw + sc.cw > %(graph_min)s
)
SELECT u.id::text AS id, k.score
FROM kept k JOIN memory_units u ON u.bank_id = %(bank)s AND u.id = k.unit_id
WHERE u.id = ANY(ARRAY(SELECT unit_id FROM kept)) AND {types} AND {tags}
ORDER BY k.score DESC, u.id DESC
LIMIT %(n)s""")


def graph_statement(
    tags: sql.Composable, *, with_entities: bool, filtered: bool = False, types: sql.Composable = TYPES_TEST
) -> sql.Composed:
    """The graph arm's statement: a two-step personalised PageRank over memories and
    entities, restarted from the seed memories (``%(seed_ids)s`` with ``%(seed_mass)s``) and
    the entities the query names (``%(query_keys)s``), plus semantic links (weighted
    ``%(graph_sw)s``) and causal links (both directions) from the semantic seeds
    (``%(link_seeds)s``; the types followed are ``%(link_types)s``); kept above
    ``%(graph_min)s``. Without entities (the fallback after a timeout) only the links are
    followed. Tag and metadata filters (``tags``) apply to the results here and reached the
    seeds through the arms that found them; ``filtered``: ``tags`` holds such a filter, and
    the scored memories are read by primary key. ``types``: the fact-type test
    (:func:`~shared_core.recall.arms.type_clause`)."""
    parts: list[sql.Composable] = [sql.SQL("WITH "), _SEEDS, sql.SQL(","), _GRAPH_LINKS]
    if with_entities:
        parts += [_RESTART, sql.SQL(","), _GRAPH_ENTITY]
    sources: sql.Composable = sql.SQL("SELECT unit_id, ew, sw, cw FROM link_scores")
    if with_entities:
        sources = sql.SQL("SELECT unit_id, ew, sw, cw FROM entity_hits UNION ALL ") + sources
    parts.append(_SCORED.format(sources=sources))
    parts.append((_GRAPH_SELECT_FILTERED if filtered else _GRAPH_SELECT).format(types=types, tags=tags))
    return sql.Composed(parts)


def query_entity_keys(words: Sequence[str]) -> list[str]:
    """The entity keys a query's words could name (runs of words, as :func:`mention_keys`
    finds them), sorted.

    >>> query_entity_keys(["where", "does", "priya", "work"])
    ['priya', 'priya work', 'work']
    """
    return sorted(mention_keys(" ".join(words)))


def restart_mass(*seed_lists: Sequence[str]) -> dict[str, float]:
    """The PageRank restart mass of each seed memory: 1/rank in each ranked list it is in,
    summed (a memory both arms rank first holds 2).

    >>> restart_mass(["a", "b"], ["b", "c"])
    {'a': 1.0, 'b': 1.5, 'c': 0.5}
    """
    mass: dict[str, float] = {}
    for ids in seed_lists:
        for rank, memory_id in enumerate(ids, start=1):
            mass[memory_id] = mass.get(memory_id, 0.0) + 1.0 / rank
    return mass


def _seeds(q: ArmQuery) -> tuple[list[str], list[str]]:
    """The semantic seeds (the semantic arm's best hits at or above the seed similarity) and
    the keyword seeds (the keyword arm's best hits), best first."""
    s = q.settings
    semantic = [h.id for h in q.prior.get("semantic", ()) if h.score >= s.graph_seed_min_similarity]
    keyword = [h.id for h in q.prior.get("keyword", ())]
    return semantic[: s.graph_seed_limit], keyword[: s.graph_keyword_seed_limit]


def _followed_links(s: RecallSettings) -> list[str]:
    """The link types the arm follows: causal links, and semantic links when they can move a
    score (a factor of 0 makes them add 0; with a non-negative ``graph_min_score`` a memory
    reached by them alone scores 0 and is not kept either way).

    >>> _followed_links(RecallSettings(graph_semantic_link_factor=0.0))
    ['causes', 'caused_by', 'enables', 'prevents']
    """
    semantic = s.graph_semantic_link_factor != 0 or s.graph_min_score < 0
    return [*CAUSAL_LINK_TYPES, *(["semantic"] if semantic else [])]


def _params(q: ArmQuery, semantic: list[str], keyword: list[str]) -> dict[str, Any]:
    s = q.settings
    mass = restart_mass(semantic, keyword)
    return q.params(
        seed_ids=list(mass),
        seed_mass=list(mass.values()),
        link_seeds=semantic,
        link_types=_followed_links(s),
        per_entity=s.graph_per_entity_limit,
        graph_min=s.graph_min_score,
        graph_sw=s.graph_semantic_link_factor,
        qe_weight=s.graph_query_entity_weight,
        query_keys=query_entity_keys(q.words),
    )


def _start(q: ArmQuery) -> Query | None:
    semantic, keyword = _seeds(q)
    params = _params(q, semantic, keyword)
    if not (params["seed_ids"] or params["query_keys"]):
        return None  # nothing to spread from
    # A generic plan: planning this statement was ~0.9 ms of its ~5 ms of server CPU, and its
    # plan does not depend on the values (EXPLAIN (GENERIC_PLAN) gives the custom plans' joins
    # and index scans at 100k; in a database of many banks, one bank's share is estimated from
    # the number of banks, which favours the same index lookups). Framed anyway for its
    # timeout: no round trip added. Measured at 100k (bench bank, the 50 bench queries'
    # statements prepared, interleaved, load ~2-3): server CPU per recall 3.97 -> 3.17 ms, rows
    # identical (benchmarks/statement_cpu_ab.py, docs/benchmarks/lat_recall.md). The entity
    # terms are summed in one order (_GRAPH_ENTITY), so no plan changes a score's last bit.
    return Query(
        _unfiltered_statement()
        if not q.filtered
        else graph_statement(q.where_sql, with_entities=True, filtered=True, types=type_clause(q)),
        params,
        timeout_ms=q.settings.graph_timeout_ms,
        settings=GENERIC_PLAN,
        row_type=ScoredRow,
        binary=True,
    )


@functools.cache
def _unfiltered_statement() -> sql.SQL:
    """:func:`graph_statement` with entities, without a tag or metadata filter (``where_sql``
    then always ``(TRUE AND TRUE)``, the type test :data:`TYPES_TEST`), composed once
    (shared_core.storage.statements)."""
    return flat(graph_statement(ArmQuery.unfiltered_where(), with_entities=True, types=TYPES_TEST))


def _finish(q: ArmQuery, rows: Sequence[ScoredRow] | BaseException, watch: Stopwatch) -> Plan[ArmResult]:
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
                (
                    Query(
                        graph_statement(
                            q.where_sql, with_entities=False, filtered=q.filtered, types=type_clause(q)
                        ),
                        _params(q, *_seeds(q)),
                        row_type=ScoredRow,
                        binary=True,
                    ),
                )
            )
    # Already ordered by the SQL (score, then id descending).
    return ArmResult(hits=[ArmHit(id=r.id, score=float(r.score)) for r in rows_or_raise(rows)], notes=notes)


GRAPH = Arm(start=_start, finish=_finish, needs=frozenset({"semantic", "keyword"}))


# The graph's document-order edges, followed from the learned reranker's first-stage top hits
# (the second graph round, :func:`neighbour_plan`): the memories up to %(window)s places
# before and after each seed in its document, by id (UUIDv7: the order the document's memories
# were retained in). A chat's answer sits in the turn after the question that names its
# subject, a document's detail in the piece after the one that names it; their words and
# vectors may share nothing with the query. Each side is one short range scan of the index
# (bank_id, document_id, id) from the seed (migration 0016: the primary key, filtered to the
# document, read the rest of the bank for a seed at its document's end); memories without a
# document have no neighbours. Filters are not applied here: only neighbours that are already fused
# candidates (which passed them) are read.
NEIGHBOURS = """
SELECT n.id::text AS id, s.id::text AS seed
FROM memory_units s
CROSS JOIN LATERAL (
    (SELECT p.id FROM memory_units p
     WHERE p.bank_id = s.bank_id AND p.document_id = s.document_id AND p.id < s.id
     ORDER BY p.id DESC LIMIT %(window)s)
    UNION ALL
    (SELECT p.id FROM memory_units p
     WHERE p.bank_id = s.bank_id AND p.document_id = s.document_id AND p.id > s.id
     ORDER BY p.id LIMIT %(window)s)
) n
WHERE s.bank_id = %(bank)s AND s.id = ANY(%(ids)b::uuid[]) AND s.document_id IS NOT NULL"""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Neighbour:
    """One row of :data:`NEIGHBOURS`: a memory and the seed it neighbours."""

    id: str
    seed: str


def neighbour_plan(bank: str, seeds: Sequence[str], window: int) -> Plan[dict[str, frozenset[str]]]:
    """The memories within ``window`` places of any of ``seeds`` in its document, each with the
    seeds it neighbours (the seeds themselves included when they neighbour one another)."""
    if not seeds or window <= 0:
        return {}
    rows: list[_Neighbour] = yield Query(
        NEIGHBOURS, {"bank": bank, "ids": list(seeds), "window": window}, row_type=_Neighbour
    )
    found: dict[str, set[str]] = {}
    for r in rows:
        found.setdefault(r.id, set()).add(r.seed)
    return {memory: frozenset(near) for memory, near in found.items()}
