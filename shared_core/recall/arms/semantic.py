"""The semantic arm: nearest memories by cosine distance, one HNSW scan (or, under a narrow
filter, an exact ranking)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

from psycopg import sql

from shared_core.errors import ConfigurationError
from shared_core.recall.arms import (
    TYPES_TEST,
    Arm,
    ArmQuery,
    ArmResult,
    arm_hit,
    best_first,
    rows_or_raise,
    tag_clause,
    type_clause,
)
from shared_core.recall.filters import FilterExpr, compile_filter, range_value_queries, with_range_values
from shared_core.recall.hydrate import MEMORY_COLUMNS, MemoryRow
from shared_core.recall.query import TagsMatch
from shared_core.recall.timing import Stopwatch
from shared_core.storage.dimensions import Dimension
from shared_core.storage.plan import Pipeline, Plan, Query
from shared_core.storage.statements import flat
from shared_core.types import FACT_TYPES

__all__ = [
    "EXACT_MAX_ROWS",
    "EXACT_SKIP_ESTIMATE",
    "FILTER_INDEX_MIN_ESTIMATE",
    "FILTER_INDEX_PREFIX",
    "SEMANTIC",
    "declare_filter_index",
    "declared_params",
    "filter_index_prefix",
    "filter_index_statement",
    "filtered_semantic_rows_statement",
    "filtered_semantic_statement",
    "matching_estimate_statement",
    "matching_head",
    "semantic_rows_statement",
    "semantic_statement",
    "skips_exact",
    "walk_hits",
    "walks_filter",
]

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
# The same scan reading its hits' ranking fields (a MemoryRow each, ``similarity`` the score):
# the index scan fetches each hit's row to filter it anyway, and at 100k the fused cut is
# most often the semantic hits alone, which hydration then need not read again.
_SEMANTIC_ROWS_SCAN = sql.SQL("""
    SELECT {columns}, 1 - ({vec} <=> {qvec}) AS similarity
    FROM memory_units u
    WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[]) AND {dims} AND {tags}
    ORDER BY {vec} <=> {qvec}
    LIMIT %(n)s""")
_SEMANTIC_ROWS = sql.SQL("SELECT * FROM ({scan}) s WHERE similarity >= %(semantic_min)s")


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
# When every fact type is asked, ``matching`` leaves the type test out (``{types}`` is TRUE):
# the column's CHECK constraint admits those types only, so the rows are the same, but the
# planner's estimate of ``fact_type = ANY(all three)`` is not 1. It sums the types' frequencies
# when they are disjoint, and when the sum comes out a hair above 1 (float rounding of the
# statistics: 0.70023334 + 0.24773334 + 0.052033335 on the bench bank after VACUUM ANALYZE) it
# falls back to the independent-events formula, 78.6% there; a 21% cut then looks worth a
# BitmapAnd of the filter's GIN bitmap with a bitmap of every one of the bank's entries in
# (bank_id, fact_type, occurred_start). Measured at 100k (bench bank, team=er, 12,300 matches,
# custom plans as recall runs them, server CPU of the read + top 300, 10 bench queries x 3
# interleaved, load ~6.5): 60.2 ms p50 with the test, 42.1 with the test unindexable, 38.9
# without it (docs/benchmarks/filt_bitmapand.md). A subset of the types keeps the test.
_FILTERED_MATCHING = sql.SQL("""
WITH matching AS MATERIALIZED (
    SELECT u.id, {vec} <=> {qvec} AS distance
    FROM memory_units u
    WHERE u.bank_id = %(bank)s AND {types} AND {dims} AND {tags}
    LIMIT {cap} + 1
),
few AS MATERIALIZED (
    SELECT count(*) <= {cap} AS yes FROM matching
)
""")
_FILTERED_SEMANTIC = sql.SQL("""{matching}SELECT id, score FROM ((
    SELECT m.id::text AS id, 1 - m.distance AS score
    FROM matching m
    WHERE (SELECT yes FROM few)
    ORDER BY m.distance, m.id
    LIMIT %(n)s)
  UNION ALL ({scan})) s
WHERE score >= %(semantic_min)s""")
# The same, reading each hit's ranking fields (as _SEMANTIC_ROWS): the exact branch joins its
# top n to their memories (n primary-key lookups, as hydration would make), so a filtered
# recall need not hydrate its semantic hits either.
_FILTERED_SEMANTIC_ROWS = sql.SQL("""{matching}SELECT * FROM ((
    SELECT {columns}, 1 - m.distance AS similarity
    FROM (SELECT m.id, m.distance FROM matching m
          WHERE (SELECT yes FROM few)
          ORDER BY m.distance, m.id
          LIMIT %(n)s) m
    JOIN memory_units u ON u.bank_id = %(bank)s AND u.id = m.id)
  UNION ALL ({scan})) s
WHERE similarity >= %(semantic_min)s""")


# Before the arms start, a filtered recall asks the planner how many memories the filter lets
# through (EXPLAIN without ANALYZE: planning only, no row read, ~0.3 ms and one round trip on
# a pooled connection of its own). Above EXACT_SKIP_ESTIMATE the arm runs the HNSW scan at once:
# the capped exact read would reach its cap and give up anyway, after reading EXACT_MAX_ROWS
# + 1 rows. Issue 13's case: tags=['travel'] in the default `any` mode lets the 39,699
# untagged or travel-tagged memories of the 100k bench bank through; the capped read made
# that recall 2.40x the unfiltered one (its semantic statement 101 ms against 27 ms for the
# HNSW scan alone, load ~13). The planner's estimates on the bench bank, against the true
# counts: 36,618 / 39,699 (tags any), 9,782 / 9,757 (tags any_strict), 12,109 / 12,300
# (team=er), 11,560 / 12,448 (source and year), 10 / 517 (user-017). The margin of 1.5x the
# cap keeps an estimate a third too high from skipping a filter the exact path would rank; a
# low estimate is harmless (the capped statement still counts). Not tuned on recall quality:
# a filter taking the skip is one the capped statement would have sent to the same scan
# unless the planner is off by more than that margin. Every filtered recall pays the estimate,
# a narrow filter for nothing: the `filter_estimate` stage took 0.8 ms p50 with team=er (one
# torch thread, load ~3.7) and 2.7-5.6 ms in A/B runs at load 3.5-6.5 (docs/benchmarks/latency.md).
EXACT_SKIP_ESTIMATE = 22_500
# ``embedding IS NOT NULL`` stands for the index's dimension predicate: the planner has no
# statistics for ``vector_dims(embedding) = d`` and guessed 0.5% of the rows (183 instead of
# 39,699), while a database holds one dimension and the null fraction is in its statistics.
_MATCHING_ESTIMATE = sql.SQL("""
EXPLAIN (FORMAT JSON)
SELECT 1 FROM memory_units u
WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[]) AND u.embedding IS NOT NULL
  AND {tags}""")


def matching_estimate_statement(tags: sql.Composable) -> sql.Composed:
    """The planner's plan (``EXPLAIN (FORMAT JSON)``, not run) of reading the memories that
    ``tags`` (the arms' filter) lets through; its top node's ``Plan Rows`` is the estimate."""
    return _MATCHING_ESTIMATE.format(tags=tags)


def _plan_rows(**columns: Any) -> float:
    """The row estimate of one ``EXPLAIN (FORMAT JSON)`` row (its one column, ``QUERY PLAN``,
    is not a Python name, so no dataclass can take it by keyword)."""
    (plan,) = columns.values()
    return float(plan[0]["Plan"]["Plan Rows"])


# A filter an application declares (declare_filter_index: a low-cardinality key's value, a
# tag) gets an HNSW index of its own, partial on the bank and the filter, as pgvector
# recommends for filtering on few values: its graph holds only the matching memories, so the
# walk reads ~300 matching rows and their graph pages instead of every match's heap page.
# Measured at 100k (bench bank, team=er, 12,300 matches, the 50 bench queries x 2 interleaved,
# load ~4.4, docs/benchmarks/filtered.md): top 300 in 3.8 ms p50 against 32.7 ms for the exact
# ranking; of the exact top 300 the walk returns 97.4% (min 90.7%), of the exact top 10 99.2%
# (min 90%), as the unfiltered arm's walk approximates its own. Whether a recall's filter has
# such an index is the planner's call: ``_prepare`` plans (not runs) the HNSW scan under the
# filter after the estimate and reads which index it would walk; an index named with
# FILTER_INDEX_PREFIX sends the arm (and the temporal arm's filtered entry) to that walk
# instead of the exact ranking (asked of broad filters only: FILTER_INDEX_MIN_ESTIMATE). A
# filter the planner cannot prove the index's predicate from (another value, a range) keeps
# the exact path, so a declared index never changes which memories a filter admits.
FILTER_INDEX_PREFIX = "memory_units_filter_"
# The plan is asked for (a second round trip: 0.28 ms p50 as a statement, but the estimate stage
# went 5.3 -> 9.0 ms p50 in an A/B at load 5-6) only when the bank has a declared index (an
# index name starting with the bank's own prefix, ``_DECLARED``, read in the estimate's round
# trip, so a bank with none pays no second one) and the planner expects
# FILTER_INDEX_MIN_ESTIMATE to EXACT_SKIP_ESTIMATE matches: below, the exact ranking costs a few
# ms at most (~2.6 us a match at 100k: team=er's 12,300 in ~32 ms), about what asking would;
# above, the arm runs the HNSW scan anyway and the planner walks a declared index by itself.
# Not tuned on recall quality (a declared index is the application's choice).
FILTER_INDEX_MIN_ESTIMATE = 2_000
_FILTER_INDEX = sql.SQL("""
CREATE INDEX IF NOT EXISTS {name} ON memory_units
    USING hnsw (({cast}) {ops}) WITH (m = 16, ef_construction = 64)
    WHERE {dims} AND bank_id = {bank} AND {tags} AND {filter}""")
# Whether the bank has any declared index: its names start with the bank's prefix. Every
# filtered recall asks, in its estimate's round trip (run in turn with the estimate on the
# server, before any arm starts). ``starts_with`` alone is no index condition: pg_class was read
# whole, every relation of the database (484 rows on the bench server: 0.186 ms p50; more with
# every table, index and partition an application adds). The prefix's range, [prefix, past)
# in bytewise order (``name`` compares under collation "C", as pg_class's (relname,
# relnamespace) index sorts), is one: an index scan of the names in it, starts_with the exact
# test. Measured on the bench server (400 calls interleaved, load 3.3): 0.186 -> 0.124 ms p50
# with declared indexes, 0.147 -> 0.081 without.
_DECLARED = sql.SQL("""
SELECT EXISTS (SELECT 1 FROM pg_class
               WHERE relname >= %(prefix)s::name AND relname < %(past)s::name
                 AND relkind = 'i' AND starts_with(relname, %(prefix)s)) AS yes""")
_FILTER_INDEX_PLAN = sql.SQL("""
EXPLAIN (FORMAT JSON)
SELECT u.id FROM memory_units u
WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[]) AND {dims} AND {tags}
ORDER BY {vec} <=> {qvec}
LIMIT %(n)s""")


def filter_index_prefix(bank: str) -> str:
    """The start of the name of every index declared for ``bank``: FILTER_INDEX_PREFIX and a
    digest of the bank (names are limited to 63 bytes; a bank name is not).

    >>> filter_index_prefix("b") == filter_index_prefix("b") != filter_index_prefix("c")
    True
    >>> len(filter_index_prefix("b" * 500))
    29
    """
    return f"{FILTER_INDEX_PREFIX}{hashlib.sha256(bank.encode()).hexdigest()[:8]}_"


def declared_params(bank: str) -> dict[str, str]:
    """The parameters of the question whether ``bank`` holds a declared index (``_DECLARED``):
    its names' prefix (:func:`filter_index_prefix`) and ``past``, the first string after every
    name starting with it (the prefix's last character the next one; bytewise, as ``name``
    compares).

    >>> p = declared_params("b")
    >>> p["prefix"] < p["prefix"] + "ffff" < p["past"] and not p["past"].startswith(p["prefix"])
    True
    """
    prefix = filter_index_prefix(bank)
    return {"prefix": prefix, "past": prefix[:-1] + chr(ord(prefix[-1]) + 1)}


def _inlined(clause: sql.Composable, params: Mapping[str, Any]) -> sql.SQL:
    """``clause`` with each ``%(name)s`` placeholder replaced by its value as a SQL literal
    (``sql.Literal``: quoted by psycopg): an index predicate takes no parameters. The text
    comes from compiled clauses and psycopg's own quoting, never from raw values."""
    literals = {name: sql.Literal(value).as_string() for name, value in params.items()}
    return sql.SQL(clause.as_string() % literals)


def filter_index_statement(
    bank: str,
    dimensions: int,
    *,
    filter: FilterExpr | Mapping[str, Any] | None = None,
    tags: Sequence[str] | None = None,
    tags_match: TagsMatch = "any",
) -> tuple[str, sql.Composed]:
    """The name and ``CREATE INDEX IF NOT EXISTS`` statement of the HNSW index that serves
    recalls of ``bank`` with this filter (``filter`` / ``tags`` / ``tags_match`` as recall
    takes them) and query vectors of ``dimensions``: partial on the bank and the filter, its
    predicate the arms' own clauses with the values inlined. The name is a digest of the
    predicate, so declaring the same filter twice makes one index.

    >>> name, ddl = filter_index_statement("b", 384, tags=["x"], tags_match="any_strict")
    >>> name.startswith(FILTER_INDEX_PREFIX)
    True
    >>> print(ddl.as_string().split("WHERE ")[1])
    vector_dims(embedding) = 384 AND bank_id = 'b' AND "tags" && '{x}'::text[] AND TRUE
    """
    dimension = Dimension(dimensions)
    if not dimension.indexed:
        raise ConfigurationError(
            f"declare_filter_index: no HNSW index exists for {dimensions}-dimensional vectors"
            " (pgvector's HNSW index takes at most 4,000)"
        )
    compiled = compile_filter(filter, column=sql.Identifier("metadata"))
    tag_test = tag_clause(tags, tags_match, column=sql.Identifier("tags"))
    predicate = {
        "dims": sql.SQL("vector_dims(embedding) = {}").format(sql.Literal(dimension.size)),
        "bank": sql.Literal(bank),
        "tags": _inlined(tag_test, {"tags": list(tags or ())}),
        "filter": _inlined(compiled.clause, compiled.params),
    }
    digest = hashlib.sha256(sql.SQL(" ").join(list(predicate.values())).as_string().encode()).hexdigest()
    name = filter_index_prefix(bank) + digest[:16]
    statement = _FILTER_INDEX.format(
        name=sql.Identifier(name),
        cast=sql.SQL("embedding::{}({})").format(sql.SQL(dimension.kind), sql.Literal(dimension.size)),
        ops=sql.SQL(f"{dimension.kind}_cosine_ops"),
        **predicate,
    )
    return name, statement


def declare_filter_index(
    bank: str,
    dimensions: int,
    *,
    filter: FilterExpr | Mapping[str, Any] | None = None,
    tags: Sequence[str] | None = None,
    tags_match: TagsMatch = "any",
) -> Plan[str]:
    """Create (if missing) the HNSW index serving this filter's recalls on ``bank``
    (:func:`filter_index_statement`) and return its name; run it with ``engine.run(...)``.
    The build reads the matching memories once and blocks writes to ``memory_units`` while it
    runs (seconds for ~10k matches); recalls under the filter then walk it (approximate, as
    an unfiltered recall's walk) instead of ranking every match exactly. ``DROP INDEX`` by
    the returned name undoes it."""
    name, statement = filter_index_statement(
        bank, dimensions, filter=filter, tags=tags, tags_match=tags_match
    )
    yield Query(statement, None, fetch="none")
    return name


def _yes(*, yes: bool) -> bool:
    return yes


def _walked_index(**columns: Any) -> str | None:
    """The name of the HNSW index an ``EXPLAIN (FORMAT JSON)`` row's plan walks, if it is one
    an application declared (FILTER_INDEX_PREFIX); None otherwise.

    >>> scan = {"Node Type": "Index Scan", "Index Name": FILTER_INDEX_PREFIX + "ab"}
    >>> _walked_index(plan=[{"Plan": {"Node Type": "Limit", "Plans": [scan]}}])
    'memory_units_filter_ab'
    >>> shared = {"Node Type": "Index Scan", "Index Name": "memory_units_embedding_d384"}
    >>> _walked_index(plan=[{"Plan": shared}]) is None
    True
    """
    (plan,) = columns.values()
    nodes = [plan[0]["Plan"]]
    while nodes:
        node = nodes.pop()
        name = node.get("Index Name")
        if isinstance(name, str) and name.startswith(FILTER_INDEX_PREFIX):
            return name
        nodes.extend(node.get("Plans", ()))
    return None


def _scan(tags: sql.Composable, dimension: Dimension) -> sql.Composed:
    return _SEMANTIC_SCAN.format(
        tags=tags, vec=dimension.column, qvec=dimension.query(), dims=dimension.predicate
    )


def semantic_statement(tags: sql.Composable, dimension: Dimension) -> sql.Composed:
    """The semantic arm: one HNSW scan of the memories of the asked fact types."""
    return _SEMANTIC.format(scan=_scan(tags, dimension))


def _rows_scan(tags: sql.Composable, dimension: Dimension) -> sql.Composed:
    return _SEMANTIC_ROWS_SCAN.format(
        columns=sql.SQL(MEMORY_COLUMNS),
        tags=tags,
        vec=dimension.column,
        qvec=dimension.query(),
        dims=dimension.predicate,
    )


def semantic_rows_statement(tags: sql.Composable, dimension: Dimension) -> sql.Composed:
    """:func:`semantic_statement` reading each hit's :class:`MemoryRow` (the score is its
    ``similarity``): the same rows in the same order."""
    return _SEMANTIC_ROWS.format(scan=_rows_scan(tags, dimension))


def matching_head(
    tags: sql.Composable, dimension: Dimension, exact_max: int, *, types: sql.Composable = TYPES_TEST
) -> sql.Composed:
    """The filtered statements' common head: CTEs ``matching`` (the memories of the asked
    types that ``tags`` lets through, at most ``exact_max`` + 1, each one's ``id`` and cosine
    ``distance``) and ``few`` (``yes``: at most ``exact_max`` of them). ``types`` is the
    fact-type test, :func:`~shared_core.recall.arms.type_clause`: ``TRUE`` when every fact
    type is asked, the same rows and a plan that does not read the bank's type index
    (``_FILTERED_MATCHING``). The temporal arm's statements under a filter share it
    (arms/temporal.py)."""
    return _FILTERED_MATCHING.format(
        types=types,
        cap=sql.Literal(int(exact_max)),
        dims=dimension.predicate,
        tags=tags,
        vec=dimension.column,
        qvec=dimension.query(),
    )


def filtered_semantic_rows_statement(
    tags: sql.Composable,
    dimension: Dimension,
    *,
    exact_max: int = EXACT_MAX_ROWS,
    types: sql.Composable = TYPES_TEST,
) -> sql.Composed:
    """:func:`filtered_semantic_statement` reading each hit's :class:`MemoryRow` (the score is
    its ``similarity``): the same rows (the exact branch's top n joined to their memories)."""
    gate = sql.SQL("NOT (SELECT yes FROM few) AND {}").format(tags)
    return _FILTERED_SEMANTIC_ROWS.format(
        matching=matching_head(tags, dimension, exact_max, types=types),
        columns=sql.SQL(MEMORY_COLUMNS),
        scan=_rows_scan(gate, dimension),
    )


def filtered_semantic_statement(
    tags: sql.Composable,
    dimension: Dimension,
    *,
    exact_max: int = EXACT_MAX_ROWS,
    types: sql.Composable = TYPES_TEST,
) -> sql.Composed:
    """The semantic arm under a filter: an exact ranking of the matching memories when at most
    ``exact_max`` match, else the HNSW scan of :func:`semantic_statement`. ``types``: the exact
    read's fact-type test (:func:`matching_head`)."""
    gate = sql.SQL("NOT (SELECT yes FROM few) AND {}").format(tags)
    return _FILTERED_SEMANTIC.format(
        matching=matching_head(tags, dimension, exact_max, types=types),
        scan=_scan(gate, dimension),
    )


def _filtered(q: ArmQuery) -> bool:
    """Whether anything but the bank restricts the memories searched (a subset of the fact
    types is a filter too: the HNSW index holds every type)."""
    return q.filtered or set(q.types) != set(FACT_TYPES)


def skips_exact(q: ArmQuery) -> bool:
    """Whether the exact ranking is not tried (by this arm, and by the temporal arm's
    statements under a filter): the planner would walk an index declared for the filter, or
    expects so many matches that the capped read would give up."""
    if q.filter_index is not None:
        return True
    return q.matching_estimate is not None and q.matching_estimate > EXACT_SKIP_ESTIMATE


# A broad filter below EXACT_SKIP_ESTIMATE: the exact ranking reads every match's heap page
# (team=er: 12,300 matches on ~12,000 pages), the walk of the bank's HNSW index (iterative
# scan, relaxed order) ~hits / selectivity tuples and their graph pages, so its cost grows
# with the hits it fetches. Measured at 100k (bench bank, team=er, the 50 bench queries,
# benchmarks/semantic_ab.py, load 3.4-5; exact -> walk p50, the walk's share of the exact top
# 100): n=300 31.4 -> 40.7 ms (100%); n=150 26.1 -> 22.9 (99.6%); n=100 29.5 -> 18.8 (99.2%).
# So the walk fetches fewer hits than the exact path's n (RecallSettings.filter_walk_hits,
# a third of n at least): whole recalls took 0.65-0.82 of the exact path's time (paired, load
# 3-5), but fusion loses the semantic list's tail (ranks 101-300), and on LoCoMo banks under a
# filter admitting every turn, the walk forced, R@10 fell 82.9 -> 82.1 on conversations 5-9
# (multi-hop 50.5 -> 49.5, temporal 82.4 -> 81.2; 0-4 81.8 -> 81.9). Hence opt-in only
# (RecallSettings.filter_walk_min_estimate, None by default): docs/benchmarks/filt_walk.md.


def walks_filter(q: ArmQuery) -> bool:
    """Whether the semantic arm walks the bank's HNSW index with fewer hits (:func:`walk_hits`)
    instead of ranking the filter's matches exactly: the planner expects at least
    ``filter_walk_min_estimate`` matches and at most EXACT_SKIP_ESTIMATE (above, the arm runs
    the full walk anyway), and no declared index serves the filter."""
    floor = q.settings.filter_walk_min_estimate
    return (
        floor is not None
        and q.filter_index is None
        and q.matching_estimate is not None
        and floor <= q.matching_estimate <= EXACT_SKIP_ESTIMATE
    )


def walk_hits(n: int, hits: int) -> int:
    """The hits a broad filter's walk fetches: ``max(hits, n // 3)``, at most ``n``.

    >>> walk_hits(300, 100), walk_hits(1000, 100), walk_hits(50, 100)
    (100, 333, 50)
    """
    return min(n, max(hits, n // 3))


def _prepare(q: ArmQuery, watch: Stopwatch) -> Plan[ArmQuery]:
    """``q`` with the planner's estimate of the memories its filter matches (unfiltered: ``q``),
    and its filter in the arms' form (``with_range_values``): ranges tested as "equals one
    of the values passing them" (``range_value_queries``, one lookup per range, sent beside the
    estimate, at once), which the GIN index serves, and tests it cannot serve kept out of
    its scans. Every arm started after this reads that filter (the keyword statement, launched
    before, the original: the same memories either way). The estimate reads the original
    filter, as before (the planner estimates ``@?`` tests from its statistics' sample)."""
    if not _filtered(q):
        return q
    lookups = range_value_queries(q.bank, q.filter)
    # The estimate reads every test as ``@?`` (the planner's sample-based estimate; a
    # function call would get a fixed guess), whatever form the arms run.
    planner = dataclasses.replace(q, filter=compile_filter(q.filter.tree)) if q.filter.gin_only else q
    estimate_query = Query(
        matching_estimate_statement(planner.where_sql), planner.params(), fetch="one", row_type=_plan_rows
    )
    declared_query = Query(_DECLARED, declared_params(q.bank), fetch="one", row_type=_yes)
    index: str | None = None
    with watch.stage("filter_estimate"):
        estimate, declared, *found = yield Pipeline(
            (estimate_query, declared_query, *(query for _, query in lookups))
        )
        if declared and FILTER_INDEX_MIN_ESTIMATE <= estimate <= EXACT_SKIP_ESTIMATE:
            plan = _FILTER_INDEX_PLAN.format(
                dims=q.dimension.predicate, tags=q.where_sql, vec=q.dimension.column, qvec=q.dimension.query()
            )
            index = yield Query(plan, q.params(), fetch="one", row_type=_walked_index)
    indexed = with_range_values(q.filter, {c: rows for (c, _), rows in zip(lookups, found, strict=True)})
    return dataclasses.replace(q, filter=indexed, matching_estimate=estimate, filter_index=index)


def _start(q: ArmQuery) -> Query:
    params = q.params(semantic_min=q.settings.semantic_min_similarity)
    if walks_filter(q):
        return Query(
            semantic_rows_statement(q.where_sql, q.dimension),
            {**params, "n": walk_hits(q.n, q.settings.filter_walk_hits)},
            row_type=MemoryRow,
            binary=True,
        )
    if _filtered(q) and not skips_exact(q):
        statement = filtered_semantic_rows_statement(q.where_sql, q.dimension, types=type_clause(q))
        return Query(statement, params, row_type=MemoryRow, binary=True)
    if not q.filtered:
        return Query(_unfiltered_rows_statement(q.dimension), params, row_type=MemoryRow, binary=True)
    return Query(semantic_rows_statement(q.where_sql, q.dimension), params, row_type=MemoryRow, binary=True)


@functools.cache
def _unfiltered_rows_statement(dimension: Dimension) -> sql.SQL:
    """:func:`semantic_rows_statement` without a tag or metadata filter (its ``where_sql`` is
    then always ``(TRUE AND TRUE)``), composed once (shared_core.storage.statements)."""
    return flat(semantic_rows_statement(ArmQuery.unfiltered_where(), dimension))


class _Scored(Protocol):
    @property
    def score(self) -> float: ...


S = TypeVar("S", bound=_Scored)


def relative_cut(rows: Sequence[S], fraction: float | None) -> Sequence[S]:
    """Keep rows scoring at least ``fraction`` of the best score (all when ``fraction`` is
    None or the best is not positive): the cut for models whose cosine scale was not tuned.

    >>> from shared_core.recall.arms import ScoredRow
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


def _finish(q: ArmQuery, rows: Sequence[MemoryRow] | BaseException, watch: Stopwatch) -> Plan[ArmResult]:
    notes: tuple[str, ...] = ()
    if q.filter_index is not None:
        notes = (f"semantic: the filter's declared index {q.filter_index}: HNSW scan",)
    elif walks_filter(q):
        hits = walk_hits(q.n, q.settings.filter_walk_hits)
        notes = (
            f"semantic: about {q.matching_estimate:,.0f} memories match the filter (planner):"
            f" HNSW scan of the top {hits}",
        )
    elif skips_exact(q):
        notes = (
            f"semantic: about {q.matching_estimate:,.0f} memories match the filter (planner): HNSW scan",
        )
    found = {r.id: r for r in rows_or_raise(rows)}
    # The hits straight from the rows (~300 a recall at 100k), not through a ScoredRow each
    # (a frozen dataclass called by keyword): the same hits as ranked() of those rows.
    scored = [
        arm_hit(r.id, float(r.similarity) if r.similarity is not None else 0.0, None) for r in found.values()
    ]
    kept = best_first(relative_cut(scored, q.settings.relative_semantic_cut))
    # The kept hits' rows go to hydration, which then reads only the other arms' candidates.
    return ArmResult(hits=kept, notes=notes, rows={h.id: found[h.id] for h in kept})
    yield  # a plan with no further I/O


SEMANTIC = Arm(start=_start, finish=_finish, prepare=_prepare)
