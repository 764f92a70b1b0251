"""The small retain: a few memories (an agent storing a chat turn) in three round trips.

The batch plan (:func:`shared_core.retain.plan.retain_plan`) is built for thousands of rows: a
staging table, ``COPY``, one statement per step, each waiting for the server. For one memory
those waits are the cost: about twenty round trips (each a wake-up of the server and then of
the client, several milliseconds on a busy machine) against one for a plain ``INSERT``. This
plan writes the same rows with the same statements' logic, sent as three pipelines
(:class:`~shared_core.storage.plan.Pipeline`) whose statements do not need each other's
results:

1. the bank (upsert, read, lock), documents, causal references and entity resolution;
2. the units (one parameterised ``INSERT`` each, no staging table), new entities, the known
   entities their words name, and the stored semantic and temporal neighbours;
3. mention counts, entity mentions and links (``INSERT ... unnest``, no ``COPY``), sent
   without waiting: they travel with the commit.

The stored rows (units, entities, mentions, links) are the batch plan's for the same input
(``tests/integration/test_small_retain.py`` compares both paths row by row).
"""

from __future__ import annotations

import uuid
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import psycopg

from shared_core.errors import InvalidItemError
from shared_core.retain.links import (
    CHECK_REFERENCED,
    KNOWN_ENTITY_KEYS,
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
    semantic_neighbours_query,
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
from shared_core.storage.dimensions import Dimension
from shared_core.storage.errors import map_database_error
from shared_core.storage.locks import CLAIM_BANK_STATS
from shared_core.storage.plan import Pipeline, Plan, Query
from shared_core.storage.queries import BankEmbedder

__all__ = ["SMALL_RETAIN_MAX_UNITS", "is_small", "small_retain_error", "small_retain_plan"]

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


def is_small(request: RetainRequest) -> bool:
    """Whether ``request`` takes the small path."""
    return 0 < len(request.units) <= SMALL_RETAIN_MAX_UNITS and not request.chunks


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


def small_retain_plan(request: RetainRequest, vectors: npt.NDArray[np.float32]) -> Plan[list[str]]:
    """Write a small prepared retain (:func:`is_small`) in one transaction, three round trips;
    return the new unit ids in input order. The rows are :func:`~shared_core.retain.plan.
    retain_plan`'s."""
    bank, units, items = request.bank, request.units, request.items
    dimension = int(vectors.shape[1])
    link_vectors = vectors if request.own_vectors is None else request.own_vectors
    ids = [u.id for u in units]
    uuids = [uuid.UUID(i) for i in ids]
    causal, external = causal_links(items, units)  # a malformed reference raises here

    # Entity names per unit (resolved by key) and the words that may name known entities.
    grams = mention_grams(units, [items[u.item_index].entities is None for u in units])
    all_grams = sorted(frozenset().union(*grams))
    named = entity_mentions(units, request.entities)
    keys = named.keys

    # 1. Bank, lock, documents, references, entity resolution.
    document_ids = sorted({u.document_id for u in units if u.document_id is not None})
    first: list[Query] = [
        Query(
            UPSERT_BANK,
            {"bank": bank, "model": request.embedding_model, "dimension": dimension},
            fetch="none",
        ),
        Query(SELECT_BANK, {"bank": bank}, fetch="one", row_type=BankEmbedder),
        Query(CLAIM_BANK_STATS, {"bank": bank}, fetch="none"),
    ]
    if request.replace_documents:
        first.append(
            Query(
                DELETE_DOCUMENTS,
                {"bank": bank, "document_ids": list(request.replace_documents)},
                fetch="none",
            )
        )
    if document_ids:
        first.append(Query(INSERT_DOCUMENTS, {"bank": bank, "document_ids": document_ids}, fetch="none"))
    if external:
        first.append(Query(CHECK_REFERENCED, {"bank": bank, "ids": sorted(set(external))}, row_type=_IdRow))
    if keys:
        first.append(resolve_entities_query(bank, keys, request.entity_threshold))
    results = yield Pipeline(tuple(first))
    bank_row: BankEmbedder = results[1]
    bank_row.check(bank, request.embedding_model, dimension)
    at = 3 + bool(request.replace_documents) + bool(document_ids)
    if external:
        missing: list[_IdRow] = results[at]
        at += 1
        if missing:
            raise missing_reference_error(items, bank, missing[0].id)
    entity_of: dict[str, str] = {}
    if keys:
        resolved: list[_ResolvedKey] = results[at]
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
    # An empty bank has no neighbours: the search finds none, no need to ask first.
    second.append(
        semantic_neighbours_query(
            bank,
            uuids,
            Dimension(dimension),
            k=request.semantic_link_k,
            min_similarity=request.semantic_link_min,
        )
    )
    second.append(
        Query(
            TEMPORAL_NEIGHBOURS,
            {"bank": bank, "ids": uuids, "k": request.temporal_link_k},
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
    stored: list[_SemanticNeighbour] = results[at]
    dated: list[_TemporalNeighbour] = results[at + 1]

    # 3. Mentions and links. Until migration 0024 their rows were checked by foreign keys, row
    # by row, so those inserts run with reusable check plans (links.fk_plan_settings; since
    # 0024 no key checks them, and the settings cost three trivial statements of this
    # pipeline); the mention counts' UPDATE reads entities, so it keeps the connection's
    # mode, as every other statement of the retain does.
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
