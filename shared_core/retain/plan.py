"""The retain plan: embed, then write units (and chunks, documents) in one transaction.

SQL lives beside the code that reads its rows. Rows arrive through ``COPY`` into a staging
table that is dropped at commit; one ``INSERT ... SELECT`` then computes each unit's
``search_vector`` inside Postgres, so bulk loads stay one round trip per table.
"""

from __future__ import annotations

import datetime as _dt
import struct
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from psycopg.postgres import types as pg_types
from psycopg.types.json import Jsonb
from psycopg.types.numeric import Int4

from shared_core.errors import InvalidItemError
from shared_core.retain.links import entity_plan, fk_checked, fresh_statistics, link_plan, mentions_copy
from shared_core.retain.prepare import PreparedChunk, PreparedUnit
from shared_core.storage.locks import CLAIM_BANK_STATS
from shared_core.storage.plan import Copy, Plan, Query
from shared_core.storage.queries import BANK_EMBEDDER, BankEmbedder
from shared_core.types import MemoryItem, as_utc

__all__ = ["RetainRequest", "retain_plan", "stage_row"]

TEXT_OID: Final = pg_types["text"].oid

UPSERT_BANK = """
INSERT INTO banks (bank_id, embedding_model, embedding_dimension)
VALUES (%(bank)s, %(model)s, %(dimension)s)
ON CONFLICT (bank_id) DO NOTHING"""

# FOR SHARE: a concurrent delete of the bank waits for this retain to land.
SELECT_BANK = BANK_EMBEDDER + " FOR SHARE"

# Re-retaining a document replaces it: the cascade removes its units, chunks, links and
# entity mentions in this same transaction.
DELETE_DOCUMENTS = """
DELETE FROM documents WHERE bank_id = %(bank)s AND document_id = ANY(%(document_ids)s)"""

INSERT_DOCUMENTS = """
INSERT INTO documents (bank_id, document_id)
SELECT %(bank)s, d FROM unnest(%(document_ids)s::text[]) AS d
ON CONFLICT (bank_id, document_id) DO UPDATE SET updated_at = now()"""

COPY_CHUNKS = """
COPY chunks (bank_id, chunk_id, document_id, chunk_index, text) FROM STDIN"""

CREATE_STAGE = """
CREATE TEMP TABLE IF NOT EXISTS retain_stage (
    id uuid, text text, context text, embedding vector, fact_type text,
    occurred_start timestamptz, occurred_end timestamptz, mentioned_at timestamptz,
    date_grain text, tags text[], metadata jsonb, proof_count integer, document_id text,
    chunk_id text, signals text, cjk text, index_context text
) ON COMMIT DROP"""

# Binary: the text form of a vector is pgvector's ``str(float)`` per element, ~0.6 ms of
# Python for a 384-d row, half of a bulk load's client CPU (cProfile, 10k rows: 5.0 of
# 10.5 s); the binary form is the float32 bytes (1.32 s against 0.056 s for 2,000 staged rows,
# the same rows read back). Each value must then have the column's exact binary type:
# ``stage_row``.
COPY_STAGE = """
COPY retain_stage (id, text, context, embedding, fact_type, occurred_start, occurred_end,
    mentioned_at, date_grain, tags, metadata, proof_count, document_id, chunk_id, signals, cjk,
    index_context)
FROM STDIN (FORMAT BINARY)"""

# The keyword document: text, context and signals (entity names, readable dates) weighted A/B/C
# in the configured text-search config, plus CJK bigrams under 'simple' (no stemming, no
# segmentation) so Chinese and Japanese queries can match; the neighbour context (the memory
# before it in its document, retain/neighbours.py) at 'D', which BM25 counts at a discount.
# The staged rows' columns as ``s.*``; the small retain (retain/small.py) reads them from
# parameters instead of the stage.
UNITS_SELECT = """
INSERT INTO memory_units (bank_id, id, text, context, embedding, fact_type, occurred_start,
    occurred_end, mentioned_at, date_grain, tags, metadata, proof_count, document_id, chunk_id,
    index_context, search_vector, created_at, updated_at)
SELECT %(bank)s, s.id, s.text, s.context, s.embedding, s.fact_type, s.occurred_start,
    s.occurred_end, s.mentioned_at, s.date_grain, s.tags, s.metadata, s.proof_count,
    s.document_id, s.chunk_id, s.index_context,
    setweight(to_tsvector(%(ts_config)s::regconfig, s.text), 'A')
      || setweight(to_tsvector(%(ts_config)s::regconfig, coalesce(s.context, '')), 'B')
      || setweight(to_tsvector(%(ts_config)s::regconfig, coalesce(s.signals, '')), 'C')
      || setweight(to_tsvector('simple', coalesce(s.cjk, '')), 'A')
      || setweight(to_tsvector(%(ts_config)s::regconfig, coalesce(s.index_context, '')), 'D'),
    %(now)s, %(now)s"""

INSERT_UNITS = (
    UNITS_SELECT
    + """
FROM retain_stage s"""
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RetainRequest:
    """Everything a retain plan needs, already validated and prepared."""

    bank: str
    items: Sequence[MemoryItem]
    units: Sequence[PreparedUnit]
    chunks: Sequence[PreparedChunk]
    replace_documents: Sequence[str]
    embedding_model: str
    ts_config: str
    now: _dt.datetime
    signals: Sequence[str]
    cjk: Sequence[str]
    entities: Sequence[Sequence[str]]
    entity_threshold: float
    semantic_link_min: float
    semantic_link_k: int
    temporal_link_k: int
    temporal_link_floor: float
    cue_links: bool = False
    own_vectors: npt.NDArray[np.float32] | None = None
    """The units' own vectors, when the stored ones carry conversation context
    (retain/neighbours.py): links are about what a memory itself says."""


def _text_array(values: Sequence[str]) -> bytes:
    """``values`` in the binary form of a ``text[]`` (one dimension from 1, no NULLs), written
    here: psycopg dumps an empty list in its text form ('{}') even into a binary COPY, which the
    server refuses, and its binary COPY keeps the first row's dumper for every row of a column,
    so the column must be bytes for every row. A binary COPY passes bytes through unchanged."""
    if not values:
        return _ARRAY_HEADER.pack(0, 0, TEXT_OID)
    encoded = [v.encode() for v in values]
    return b"".join(
        [
            _ARRAY_HEADER.pack(1, 0, TEXT_OID),
            _ARRAY_DIMENSION.pack(len(encoded), 1),
            *(_ARRAY_ELEMENT.pack(len(e)) + e for e in encoded),
        ]
    )


_ARRAY_HEADER: Final = struct.Struct("!iiI")  # dimensions, has NULLs, element type
_ARRAY_DIMENSION: Final = struct.Struct("!ii")  # length, lower bound
_ARRAY_ELEMENT: Final = struct.Struct("!i")  # byte length of the element that follows


def _raw_json(text: str) -> str:
    return text  # already JSON (prepare.json_dumps)


def _utc(value: _dt.datetime | None) -> _dt.datetime | None:
    # Binary timestamps carry no zone: a naive value would go in as UTC whatever the session's
    # TimeZone, as the library documents (types.as_utc); aware ones keep their instant.
    return None if value is None else as_utc(value)


def stage_row(unit: PreparedUnit, vector: npt.NDArray[np.float32], signals: str, cjk: str) -> tuple[Any, ...]:
    """One row of :data:`COPY_STAGE`, each value of its column's binary type (``uuid``,
    ``vector``, ``jsonb``, ``integer``, ``text[]`` as :func:`_text_array`; text and
    ``timestamptz`` as psycopg dumps them)."""
    return (
        uuid.UUID(unit.id),
        unit.text,
        unit.context,
        vector,
        unit.fact_type,
        _utc(unit.occurred_start),
        _utc(unit.occurred_end),
        _utc(unit.mentioned_at),
        unit.date_grain,
        _text_array(unit.tags),
        Jsonb(unit.metadata_json, dumps=_raw_json),
        Int4(unit.proof_count),
        unit.document_id,
        unit.chunk_id,
        signals,
        cjk,
        unit.index_context,
    )


def merge_vectors(
    items: Sequence[MemoryItem],
    units: Sequence[PreparedUnit],
    embed: Callable[[list[str]], npt.NDArray[np.float32]],
) -> npt.NDArray[np.float32]:
    """Embed the units that have no caller-supplied vector; keep the supplied ones.

    A supplied embedding belongs to its item's text, so it is used only when the item was not
    split into several units.
    """
    per_item = {u.item_index: 0 for u in units}
    for u in units:
        per_item[u.item_index] += 1
    todo = [
        i for i, u in enumerate(units) if items[u.item_index].embedding is None or per_item[u.item_index] > 1
    ]
    computed = embed([units[i].text for i in todo]) if todo else None
    supplied_first = items[units[0].item_index].embedding
    dimension = (
        computed.shape[1]
        if computed is not None
        else len(supplied_first)
        if supplied_first is not None
        else 0
    )
    out = np.zeros((len(units), dimension), dtype=np.float32)
    if computed is not None:
        out[todo] = computed
    for i, u in enumerate(units):
        supplied = items[u.item_index].embedding
        if supplied is not None and per_item[u.item_index] == 1:
            vector = np.asarray(supplied, dtype=np.float32)
            if vector.shape != (dimension,):
                raise InvalidItemError(
                    u.item_index, f"embedding has {vector.shape[0]} dimensions, expected {dimension}"
                )
            norm = float(np.linalg.norm(vector))
            out[i] = vector / norm if norm > 0 else vector
    return out


def retain_plan(request: RetainRequest, vectors: npt.NDArray[np.float32]) -> Plan[list[str]]:
    """Write a prepared retain in one transaction; return the new unit ids in input order."""
    units = request.units
    if not units:
        return []
    dimension = int(vectors.shape[1])
    yield Query(
        UPSERT_BANK,
        {"bank": request.bank, "model": request.embedding_model, "dimension": dimension},
        fetch="none",
    )
    bank: BankEmbedder = yield Query(SELECT_BANK, {"bank": request.bank}, fetch="one", row_type=BankEmbedder)
    yield Query(CLAIM_BANK_STATS, {"bank": request.bank}, fetch="none")
    bank.check(request.bank, request.embedding_model, dimension)

    document_ids = sorted(
        {u.document_id for u in units if u.document_id is not None}
        | {c.document_id for c in request.chunks if c.document_id is not None}
    )
    if request.replace_documents:
        yield Query(
            DELETE_DOCUMENTS,
            {"bank": request.bank, "document_ids": list(request.replace_documents)},
            fetch="none",
        )
    if document_ids:
        yield Query(INSERT_DOCUMENTS, {"bank": request.bank, "document_ids": document_ids}, fetch="none")
    if request.chunks:
        yield Copy(
            COPY_CHUNKS,
            [(request.bank, c.chunk_id, c.document_id, c.chunk_index, c.text) for c in request.chunks],
        )
    yield Query(CREATE_STAGE, fetch="none")
    yield Copy(
        COPY_STAGE,
        [stage_row(u, vectors[i], request.signals[i], request.cjk[i]) for i, u in enumerate(units)],
    )
    # The units' own foreign keys (bank, document, chunk) are checked row by row too.
    yield from fk_checked(
        Query(
            INSERT_UNITS,
            {"bank": request.bank, "ts_config": request.ts_config, "now": request.now},
            fetch="none",
        )
    )
    mentions = yield from entity_plan(
        request.bank,
        units,
        request.entities,
        request.entity_threshold,
        # explicit entities are the whole truth for their item: no lower-case mention linking
        mention_linked=[request.items[u.item_index].entities is None for u in units],
    )
    # Written for the foreign-key checks of the mentions and links (they read whole banks when
    # the statistics knew fewer rows than the retain wrote). Migration 0024 dropped those
    # keys; whether any other plan of the retain still needs the refresh is not measured, so
    # it stays until it is.
    yield from fresh_statistics(
        {"memory_units": len(units), "entities": len({entity for _, entity in mentions})}
    )
    if mentions:
        yield from fk_checked(mentions_copy(request.bank, mentions))
    yield from link_plan(
        request.bank,
        request.items,
        units,
        vectors if request.own_vectors is None else request.own_vectors,
        semantic_min=request.semantic_link_min,
        semantic_k=request.semantic_link_k,
        temporal_k=request.temporal_link_k,
        temporal_floor=request.temporal_link_floor,
        cue_links=request.cue_links,
    )
    return [u.id for u in units]
