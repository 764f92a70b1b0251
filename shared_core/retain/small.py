"""The small retain: a few memories (an agent storing a chat turn) in three round trips.

The batch plan (:func:`shared_core.retain.plan.retain_plan`) is built for thousands of rows: a
staging table, ``COPY``, one statement per step, each waiting for the server. For one memory
those waits are the cost: about twenty round trips (each a wake-up of the server and then of
the client, several milliseconds on a busy machine) against one for a plain ``INSERT``. This
plan writes the same rows with the same statements' logic, sent as three pipelines
(:class:`~shared_core.storage.plan.Pipeline`) whose statements do not need each other's
results:

0. the bank (upsert, read, lock), documents, causal references and each unit's stored
   semantic neighbours, searched by its vector: none of them needs the extraction, so the
   engine's retain sends them before the NER runs (:func:`send_early`, a
   :class:`~shared_core.storage.plan.Send`) and the server works while spaCy does;
1. entity resolution, in the same round trip as 0's results;
2. the units (one parameterised ``INSERT`` each, no staging table), new entities, the known
   entities their words name, and the stored temporal neighbours;
3. mention counts, entity mentions and links (``INSERT ... unnest``, no ``COPY``), sent
   without waiting: they travel with the commit.

The semantic neighbours are searched before the units' ``INSERT`` instead of after it (as the
batch plan does): the HNSW walk then does not pass through the new nodes, which the search
leaves out anyway. The stored links (neighbours with similarity >= 0.7) were the same for
every one of 600 vectors at 100k (``benchmarks/semantic_before_insert.py``,
docs/benchmarks/one2_retain.md); only below the threshold did the top 20 differ.

The stored rows (units, entities, mentions, links) are the batch plan's for the same input
(``tests/integration/test_small_retain.py`` compares both paths row by row).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import psycopg

from shared_core.errors import InvalidItemError
from shared_core.retain.links import (
    CHECK_REFERENCED,
    KNOWN_ENTITY_KEYS,
    SEMANTIC_NEIGHBOUR_SETTINGS,
    TEMPORAL_NEIGHBOURS,
    _EntityKey,
    _IdRow,
    _ResolvedKey,
    _SemanticNeighbour,
    _Table,
    _TemporalNeighbour,
    analyse_stale,
    causal_links,
    count_mentions_query,
    entity_mentions,
    fk_plan_restore,
    fk_plan_settings,
    known_mentions,
    link_weights,
    mention_grams,
    missing_reference_error,
    resolve_entities_query,
    semantic_neighbours_of_vector_query,
    stale_statistics_query,
    upsert_entities_query,
)
from shared_core.retain.plan import (
    DELETE_DOCUMENTS,
    INSERT_DOCUMENTS,
    SELECT_BANK,
    UNITS_SELECT,
    UPSERT_BANK,
    RetainRequest,
)
from shared_core.retain.prepare import PreparedChunk, PreparedUnit
from shared_core.storage.dimensions import Dimension
from shared_core.storage.errors import map_database_error
from shared_core.storage.locks import CLAIM_BANK_STATS
from shared_core.storage.plan import Pipeline, Plan, Query, Receive, Send, Sent
from shared_core.storage.queries import BankEmbedder
from shared_core.types import MemoryItem

__all__ = [
    "SMALL_RETAIN_MAX_UNITS",
    "EarlyRetain",
    "fits_small",
    "is_small",
    "send_early",
    "small_retain_error",
    "small_retain_plan",
]

SMALL_RETAIN_MAX_UNITS: Final = 8
"""Up to this many units (and no long item split into a chunk) take the small path: one
statement per unit costs less than a staging table until a batch is larger than a few rows."""

# The batch plan's unit insert over one row given as parameters, cast to the stage's types.
INSERT_UNIT = (
    UNITS_SELECT
    + """
FROM (VALUES (%(id)s::uuid, %(text)s::text, %(context)s::text, %(embedding)s::vector,
    %(fact_type)s::text, %(occurred_start)s::timestamptz, %(occurred_end)s::timestamptz,
    %(mentioned_at)s::timestamptz, %(date_grain)s::text, %(tags)s::text[], %(metadata)s::jsonb,
    %(proof_count)s::integer, %(document_id)s::text, %(chunk_id)s::text, %(signals)s::text,
    %(cjk)s::text, %(index_context)s::text))
  AS s(id, text, context, embedding, fact_type, occurred_start, occurred_end, mentioned_at,
       date_grain, tags, metadata, proof_count, document_id, chunk_id, signals, cjk,
       index_context)"""
)

INSERT_UNIT_ENTITIES = """
INSERT INTO unit_entities (bank_id, unit_id, entity_id)
SELECT %(bank)s, p.u, p.e FROM unnest(%(units)s::uuid[], %(entities)s::uuid[]) AS p(u, e)"""

# Weights travel as text and are parsed by the column's type, as COPY's text rows are.
INSERT_LINKS = """
INSERT INTO memory_links (bank_id, from_id, to_id, link_type, weight)
SELECT %(bank)s, l.f, l.t, l.k, l.w::real
FROM unnest(%(froms)s::uuid[], %(tos)s::uuid[], %(kinds)s::text[], %(weights)s::text[])
  AS l(f, t, k, w)"""

_ITEM_STATE_CLASSES = ("22", "23")


# The semantic search's planner settings are transaction-local and outlive it; sent before the
# unit INSERT, they would also reach the statements that ran before the search when it came
# after the INSERT (the entity resolution, the INSERT's triggers). So the early pipeline saves
# the values in force and sets the search's in one statement (a target list is evaluated in
# order: the saves read the values before the sets change them), puts them back after the
# search, and the temporal search, which ran after the semantic one, sets them again: every
# statement keeps the settings it ran with.
SAVE_AND_SET_SEMANTIC_SETTINGS = """
SELECT set_config('hindsight.saved_ef_search', current_setting('hnsw.ef_search'), true),
       set_config('hindsight.saved_enable_seqscan', current_setting('enable_seqscan'), true),
       set_config('hindsight.saved_enable_sort', current_setting('enable_sort'), true),
       set_config('hnsw.ef_search', %(ef_search)s, true),
       set_config('enable_seqscan', %(enable_seqscan)s, true),
       set_config('enable_sort', %(enable_sort)s, true)"""
RESTORE_SEMANTIC_SETTINGS = """
SELECT set_config('hnsw.ef_search', current_setting('hindsight.saved_ef_search'), true),
       set_config('enable_seqscan', current_setting('hindsight.saved_enable_seqscan'), true),
       set_config('enable_sort', current_setting('hindsight.saved_enable_sort'), true)"""


_SEMANTIC_SETTING_PARAMS: Final = {
    "ef_search": SEMANTIC_NEIGHBOUR_SETTINGS["hnsw.ef_search"],
    "enable_seqscan": SEMANTIC_NEIGHBOUR_SETTINGS["enable_seqscan"],
    "enable_sort": SEMANTIC_NEIGHBOUR_SETTINGS["enable_sort"],
}
if set(SEMANTIC_NEIGHBOUR_SETTINGS) != {"hnsw.ef_search", "enable_seqscan", "enable_sort"}:
    raise AssertionError("SAVE_AND_SET_SEMANTIC_SETTINGS sets exactly SEMANTIC_NEIGHBOUR_SETTINGS")


def fits_small(units: Sequence[PreparedUnit], chunks: Sequence[PreparedChunk]) -> bool:
    """Whether prepared ``units`` (split into ``chunks``) take the small path."""
    return 0 < len(units) <= SMALL_RETAIN_MAX_UNITS and not chunks


def is_small(request: RetainRequest) -> bool:
    """Whether ``request`` takes the small path."""
    return fits_small(request.units, request.chunks)


@dataclass(frozen=True, slots=True, kw_only=True)
class EarlyRetain:
    """What :func:`send_early` sent: its handle, and what the rest of the plan reads of it."""

    sent: Sent
    documents: bool  # a DELETE_DOCUMENTS and / or INSERT_DOCUMENTS result to skip
    replaced: bool
    external: bool  # a CHECK_REFERENCED result
    units: int  # one semantic neighbour result per unit


def send_early(
    *,
    bank: str,
    embedding_model: str,
    items: Sequence[MemoryItem],
    units: Sequence[PreparedUnit],
    replace_documents: Sequence[str],
    vectors: npt.NDArray[np.float32],
    semantic_k: int,
    semantic_min: float,
) -> Plan[EarlyRetain]:
    """Send the small retain's statements that do not need the extraction (step 0 of the
    module's list): the plan goes on with the NER while the server runs them."""
    dimension = int(vectors.shape[1])
    uuids = [uuid.UUID(u.id) for u in units]
    _, external = causal_links(items, units)  # a malformed reference raises here
    document_ids = sorted({u.document_id for u in units if u.document_id is not None})
    queries: list[Query] = [
        Query(UPSERT_BANK, {"bank": bank, "model": embedding_model, "dimension": dimension}, fetch="none"),
        Query(SELECT_BANK, {"bank": bank}, fetch="one", row_type=BankEmbedder),
        Query(CLAIM_BANK_STATS, {"bank": bank}, fetch="none"),
    ]
    if replace_documents:
        queries.append(
            Query(DELETE_DOCUMENTS, {"bank": bank, "document_ids": list(replace_documents)}, fetch="none")
        )
    if document_ids:
        queries.append(Query(INSERT_DOCUMENTS, {"bank": bank, "document_ids": document_ids}, fetch="none"))
    if external:
        queries.append(Query(CHECK_REFERENCED, {"bank": bank, "ids": sorted(set(external))}, row_type=_IdRow))
    # After the lock and the documents' replacement, as the search after the INSERT ran. An
    # empty bank has no neighbours: the search finds none, no need to ask first.
    queries.append(Query(SAVE_AND_SET_SEMANTIC_SETTINGS, _SEMANTIC_SETTING_PARAMS, fetch="none"))
    queries.extend(
        dataclasses.replace(  # its settings are set by the statement before
            semantic_neighbours_of_vector_query(
                bank, uuids, i, vectors[i], Dimension(dimension), k=semantic_k, min_similarity=semantic_min
            ),
            settings={},
        )
        for i in range(len(units))
    )
    queries.append(Query(RESTORE_SEMANTIC_SETTINGS, fetch="none"))
    sent = yield Send(tuple(queries))
    return EarlyRetain(
        sent=sent,
        documents=bool(document_ids),
        replaced=bool(replace_documents),
        external=bool(external),
        units=len(units),
    )


def small_retain_error(exc: psycopg.Error, request: RetainRequest) -> Exception:
    """A database error of the small path, typed: a refused row (bad data, a broken
    constraint) of a retain whose units all come from one item names that item, as the batch
    path names the staged row's item; the rest is mapped as everywhere."""
    state = exc.sqlstate or ""
    items = {u.item_index for u in request.units}
    table = getattr(exc.diag, "table_name", None)
    if state[:2] in _ITEM_STATE_CLASSES and len(items) == 1 and table in (None, "memory_units"):
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else state
        return InvalidItemError(items.pop(), f"the database refused it ({state}): {detail}")
    mapped = map_database_error(exc)
    return mapped if isinstance(mapped, Exception) else exc


def _unit_params(request: RetainRequest, vectors: npt.NDArray[np.float32], i: int) -> dict[str, Any]:
    u = request.units[i]
    return {
        "bank": request.bank,
        "ts_config": request.ts_config,
        "now": request.now,
        "id": u.id,
        "text": u.text,
        "context": u.context,
        "embedding": vectors[i],
        "fact_type": u.fact_type,
        "occurred_start": u.occurred_start,
        "occurred_end": u.occurred_end,
        "mentioned_at": u.mentioned_at,
        "date_grain": u.date_grain,
        "tags": list(u.tags),
        "metadata": u.metadata_json,
        "proof_count": u.proof_count,
        "document_id": u.document_id,
        "chunk_id": u.chunk_id,
        "signals": request.signals[i],
        "cjk": request.cjk[i],
        "index_context": u.index_context,
    }


def small_retain_plan(
    request: RetainRequest, vectors: npt.NDArray[np.float32], early: EarlyRetain | None = None
) -> Plan[list[str]]:
    """Write a small prepared retain (:func:`is_small`) in one transaction, three round trips;
    return the new unit ids in input order. The rows are :func:`~shared_core.retain.plan.
    retain_plan`'s. ``early``: what :func:`send_early` sent for this request, before its
    extraction; sent here first when None."""
    bank, units, items = request.bank, request.units, request.items
    dimension = int(vectors.shape[1])
    link_vectors = vectors if request.own_vectors is None else request.own_vectors
    ids = [u.id for u in units]
    uuids = [uuid.UUID(i) for i in ids]
    causal, _ = causal_links(items, units)  # a malformed reference raises here
    if early is None:
        early = yield from send_early(
            bank=bank,
            embedding_model=request.embedding_model,
            items=items,
            units=units,
            replace_documents=request.replace_documents,
            vectors=vectors,
            semantic_k=request.semantic_link_k,
            semantic_min=request.semantic_link_min,
        )

    # Entity names per unit (resolved by key) and the words that may name known entities.
    grams = mention_grams(units, [items[u.item_index].entities is None for u in units])
    all_grams = sorted(frozenset().union(*grams))
    named = entity_mentions(units, request.entities)
    keys = named.keys

    # 1. Entity resolution, in the round trip that brings step 0's results.
    resolved: list[_ResolvedKey] = []
    if keys:
        [resolved] = yield Pipeline((resolve_entities_query(bank, keys, request.entity_threshold),))
    results = yield Receive(early.sent)
    bank_row: BankEmbedder = results[1]
    bank_row.check(bank, request.embedding_model, dimension)
    at = 3 + early.replaced + early.documents
    if early.external:
        missing: list[_IdRow] = results[at]
        at += 1
        if missing:
            raise missing_reference_error(items, bank, missing[0].id)
    at += 1  # the settings saved
    stored: list[_SemanticNeighbour] = [n for per_unit in results[at : at + early.units] for n in per_unit]
    entity_of = {r.key: r.id for r in resolved if r.id is not None}
    new_keys = [k for k in keys if k not in entity_of]

    # 2. Units, new entities, known entities named, stored neighbours.
    second: list[Query] = [
        Query(INSERT_UNIT, _unit_params(request, vectors, i), fetch="none") for i in range(len(units))
    ]
    if new_keys:
        second.append(upsert_entities_query(bank, named, new_keys))
    if all_grams:  # after the upsert: this retain's new entities are known too
        second.append(Query(KNOWN_ENTITY_KEYS, {"bank": bank, "keys": all_grams}, row_type=_EntityKey))
    # With the semantic search's settings, which it ran with when that search came just
    # before it (see RESTORE_SEMANTIC_SETTINGS); they outlive it, as before.
    second.append(
        Query(
            TEMPORAL_NEIGHBOURS,
            {"bank": bank, "ids": uuids, "k": request.temporal_link_k},
            settings=SEMANTIC_NEIGHBOUR_SETTINGS,
            row_type=_TemporalNeighbour,
        )
    )
    # Last, after the units and entities are written: whether the statistics miss them
    # (links.fresh_statistics), answered with the rest of this round trip.
    second.append(stale_statistics_query({"memory_units": len(units), "entities": len(keys)}))
    results = yield Pipeline(tuple(second))
    stale: list[_Table] = results[-1]
    at = len(units)
    if new_keys:
        created: list[_EntityKey] = results[at]
        entity_of.update({r.match_key: r.id for r in created})
        at += 1
    found = {(unit_id, entity_of[key]) for unit_id, key in named.mentions}
    if all_grams:
        known: list[_EntityKey] = results[at]
        at += 1
        found |= known_mentions(units, grams, known)
    dated: list[_TemporalNeighbour] = results[at]

    # 3. Mentions and links. The mentions' and links' rows are checked by foreign keys, row by
    # row: those inserts run with reusable check plans (links.fk_plan_settings); the mention
    # counts' UPDATE reads entities, so it keeps the connection's mode, as every other
    # statement of the retain does.
    counted: list[Query] = []
    checked: list[Query] = []
    if found:
        pairs = sorted(found)
        counted.append(count_mentions_query(bank, units, pairs))
        checked.append(
            Query(
                INSERT_UNIT_ENTITIES,
                {"bank": bank, "units": [u for u, _ in pairs], "entities": [e for _, e in pairs]},
                fetch="none",
            )
        )
    weights = link_weights(
        units,
        link_vectors,
        causal,
        stored,
        dated,
        cue_links=request.cue_links,
        semantic_min=request.semantic_link_min,
        semantic_k=request.semantic_link_k,
        temporal_k=request.temporal_link_k,
        temporal_floor=request.temporal_link_floor,
    )
    if weights:
        ordered = sorted(weights.items())  # the batch plan's order: a stable lock order
        checked.append(
            Query(
                INSERT_LINKS,
                {
                    "bank": bank,
                    "froms": [s for (s, _, _), _ in ordered],
                    "tos": [t for (_, t, _), _ in ordered],
                    "kinds": [k for (_, _, k), _ in ordered],
                    "weights": [repr(float(w)) for _, w in ordered],
                },
                fetch="none",
            )
        )
    if checked:  # a mention count comes with its mentions
        # Sent with the commit (or the caller's next statement, when this plan is part of a
        # larger one): no round trip of its own.
        yield Pipeline(
            (*counted, *analyse_stale(stale), *fk_plan_settings(), *checked, fk_plan_restore()), wait=False
        )
    return ids
