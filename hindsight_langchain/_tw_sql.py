"""SQL and plans of the time-weighted retriever (sans-I/O: run with ``engine.run``/``arun``).

A memory belongs to the *memory stream* of its bank once its metadata carries an integer
``buffer_idx`` (its position in the stream, as in LangChain's retriever). Rows being written
carry ``__tw_pending`` (their index inside the add call) until the add's transaction assigns
the final indexes under a per-bank advisory lock.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg import sql

from shared_core.storage.plan import Plan, Query

__all__ = [
    "LOCK",
    "Query",
    "adopt_plan",
    "finalise_plan",
    "load_stream_plan",
    "recent_plan",
    "rows_by_id_plan",
    "salient_plan",
    "touch_plan",
]

_IDX = sql.SQL("(u.metadata->>'buffer_idx')::bigint")

_COLUMNS = sql.SQL("""
    u.id::text AS id, {idx} AS buffer_idx, coalesce(c.text, u.text) AS page_content,
    u.chunk_id, u.metadata, u.created_at, u.last_accessed_at""").format(idx=_IDX)

_FROM = sql.SQL("""
FROM memory_units u
LEFT JOIN chunks c ON c.bank_id = u.bank_id AND c.chunk_id = u.chunk_id
WHERE u.bank_id = %(bank)s AND u.metadata ? 'buffer_idx'""")

_PARTS = {"idx": _IDX, "columns": _COLUMNS, "from_": _FROM}

LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%(key)s, 0)) AS locked"

NEXT_IDX = sql.SQL("""
SELECT coalesce(max({idx}) + 1, 0) AS base
FROM memory_units u WHERE u.bank_id = %(bank)s AND u.metadata ? 'buffer_idx'""").format(**_PARTS)

# One row per stream entry (a long document split into several units is one entry).
RECENT = sql.SQL("""
SELECT DISTINCT ON ({idx}) {columns}
{from_}
ORDER BY {idx} DESC, u.id
LIMIT %(k)s""").format(**_PARTS)

LOAD_STREAM = sql.SQL("""
SELECT DISTINCT ON ({idx}) {columns}
{from_} AND {idx} >= %(start)s
ORDER BY {idx}, u.id""").format(**_PARTS)

# Exact cosine top-k: the ORDER BY does not match the HNSW operator, so Postgres scans the
# bank's rows (index on bank_id) and sorts, as a flat in-memory store would.
SALIENT_EXACT = sql.SQL("""
SELECT * FROM (
    SELECT DISTINCT ON ({idx}) {columns},
           1 - (u.embedding <=> %(q)s::vector) AS relevance
    {from_} AND u.metadata @> %(filter)s::jsonb
    ORDER BY {idx}, u.embedding <=> %(q)s::vector, u.id
) d
WHERE %(threshold)s::float8 IS NULL OR d.relevance >= %(threshold)s::float8
ORDER BY d.relevance DESC, d.buffer_idx
LIMIT %(k)s""").format(**_PARTS)

# Approximate top-k through the HNSW index (iterative scans keep the bank filter exact).
SALIENT_ANN = sql.SQL("""
SELECT * FROM (
    SELECT {columns}, 1 - (u.embedding <=> %(q)s::vector) AS relevance
    {from_} AND u.metadata @> %(filter)s::jsonb
    ORDER BY u.embedding <=> %(q)s::vector
    LIMIT %(k)s
) d
WHERE %(threshold)s::float8 IS NULL OR d.relevance >= %(threshold)s::float8
ORDER BY d.relevance DESC, d.buffer_idx""").format(**_PARTS)

ROWS_BY_ID = sql.SQL("""
SELECT {columns}
FROM memory_units u
LEFT JOIN chunks c ON c.bank_id = u.bank_id AND c.chunk_id = u.chunk_id
WHERE u.bank_id = %(bank)s AND u.id = ANY(%(ids)s::uuid[])""").format(**_PARTS)

FINALISE = """
UPDATE memory_units u
SET metadata = (u.metadata - '__tw_pending')
               || jsonb_build_object('buffer_idx', %(base)s::bigint + v.rel),
    last_accessed_at = v.la,
    created_at = v.ca
FROM unnest(%(rel)s::bigint[], %(la)s::timestamptz[], %(ca)s::timestamptz[]) AS v(rel, la, ca)
WHERE u.bank_id = %(bank)s AND u.id = ANY(%(ids)s::uuid[])
  AND (u.metadata->>'__tw_pending')::bigint = v.rel
RETURNING u.id::text AS id, v.rel AS rel, u.chunk_id"""

SET_CHUNK_EMBEDDING = """
UPDATE memory_units SET embedding = %(v)s::vector
WHERE bank_id = %(bank)s AND chunk_id = %(chunk)s"""

# Memories retained by other means (engine.retain, HindsightRetriever.add_documents) join the
# stream in creation order (ids are UUIDv7).
ADOPT = sql.SQL("""
WITH base AS (
    SELECT coalesce(max({idx}) + 1, 0) AS b
    FROM memory_units u WHERE u.bank_id = %(bank)s AND u.metadata ? 'buffer_idx'
), todo AS (
    SELECT id, row_number() OVER (ORDER BY id) - 1 AS rn
    FROM memory_units
    WHERE bank_id = %(bank)s AND NOT (metadata ? 'buffer_idx') AND NOT (metadata ? '__tw_pending')
)
UPDATE memory_units u
SET metadata = u.metadata || jsonb_build_object('buffer_idx', base.b + todo.rn),
    last_accessed_at = coalesce(u.last_accessed_at, u.created_at)
FROM base, todo
WHERE u.bank_id = %(bank)s AND u.id = todo.id""").format(**_PARTS)

TOUCH_IDS = """
UPDATE memory_units SET last_accessed_at = %(now)s
WHERE bank_id = %(bank)s AND id = ANY(%(ids)s::uuid[])"""

TOUCH_CHUNKS = """
UPDATE memory_units SET last_accessed_at = %(now)s
WHERE bank_id = %(bank)s AND chunk_id = ANY(%(chunks)s::text[])"""

TOUCH_IDX = sql.SQL("""
UPDATE memory_units u SET last_accessed_at = %(now)s
WHERE u.bank_id = %(bank)s AND u.metadata ? 'buffer_idx'
  AND {idx} = ANY(%(idx)s::bigint[])""").format(**_PARTS)


def lock_key(bank: str) -> str:
    return f"hindsight-time-weighted:{bank}"


def recent_plan(bank: str, k: int | None) -> Plan[list[dict[str, Any]]]:
    """The last ``k`` stream entries (all when ``k`` is None), oldest first."""
    rows: list[dict[str, Any]] = yield Query(RECENT, {"bank": bank, "k": k})
    rows.reverse()
    return rows


def load_stream_plan(bank: str, start: int) -> Plan[list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = yield Query(LOAD_STREAM, {"bank": bank, "start": start})
    return rows


def salient_plan(bank: str, vector: npt.NDArray[np.float32], k: int, *, exact: bool,
                 filter_json: str, threshold: float | None) -> Plan[list[dict[str, Any]]]:
    """Top ``k`` stream entries by cosine relevance (1 - distance), best first."""
    params = {"bank": bank, "q": vector, "k": k, "filter": filter_json, "threshold": threshold}
    rows: list[dict[str, Any]] = yield Query(SALIENT_EXACT if exact else SALIENT_ANN, params)
    if not exact:
        seen: set[int] = set()
        unique = []
        for row in rows:
            if row["buffer_idx"] not in seen:
                seen.add(row["buffer_idx"])
                unique.append(row)
        rows = unique
    return rows


def rows_by_id_plan(bank: str, ids: Sequence[str]) -> Plan[list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = yield Query(ROWS_BY_ID, {"bank": bank, "ids": list(ids)})
    return rows


def finalise_plan(bank: str, ids: Sequence[str], la: Sequence[datetime.datetime],
                  ca: Sequence[datetime.datetime],
                  chunk_vectors: Callable[[int], npt.NDArray[np.float32] | None],
                  *, lock: bool = True) -> Plan[tuple[int, list[str]]]:
    """Give freshly retained rows their stream indexes; return (base index, one id per item)."""
    if lock:
        yield Query(LOCK, {"key": lock_key(bank)}, fetch="one")
    row = yield Query(NEXT_IDX, {"bank": bank}, fetch="one")
    base = int(row["base"])
    rows: list[dict[str, Any]] = yield Query(FINALISE, {
        "bank": bank, "base": base, "rel": list(range(len(la))), "la": list(la),
        "ca": list(ca), "ids": list(ids)})
    rel_of = {r["id"]: int(r["rel"]) for r in rows}
    first: dict[int, str] = {}
    for memory_id in ids:
        rel = rel_of.get(memory_id)
        if rel is not None and rel not in first:
            first[rel] = memory_id
    split = {int(r["rel"]): r["chunk_id"] for r in rows if r["chunk_id"] is not None}
    for rel, chunk in split.items():
        vector = chunk_vectors(rel)
        if vector is not None:
            yield Query(SET_CHUNK_EMBEDDING, {"bank": bank, "chunk": chunk, "v": vector},
                        fetch="none")
    return base, [first[i] for i in range(len(la))]


def adopt_plan(bank: str) -> Plan[int]:
    yield Query(LOCK, {"key": lock_key(bank)}, fetch="one")
    count: int = yield Query(ADOPT, {"bank": bank}, fetch="none")
    return count


def touch_plan(bank: str, now: datetime.datetime, ids: Sequence[str], chunks: Sequence[str],
               idx: Sequence[int]) -> Plan[None]:
    """Set ``last_accessed_at = now`` (a Python value, so ``mock_now`` applies)."""
    if ids:
        yield Query(TOUCH_IDS, {"bank": bank, "now": now, "ids": list(ids)}, fetch="none")
    if chunks:
        yield Query(TOUCH_CHUNKS, {"bank": bank, "now": now, "chunks": list(chunks)},
                    fetch="none")
    if idx:
        yield Query(TOUCH_IDX, {"bank": bank, "now": now, "idx": list(idx)}, fetch="none")
