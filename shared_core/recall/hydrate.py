"""After fusion: the candidates' stored fields (one typed row each) and their chunks.

Hydration is two statements: :data:`HYDRATE` reads what ranking needs for every fused
candidate, :data:`DETAILS` what a returned memory also shows (tags, metadata, its place in its
document, entity names) for the memories the token cut keeps only.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg import sql

from shared_core.recall.fusion import FusedCandidate
from shared_core.storage.plan import Plan, Query
from shared_core.types import DateGrain, FactType

__all__ = [
    "CHUNKS",
    "DETAILS",
    "FILL",
    "HYDRATE",
    "MEMORY_COLUMNS",
    "MemoryDetails",
    "MemoryRow",
    "chunks_plan",
    "details_plan",
    "fill_plan",
    "hydrate_plan",
    "rows_plan",
]

# What ranking reads of a memory (with its ``similarity``: a :class:`MemoryRow`): the
# reranker, the boosts and the token cut. The semantic arm's statement reads these columns
# of its hits as it ranks them (their rows are read for the ranking anyway), so HYDRATE reads
# only the candidates the other arms alone found.
MEMORY_COLUMNS = """u.id::text AS id, u.text, u.context, u.fact_type, u.occurred_start, u.occurred_end,
       u.mentioned_at, u.date_grain, u.proof_count, u.document_id, u.chunk_id"""

# The fused candidates not hydrated yet (up to ``rerank_max_candidates``). The ids travel as
# text and are cast by the server (no ``uuid.UUID`` per id in Python), in binary (``%(ids)b``):
# psycopg's text form of a list quotes each element after a regex test, 1.4-4.5 us an id
# (~0.3-1 ms for the ~250 ids of a hydration at 100k) against 0.2 us; the server folds the cast
# into the same constant array, so the plan and the rows are the same (measured). Every list
# of ids below travels so.
HYDRATE = (
    """
SELECT """
    + MEMORY_COLUMNS
    + """,
       1 - (u.embedding <=> %(qvec)s) AS similarity
FROM memory_units u
WHERE u.bank_id = %(bank)s AND u.id = ANY(%(ids)b::uuid[])"""
)

# What only a returned memory shows, for the memories recall returns (after the token cut):
# one entity lookup per linked entity and a JSON parse per row cost more than the rest of
# hydration together, and the cut drops about half of the 300 candidates at 100k (measured).
# The read is the function recall_details (migration 0023), whose plan each connection keeps:
# planned anew for ~160 id constants at every recall, it cost 13% more server CPU.
DETAILS = """
SELECT id, tags, metadata, piece, pieces, entities
FROM recall_details(%(bank)s, %(ids)b::uuid[])"""

CHUNKS = """
SELECT chunk_id, text FROM chunks WHERE bank_id = %(bank)s AND chunk_id = ANY(%(ids)b::text[])"""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRow:
    """One row of :data:`HYDRATE`: what ranking a candidate needs."""

    id: str
    text: str
    context: str | None
    fact_type: FactType
    occurred_start: _dt.datetime | None
    occurred_end: _dt.datetime | None
    mentioned_at: _dt.datetime | None
    date_grain: DateGrain | None
    proof_count: int
    document_id: str | None
    chunk_id: str | None
    #: Cosine similarity with the query (None for a memory stored without an embedding).
    similarity: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryDetails:
    """One row of :data:`DETAILS`: what a returned memory shows besides its ranking fields."""

    id: str
    tags: Sequence[str]
    metadata: Mapping[str, Any]
    #: Position of this memory among its document's memories (0-based, creation order).
    piece: int
    #: How many memories the document was stored as (1: stored whole).
    pieces: int
    entities: Sequence[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkRow:
    """One row of :data:`CHUNKS`."""

    chunk_id: str
    text: str


def hydrate_plan(
    bank: str,
    candidates: Sequence[FusedCandidate],
    vector: npt.NDArray[np.float32],
    known: Mapping[str, MemoryRow] | None = None,
) -> Plan[tuple[list[FusedCandidate], dict[str, MemoryRow]]]:
    """The candidates still stored (a concurrent delete may have taken some), with their rows
    and their cosine similarity with the query ``vector`` (every candidate's, not only the
    semantic arm's hits: the learned reranker and the adapters' scores read it). The rows in
    ``known`` (read by an arm's statement) are taken as they are; only the others are read,
    and no statement runs when none is missing."""
    known = known or {}
    by_id = {c.id: known[c.id] for c in candidates if c.id in known}
    by_id.update((yield from rows_plan(bank, [c.id for c in candidates if c.id not in by_id], vector)))
    return [c for c in candidates if c.id in by_id], by_id


def rows_plan(bank: str, ids: Sequence[str], vector: npt.NDArray[np.float32]) -> Plan[dict[str, MemoryRow]]:
    """The :class:`MemoryRow` of the memories ``ids`` still stored (their cosine similarity
    with the query ``vector`` included), by id; no statement for no ids."""
    if not ids:
        return {}
    rows: list[MemoryRow] = yield Query(
        HYDRATE, {"bank": bank, "ids": list(ids), "qvec": vector}, row_type=MemoryRow, binary=True
    )
    return {r.id: r for r in rows}


def details_plan(bank: str, ids: Sequence[str]) -> Plan[dict[str, MemoryDetails]]:
    """The :class:`MemoryDetails` of the memories ``ids`` still stored, by id."""
    if not ids:
        return {}
    rows: list[MemoryDetails] = yield Query(DETAILS, {"bank": bank, "ids": list(ids)}, row_type=MemoryDetails)
    return {r.id: r for r in rows}


# The memories nearest the query that recall did not return (every arm has thresholds), for
# ``k``: a bank holding k memories that pass the filters returns k. Exact order (no index):
# it runs only when recall came back short, and reads at most the filtered bank.
FILL = """
SELECT u.id::text AS id FROM memory_units u
WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[]) AND {where}
  AND u.id <> ALL(%(seen)b::uuid[])
ORDER BY u.embedding <=> %(qvec)s, u.id
LIMIT %(fill)s"""


@dataclass(frozen=True, slots=True, kw_only=True)
class IdRow:
    id: str


def fill_plan(
    where: sql.Composable, params: Mapping[str, Any], seen: Sequence[str], count: int
) -> Plan[list[MemoryRow]]:
    """Up to ``count`` more memories, nearest the query first, passing ``where`` (the arms'
    tag and metadata filter, whose parameters are in ``params``), none of ``seen``."""
    found: list[IdRow] = yield Query(
        sql.SQL(FILL).format(where=where),
        {**params, "seen": list(seen), "fill": count},
        row_type=IdRow,
    )
    if not found:
        return []
    rows: list[MemoryRow] = yield Query(
        HYDRATE,
        {"bank": params["bank"], "ids": [r.id for r in found], "qvec": params["qvec"]},
        row_type=MemoryRow,
        binary=True,
    )
    by_id = {r.id: r for r in rows}
    return [by_id[r.id] for r in found if r.id in by_id]


def chunks_plan(bank: str, chunk_ids: Sequence[str]) -> Plan[dict[str, str]]:
    """The text of each chunk still stored, by id, in ``chunk_ids`` order."""
    if not chunk_ids:
        return {}
    rows: list[ChunkRow] = yield Query(CHUNKS, {"bank": bank, "ids": list(chunk_ids)}, row_type=ChunkRow)
    text_by_chunk = {r.chunk_id: r.text for r in rows}
    return {c: text_by_chunk[c] for c in chunk_ids if c in text_by_chunk}
