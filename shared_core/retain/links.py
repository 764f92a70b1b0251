"""Retain-time graph writes: entities, entity mentions and memory links, in the retain's
transaction (after the units are inserted, so links can point at them).

* entities: each name resolves to an entity of the same bank by exact match key, then by
  ``pg_trgm`` similarity of keys above a threshold; new names become entities. Then every
  unit whose entities were extracted (not given explicitly) is also linked to each entity the
  bank already knows (or this batch just created) whose key it mentions in any case, whole
  words ("google announced..." after "Priya joined Google"): one query per batch;
* semantic links: each new unit to its nearest units of the bank with cosine >= 0.7 (one ANN
  query per batch, a LATERAL join driven by the batch's rows), plus pairs inside the batch
  computed in numpy;
* temporal links: each dated new unit to its nearest units by event date, before and after,
  weight ``max(0.3, 1 - |Δhours| / 24)``;
* causal links: from explicit references on items (``caused_by``, ``causes``, ``enables``,
  ``prevents``), weight 1.
"""

from __future__ import annotations

import datetime as _dt
import re
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, LiteralString

import numpy as np
import numpy.typing as npt
from psycopg import sql

from shared_core.errors import InvalidItemError
from shared_core.extraction.entities import entity_match_key, mention_keys
from shared_core.ids import uuid7
from shared_core.retain.prepare import PreparedUnit
from shared_core.storage.dimensions import Dimension
from shared_core.storage.plan import Copy, Plan, Query
from shared_core.types import MemoryItem

__all__ = [
    "ANALYZE_STALE",
    "SEMANTIC_NEIGHBOUR_SETTINGS",
    "STALE_STATISTICS",
    "EntityMentions",
    "analyse_stale",
    "batch_semantic_pairs",
    "causal_links",
    "count_mentions_query",
    "cue_causal_links",
    "entity_mentions",
    "entity_plan",
    "fk_checked",
    "fk_plan_restore",
    "fk_plan_settings",
    "fresh_statistics",
    "known_mentions",
    "link_plan",
    "link_weights",
    "mention_grams",
    "mentions_copy",
    "missing_reference_error",
    "resolve_entities_query",
    "semantic_neighbours_query",
    "stale_statistics_query",
    "upsert_entities_query",
]

_CAUSAL_FIELDS = ("caused_by", "causes", "enables", "prevents")
# Conservative: explicit causal connectives only ("since", "so" alone are too ambiguous).
_CUE = re.compile(r"\b(because|so that|as a result|due to)\b", re.IGNORECASE)
DEFAULT_CUE_LOOKBACK = 10
DEFAULT_CUE_MIN_SIMILARITY = 0.35
DEFAULT_CUE_LINK_WEIGHT = 0.5

# Exact key first, then the most similar existing key above the threshold (the % operator
# uses the trigram index; the threshold is set for this transaction).
RESOLVE_ENTITIES = """
SELECT k.key, coalesce(exact.id, fuzzy.id)::text AS id
FROM unnest(%(keys)s::text[]) AS k(key)
LEFT JOIN entities exact ON exact.bank_id = %(bank)s AND exact.match_key = k.key
LEFT JOIN LATERAL (
    SELECT e.id FROM entities e
    WHERE exact.id IS NULL AND e.bank_id = %(bank)s AND e.match_key %% k.key
    ORDER BY similarity(e.match_key, k.key) DESC, e.mention_count DESC
    LIMIT 1) fuzzy ON TRUE"""

# A concurrent retain may create the same key first: DO UPDATE makes RETURNING give its id.
UPSERT_ENTITIES = """
INSERT INTO entities (bank_id, id, canonical_name, match_key, mention_count, first_seen,
                      last_seen)
SELECT %(bank)s, n.id, n.name, n.key, 0, n.seen, n.seen
FROM unnest(%(ids)s::uuid[], %(names)s::text[], %(keys)s::text[], %(seen)s::timestamptz[])
     AS n(id, name, key, seen)
ON CONFLICT (bank_id, match_key) DO UPDATE SET match_key = excluded.match_key
RETURNING id::text, match_key"""

COUNT_MENTIONS = """
UPDATE entities e
SET mention_count = e.mention_count + d.n,
    first_seen = least(e.first_seen, d.first_seen),
    last_seen = greatest(e.last_seen, d.last_seen)
FROM unnest(%(ids)s::uuid[], %(counts)s::int[], %(firsts)s::timestamptz[],
            %(lasts)s::timestamptz[]) AS d(id, n, first_seen, last_seen)
WHERE e.bank_id = %(bank)s AND e.id = d.id"""

# Known entities named by a lower-case (or any-case) word run of the batch: the unique
# (bank_id, match_key) index answers each key.
KNOWN_ENTITY_KEYS = """
SELECT e.match_key, e.id::text AS id
FROM unnest(%(keys)s::text[]) AS k(key)
JOIN entities e ON e.bank_id = %(bank)s AND e.match_key = k.key"""

COPY_UNIT_ENTITIES = "COPY unit_entities (bank_id, unit_id, entity_id) FROM STDIN"

# The dimension is inlined (migration 0006): the expression and predicate name that
# dimension's HNSW index.
_SEMANTIC_NEIGHBOURS = sql.SQL("""
SELECT s.id::text AS from_id, n.id::text AS to_id, 1 - n.distance AS similarity
FROM memory_units s
CROSS JOIN LATERAL (
    SELECT u.id, {vec} <=> {svec} AS distance
    FROM memory_units u
    WHERE u.bank_id = %(bank)s AND u.id <> ALL(%(ids)s::uuid[]) AND {dims}
    ORDER BY {vec} <=> {svec}
    LIMIT %(k)s) n
WHERE s.bank_id = %(bank)s AND s.id = ANY(%(ids)s::uuid[]) AND 1 - n.distance >= %(min)s""")


#: Transaction-local planner settings of :func:`semantic_neighbours_query`. They outlive it:
#: ``retain_bulk`` puts the planner ones back between batches (``bulk.RESET_PLANNER``); in a
#: retain only the temporal neighbours and the links' insert follow, which sort nothing.
SEMANTIC_NEIGHBOUR_SETTINGS: Final[Mapping[str, str]] = MappingProxyType(
    {"hnsw.ef_search": "40", "enable_seqscan": "off", "enable_sort": "off"}
)


def semantic_neighbours_statement(dimension: Dimension) -> sql.Composed:
    """Stored neighbours of the new units (``%(ids)s``) by cosine, through the dimension's
    HNSW index."""
    return _SEMANTIC_NEIGHBOURS.format(
        vec=dimension.column, svec=dimension.of("s").column, dims=dimension.predicate
    )


def semantic_neighbours_query(
    bank: str, ids: Sequence[uuid.UUID], dimension: Dimension, *, k: int, min_similarity: float
) -> Query:
    """The stored semantic neighbours of the new units ``ids``, through the HNSW index.

    The HNSW scan is the only plan that returns rows in distance order without a sort, so
    sorting is off (and sequential scans, which the planner once costed below it: 33x slower at
    10k units, measured). Statistics that do not know the bank's rows (every batch of a
    ``retain_bulk`` after the first, whose rows are not committed, and a new bank before
    autovacuum's ANALYZE) otherwise made the planner read every row of the bank through a
    btree or a bitmap scan and sort them, once per new unit: exact, and 25-60x slower (6.5 s
    against 0.25 s for a batch of 1,000 new units into 10k, ``EXPLAIN ANALYZE``; 33 s of the
    10k bulk load's 85 s). Which links were stored then depended on when the table was last
    analysed; the index scan is the plan fresh statistics give (99.5% of the exact pairs at
    10k, measured)."""
    return Query(
        semantic_neighbours_statement(dimension),
        {"bank": bank, "ids": list(ids), "k": k, "min": min_similarity},
        settings=SEMANTIC_NEIGHBOUR_SETTINGS,
        row_type=_SemanticNeighbour,
    )


HAS_OLDER_UNITS = """
SELECT 1 AS found FROM memory_units
WHERE bank_id = %(bank)s AND id <> ALL(%(ids)s::uuid[]) LIMIT 1"""

TEMPORAL_NEIGHBOURS = """
SELECT s.id::text AS from_id, n.id::text AS to_id,
       abs(extract(epoch FROM n.event_date - s.event_date)) / 3600.0 AS hours
FROM memory_units s
CROSS JOIN LATERAL (
    (SELECT u.id, u.event_date FROM memory_units u
     WHERE u.bank_id = %(bank)s AND u.event_date <= s.event_date AND u.id <> s.id
     ORDER BY u.event_date DESC LIMIT %(k)s)
    UNION ALL
    (SELECT u.id, u.event_date FROM memory_units u
     WHERE u.bank_id = %(bank)s AND u.event_date > s.event_date AND u.id <> s.id
     ORDER BY u.event_date ASC LIMIT %(k)s)) n
WHERE s.bank_id = %(bank)s AND s.id = ANY(%(ids)s::uuid[]) AND s.event_date IS NOT NULL"""

CHECK_REFERENCED = """
SELECT r::text AS id FROM unnest(%(ids)s::uuid[]) AS r
WHERE NOT EXISTS (SELECT 1 FROM memory_units u WHERE u.bank_id = %(bank)s AND u.id = r)"""

COPY_LINKS = "COPY memory_links (bank_id, from_id, to_id, link_type, weight) FROM STDIN"

# Foreign-key checks are statements the server prepares once per connection and runs for every
# row written (a link checks both its units, a mention its unit and entity). Pooled connections
# set plan_cache_mode = force_custom_plan for recall's statements (storage/pools.py), and that
# makes the server plan those checks again for every row: copying the 31,763 links of 1,000
# LoCoMo turns took 4.6-4.8 s so against 1.1-1.4 s under 'auto' (benchmarks/fk_plan_mode.py:
# same rows, same transaction shape, three rounds alternating, load 11-12; inside whole
# retains the links' COPY halved, retain_stages.py --fk-plans). So the writes checked row by
# row run under 'auto', saved and put back around them (transaction-local settings), and the
# retain's other statements keep the connection's mode. The saved value lives in a custom setting, so the
# three statements need no result from one another and also fit in a pipeline.
SAVE_PLAN_CACHE_MODE = """
SELECT set_config('hindsight.saved_plan_cache_mode', current_setting('plan_cache_mode'), true)"""
GENERIC_PLAN_CACHE_MODE = "SELECT set_config('plan_cache_mode', 'auto', true)"
RESTORE_PLAN_CACHE_MODE = """
SELECT set_config('plan_cache_mode', current_setting('hindsight.saved_plan_cache_mode'), true)"""


def fk_plan_settings() -> tuple[Query, Query]:
    """The statements before a write whose rows are checked by foreign keys: save the plan
    cache mode, then let the checks' plans be reused (:data:`GENERIC_PLAN_CACHE_MODE`)."""
    return (
        Query(SAVE_PLAN_CACHE_MODE, fetch="none"),
        Query(GENERIC_PLAN_CACHE_MODE, fetch="none"),
    )


def fk_plan_restore() -> Query:
    """The statement after such a write: the plan cache mode saved before it."""
    return Query(RESTORE_PLAN_CACHE_MODE, fetch="none")


def fk_checked(op: Query | Copy) -> Plan[Any]:
    """Run ``op`` (a write checked row by row by foreign keys) with reusable check plans and
    return its result; the plan cache mode is back to the connection's afterwards."""
    # Not ``yield from``: the runner sends each statement's result back, which a tuple's
    # iterator cannot take.
    for setting in fk_plan_settings():  # noqa: UP028
        yield setting
    result = yield op
    yield fk_plan_restore()
    return result


# The check plans above are reused for the whole connection, so they must not come from
# statistics that miss the retain's own rows. After every bank is deleted and the tables are
# analysed (autovacuum does it by itself), pg_class keeps the pages and counts no rows in them:
# the planner then estimates every table empty, and the checks on memory_units took any index
# starting with bank_id and read the whole bank per row written (19.3 ms against 0.2 ms per
# check at 10k; entities: a sequential scan per mention). Autovacuum cannot repair it while a
# retain writes (its rows are uncommitted), so the retain asks, before its checked writes, which
# referenced table the planner would estimate (reltuples / relpages x the pages now, as
# plancat.c does) below the rows this retain itself wrote there, and analyses those in its
# transaction: ANALYZE counts the transaction's own rows, and its statistics invalidate the
# cached check plans. relpages 0 (never analysed, or emptied by VACUUM) is left alone: the
# planner then sizes the table by its pages and picks the primary key (measured).
STALE_STATISTICS = """
SELECT w.name
FROM unnest(%(tables)s::text[], %(written)s::bigint[]) AS w(name, n)
JOIN pg_class c ON c.oid = to_regclass(w.name)
WHERE c.relpages > 0 AND c.reltuples >= 0
  AND c.reltuples / c.relpages
      * (pg_relation_size(c.oid) / current_setting('block_size')::bigint) < w.n"""

#: The tables whose rows a retain's foreign-key checks look up, each with its ANALYZE.
#: SKIP_LOCKED: ANALYZE holds SHARE UPDATE EXCLUSIVE until commit, which conflicts with another
#: ANALYZE or VACUUM of the table (another retain's, autovacuum's); a retain that cannot have it
#: at once goes on with the statistics it has (the other one's ANALYZE is refreshing them)
#: instead of waiting for that transaction to end.
ANALYZE_STALE: Final[Mapping[str, LiteralString]] = MappingProxyType(
    {
        "memory_units": "ANALYZE (SKIP_LOCKED) memory_units",
        "entities": "ANALYZE (SKIP_LOCKED) entities",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Table:
    name: str


def stale_statistics_query(written: Mapping[str, int]) -> Query:
    """:data:`STALE_STATISTICS`: which of the tables in ``written`` (name -> rows this retain
    wrote or references there) the planner would estimate below those rows."""
    tables = sorted(written)
    return Query(
        STALE_STATISTICS,
        {"tables": tables, "written": [written[t] for t in tables]},
        row_type=_Table,
    )


def analyse_stale(stale: Sequence[_Table]) -> tuple[Query, ...]:
    """The ANALYZE of each table :func:`stale_statistics_query` returned, in a fixed order."""
    return tuple(Query(ANALYZE_STALE[name], fetch="none") for name in sorted({t.name for t in stale}))


def fresh_statistics(written: Mapping[str, int]) -> Plan[None]:
    """Before a retain's mention and link writes: analyse the tables whose statistics miss the
    rows this retain wrote (one catalog read when none do). Written for those writes' foreign-key
    checks, which migration 0024 dropped (see retain/plan.py)."""
    stale: list[_Table] = yield stale_statistics_query(written)
    # Not ``yield from``: the runner sends each statement's result back (see fk_checked).
    for analyse in analyse_stale(stale):  # noqa: UP028
        yield analyse


@dataclass(frozen=True, slots=True, kw_only=True)
class _SemanticNeighbour:
    """One row of :func:`semantic_neighbours_statement`."""

    from_id: str
    to_id: str
    similarity: float


@dataclass(frozen=True, slots=True, kw_only=True)
class _TemporalNeighbour:
    """One row of :data:`TEMPORAL_NEIGHBOURS`."""

    from_id: str
    to_id: str
    hours: float  # numeric in Postgres: a Decimal until read as float


@dataclass(frozen=True, slots=True, kw_only=True)
class _IdRow:
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _ResolvedKey:
    """One row of :data:`RESOLVE_ENTITIES`: a key and its entity, if the bank has one."""

    key: str
    id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class _EntityKey:
    """One row of :data:`UPSERT_ENTITIES` and :data:`KNOWN_ENTITY_KEYS`: an entity and its key."""

    id: str
    match_key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityMentions:
    """The entity names of a retain's units, by match key (:func:`entity_mentions`)."""

    names: dict[str, str]  # key -> the first name written for it
    mentions: list[tuple[str, str]]  # (unit id, key), in unit order
    first_seen: dict[str, _dt.datetime]  # key -> its earliest unit's mentioned_at

    @property
    def keys(self) -> list[str]:
        return sorted(self.names)


def entity_mentions(units: Sequence[PreparedUnit], names: Sequence[Sequence[str]]) -> EntityMentions:
    """Group each unit's entity names by match key (both retain paths resolve these)."""
    by_key: dict[str, str] = {}
    mentions: list[tuple[str, str]] = []
    seen_of: dict[str, _dt.datetime] = {}
    for unit, per_unit in zip(units, names, strict=True):
        for name in per_unit:
            key = entity_match_key(name)
            by_key.setdefault(key, name)
            mentions.append((unit.id, key))
            seen_of[key] = min(seen_of.get(key, unit.mentioned_at), unit.mentioned_at)
    return EntityMentions(names=by_key, mentions=mentions, first_seen=seen_of)


def resolve_entities_query(bank: str, keys: Sequence[str], threshold: float) -> Query:
    """:data:`RESOLVE_ENTITIES` for ``keys``: each key's entity of the bank, if any."""
    return Query(
        RESOLVE_ENTITIES,
        {"bank": bank, "keys": list(keys)},
        settings={"pg_trgm.similarity_threshold": str(threshold)},
        row_type=_ResolvedKey,
    )


def upsert_entities_query(bank: str, named: EntityMentions, new_keys: Sequence[str]) -> Query:
    """:data:`UPSERT_ENTITIES` creating an entity for each of ``new_keys``."""
    return Query(
        UPSERT_ENTITIES,
        {
            "bank": bank,
            "ids": [uuid7() for _ in new_keys],
            "names": [named.names[k] for k in new_keys],
            "keys": list(new_keys),
            "seen": [named.first_seen[k] for k in new_keys],
        },
        row_type=_EntityKey,
    )


def mention_grams(units: Sequence[PreparedUnit], linked: Sequence[bool]) -> list[frozenset[str]]:
    """The words of each flagged unit that may name an entity the bank knows."""
    return [mention_keys(u.text) if flag else frozenset() for u, flag in zip(units, linked, strict=True)]


def known_mentions(
    units: Sequence[PreparedUnit], grams: Sequence[frozenset[str]], known: Sequence[_EntityKey]
) -> set[tuple[str, str]]:
    """(unit id, entity id) for every known entity a unit's words name."""
    id_of = {r.match_key: r.id for r in known}
    return {
        (u.id, id_of[g])
        for u, unit_grams in zip(units, grams, strict=True)
        for g in unit_grams & id_of.keys()
    }


def count_mentions_query(bank: str, units: Sequence[PreparedUnit], pairs: Sequence[tuple[str, str]]) -> Query:
    """:data:`COUNT_MENTIONS` for the (unit id, entity id) ``pairs``: counts, first and last seen."""
    counts = Counter(entity for _, entity in pairs)
    mentioned = {u.id: u.mentioned_at for u in units}
    firsts: dict[str, _dt.datetime] = {}
    lasts: dict[str, _dt.datetime] = {}
    for unit_id, entity in pairs:
        at = mentioned[unit_id]
        firsts[entity] = min(firsts.get(entity, at), at)
        lasts[entity] = max(lasts.get(entity, at), at)
    entities = sorted(counts)
    return Query(
        COUNT_MENTIONS,
        {
            "bank": bank,
            "ids": entities,
            "counts": [counts[e] for e in entities],
            "firsts": [firsts[e] for e in entities],
            "lasts": [lasts[e] for e in entities],
        },
        fetch="none",
    )


def missing_reference_error(items: Sequence[MemoryItem], bank: str, missing: str) -> InvalidItemError:
    """The error for a causal reference to memory ``missing``, which the bank does not hold,
    naming the first item and field that wrote it."""
    index, field = next(
        (i, f)
        for i, item in enumerate(items)
        for f in _CAUSAL_FIELDS
        if any(str(r) == missing for r in getattr(item, f))
    )
    return InvalidItemError(index, f"{field} references memory {missing} which is not in bank {bank!r}")


def entity_plan(
    bank: str,
    units: Sequence[PreparedUnit],
    names: Sequence[Sequence[str]],
    threshold: float,
    *,
    mention_linked: Sequence[bool] | None = None,
) -> Plan[list[tuple[str, str]]]:
    """Resolve every unit's entity names to entity rows and count the mentions; return the
    (unit id, entity id) mentions, sorted, for :func:`mentions_copy` to write once the
    statistics are checked (:func:`fresh_statistics`).

    Units flagged in ``mention_linked`` (all when ``None``) are also linked to every known
    entity whose key appears in their text as whole words, in any case (:func:`mention_keys`).
    """
    linked = [True] * len(units) if mention_linked is None else list(mention_linked)
    grams = mention_grams(units, linked)
    all_grams = sorted(frozenset().union(*grams))
    if not all_grams and not any(names):
        return []
    named = entity_mentions(units, names)
    keys = named.keys
    entity_of: dict[str, str] = {}
    if keys:
        rows: list[_ResolvedKey] = yield resolve_entities_query(bank, keys, threshold)
        entity_of = {r.key: r.id for r in rows if r.id is not None}
    new_keys = [k for k in keys if k not in entity_of]
    if new_keys:
        created: list[_EntityKey] = yield upsert_entities_query(bank, named, new_keys)
        entity_of.update({r.match_key: r.id for r in created})

    found = {(unit_id, entity_of[key]) for unit_id, key in named.mentions}
    if all_grams:  # after the upsert: this batch's new entities are known too
        known: list[_EntityKey] = yield Query(
            KNOWN_ENTITY_KEYS, {"bank": bank, "keys": all_grams}, row_type=_EntityKey
        )
        found |= known_mentions(units, grams, known)
    if not found:
        return []
    pairs = sorted(found)
    yield count_mentions_query(bank, units, pairs)
    return pairs


def mentions_copy(bank: str, pairs: Sequence[tuple[str, str]]) -> Copy:
    """The ``COPY`` of :func:`entity_plan`'s mentions."""
    return Copy(COPY_UNIT_ENTITIES, [(bank, u, e) for u, e in pairs])


def batch_semantic_pairs(
    ids: Sequence[str],
    vectors: npt.NDArray[np.float32],
    *,
    min_similarity: float,
    top_k: int,
    block: int = 1024,
) -> list[tuple[str, str, float]]:
    """Top-k cosine neighbours inside the batch (vectors are unit-norm), by blocks so a large
    batch never builds the full n x n matrix at once."""
    out: list[tuple[str, str, float]] = []
    n = len(ids)
    if n < 2:
        return out
    for start in range(0, n, block):
        sims = vectors[start : start + block] @ vectors.T
        for row in range(sims.shape[0]):
            i = start + row
            sims[row, i] = -1.0
            k = min(top_k, n - 1)
            best = np.argpartition(-sims[row], k - 1)[:k]
            for j in best:
                s = float(sims[row, j])
                if s >= min_similarity:
                    out.append((ids[i], ids[int(j)], min(s, 1.0)))
    return out


def causal_links(
    items: Sequence[MemoryItem], units: Sequence[PreparedUnit]
) -> tuple[list[tuple[str, str, str]], list[str]]:
    """Explicit causal references as (from, to, type) links, and the external ids they name.

    An index names another item of this call (its first unit); a string names a stored memory.
    """
    first_unit: dict[int, str] = {}
    for unit in units:
        first_unit.setdefault(unit.item_index, unit.id)
    links: list[tuple[str, str, str]] = []
    external: list[str] = []
    for index, item in enumerate(items):
        source = first_unit.get(index)
        if source is None:
            continue
        for field in _CAUSAL_FIELDS:
            for ref in getattr(item, field):
                if isinstance(ref, int):
                    target = first_unit[ref]
                else:
                    try:
                        target = str(uuid.UUID(ref))
                    except ValueError as exc:
                        raise InvalidItemError(
                            index, f"{field} reference {ref!r} is neither an item index nor a memory id"
                        ) from exc
                    external.append(target)
                if target != source:
                    links.append((source, target, field))
    return links, external


def cue_causal_links(
    units: Sequence[PreparedUnit],
    vectors: npt.NDArray[np.float32],
    *,
    lookback: int = DEFAULT_CUE_LOOKBACK,
    min_similarity: float = DEFAULT_CUE_MIN_SIMILARITY,
) -> list[tuple[str, str, float]]:
    """The cue-phrase heuristic: a unit saying "because", "so that", "as a result" or "due to"
    is linked (``caused_by``) to the most similar of the ``lookback`` units before it in the
    same document of this retain call, if at least ``min_similarity`` similar. Off by default
    (``EngineConfig(causal_cue_links=True)``); the link weighs 0.5, half an explicit one.
    """
    out: list[tuple[str, str, float]] = []
    for i, unit in enumerate(units):
        if not _CUE.search(unit.text):
            continue
        earlier = [j for j in range(i - 1, -1, -1) if units[j].document_id == unit.document_id][:lookback]
        if not earlier:
            continue
        sims = vectors[earlier] @ vectors[i]
        best = int(np.argmax(sims))
        if float(sims[best]) >= min_similarity:
            out.append((unit.id, units[earlier[best]].id, DEFAULT_CUE_LINK_WEIGHT))
    return out


def link_plan(
    bank: str,
    items: Sequence[MemoryItem],
    units: Sequence[PreparedUnit],
    vectors: npt.NDArray[np.float32],
    *,
    semantic_min: float,
    semantic_k: int,
    temporal_k: int,
    temporal_floor: float,
    cue_links: bool = False,
) -> Plan[int]:
    """Write semantic, temporal and causal links for the new units; return how many."""
    ids = [u.id for u in units]
    uuids = [uuid.UUID(i) for i in ids]
    causal, external = causal_links(items, units)
    if external:
        missing: list[_IdRow] = yield Query(
            CHECK_REFERENCED, {"bank": bank, "ids": sorted(set(external))}, row_type=_IdRow
        )
        if missing:
            raise missing_reference_error(items, bank, missing[0].id)

    # Semantic: neighbours already stored (new -> old); the pairs inside the batch come in
    # link_weights. A bank that was empty has no neighbours.
    older = yield Query(HAS_OLDER_UNITS, {"bank": bank, "ids": uuids}, fetch="one")
    stored: list[_SemanticNeighbour] = []
    if older is not None:
        stored = yield semantic_neighbours_query(
            bank, uuids, Dimension(int(vectors.shape[1])), k=semantic_k, min_similarity=semantic_min
        )

    # Temporal: nearest by event date on both sides (link_weights keeps the closest per unit).
    dated: list[_TemporalNeighbour] = yield Query(
        TEMPORAL_NEIGHBOURS, {"bank": bank, "ids": uuids, "k": temporal_k}, row_type=_TemporalNeighbour
    )
    weights = link_weights(
        units,
        vectors,
        causal,
        stored,
        dated,
        cue_links=cue_links,
        semantic_min=semantic_min,
        semantic_k=semantic_k,
        temporal_k=temporal_k,
        temporal_floor=temporal_floor,
    )
    # Sorted by key: a stable lock order between concurrent retains.
    ordered = sorted(weights.items())
    if ordered:
        yield from fk_checked(Copy(COPY_LINKS, [(bank, s, t, kind, w) for (s, t, kind), w in ordered]))
    return len(ordered)


def link_weights(
    units: Sequence[PreparedUnit],
    vectors: npt.NDArray[np.float32],
    causal: Sequence[tuple[str, str, str]],
    stored: Sequence[_SemanticNeighbour],
    dated: Sequence[_TemporalNeighbour],
    *,
    cue_links: bool,
    semantic_min: float,
    semantic_k: int,
    temporal_k: int,
    temporal_floor: float,
) -> dict[tuple[str, str, str], float]:
    """Every link of the new units by (from, to, type), with its weight: the cue heuristic,
    explicit references (which win over it), stored and in-batch semantic neighbours, and the
    closest ``temporal_k`` dated neighbours per unit."""
    weights: dict[tuple[str, str, str], float] = {}
    if cue_links:
        for source, target, w in cue_causal_links(units, vectors):
            weights[(source, target, "caused_by")] = w
    for source, target, kind in causal:  # explicit references win over the heuristic
        weights[(source, target, kind)] = 1.0
    for neighbour in stored:
        weights[(neighbour.from_id, neighbour.to_id, "semantic")] = min(float(neighbour.similarity), 1.0)
    ids = [u.id for u in units]
    for source, target, s in batch_semantic_pairs(
        ids, vectors, min_similarity=semantic_min, top_k=semantic_k
    ):
        weights[(source, target, "semantic")] = s
    per_source: dict[str, list[tuple[float, str]]] = {}
    for when in dated:
        per_source.setdefault(when.from_id, []).append((float(when.hours), when.to_id))
    for source, near in per_source.items():
        for hours, target in sorted(near)[:temporal_k]:
            weights[(source, target, "temporal")] = max(temporal_floor, 1.0 - hours / 24.0)
    return weights
