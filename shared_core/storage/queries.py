"""Plans for reading and deleting stored memories (everything but retain and recall)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shared_core.errors import ConfigurationError, check_bank_embedder
from shared_core.storable import text_problem
from shared_core.storage.locks import LOCK_BANK_STATS
from shared_core.storage.plan import Plan, Query
from shared_core.types import BankInfo, BankStats, MemoryRecord

__all__ = [
    "BANK_EMBEDDER",
    "BankEmbedder",
    "CountRow",
    "bank_embedder_plan",
    "bank_embedder_query",
    "banks_plan",
    "delete_plan",
    "get_plan",
    "parse_ids",
    "stats_plan",
]

GET_UNIT = """
SELECT u.id::text AS id, u.bank_id AS bank, u.text, u.context, u.fact_type, u.occurred_start,
       u.occurred_end, u.mentioned_at, u.date_grain, u.created_at, u.updated_at,
       u.last_accessed_at, u.tags, u.metadata, u.proof_count, u.document_id, u.chunk_id,
       coalesce((SELECT array_agg(e.canonical_name ORDER BY e.canonical_name)
                 FROM unit_entities ue JOIN entities e
                   ON e.bank_id = ue.bank_id AND e.id = ue.entity_id
                 WHERE ue.bank_id = u.bank_id AND ue.unit_id = u.id), '{}') AS entities
FROM memory_units u
WHERE u.bank_id = %(bank)s AND u.id = %(id)s"""

DELETE_UNITS = """
DELETE FROM memory_units WHERE bank_id = %(bank)s AND id = ANY(%(ids)s)"""


@dataclass(frozen=True, slots=True, kw_only=True)
class CountRow:
    """A ``SELECT count(*) AS n`` row."""

    n: int


# Deleting the document cascades to its units, chunks, links and entity mentions.
COUNT_DOCUMENT_UNITS = """
SELECT count(*) AS n FROM memory_units WHERE bank_id = %(bank)s AND document_id = %(document_id)s"""
DELETE_DOCUMENT = """
DELETE FROM documents WHERE bank_id = %(bank)s AND document_id = %(document_id)s"""

LIST_BANKS = """
SELECT b.bank_id AS bank, b.embedding_model, b.embedding_dimension, b.created_at,
       (SELECT count(*) FROM memory_units u WHERE u.bank_id = b.bank_id) AS memory_count
FROM banks b ORDER BY b.bank_id"""

BANK_STATS = """
SELECT
  (SELECT coalesce(jsonb_object_agg(fact_type, n), '{}') FROM (
      SELECT fact_type, count(*) AS n FROM memory_units WHERE bank_id = %(bank)s
      GROUP BY fact_type) t) AS memories_by_type,
  (SELECT count(*) FROM documents WHERE bank_id = %(bank)s) AS documents,
  (SELECT count(*) FROM chunks WHERE bank_id = %(bank)s) AS chunks,
  (SELECT count(*) FROM entities WHERE bank_id = %(bank)s) AS entities,
  (SELECT coalesce(jsonb_object_agg(link_type, n), '{}') FROM (
      SELECT link_type, count(*) AS n FROM memory_links WHERE bank_id = %(bank)s
      GROUP BY link_type) t) AS links_by_type"""


@dataclass(frozen=True, slots=True, kw_only=True)
class _StatsRow:
    """One row of :data:`BANK_STATS`."""

    memories_by_type: Mapping[str, int]
    documents: int
    chunks: int
    entities: int
    links_by_type: Mapping[str, int]


BANK_EMBEDDER = """
SELECT embedding_model, embedding_dimension FROM banks WHERE bank_id = %(bank)s"""


@dataclass(frozen=True, slots=True, kw_only=True)
class BankEmbedder:
    """The embedding model and dimension a bank was created with (a row of
    :data:`BANK_EMBEDDER`)."""

    embedding_model: str
    embedding_dimension: int

    def check(self, bank: str, model: str, dimension: int) -> None:
        """Raise the typed error naming both when ``model`` / ``dimension`` are not the bank's.

        >>> BankEmbedder(embedding_model="m", embedding_dimension=3).check("b", "m", 3)
        """
        check_bank_embedder(bank, self.embedding_model, self.embedding_dimension, model, dimension)


def parse_ids(ids: Sequence[str]) -> list[uuid.UUID]:
    """Memory ids as UUIDs; a malformed id is a caller error, named."""
    if isinstance(ids, str | bytes) or not isinstance(ids, Iterable):
        raise ConfigurationError(f"ids must be a sequence of memory ids, got {type(ids).__name__}")
    out = []
    for i, value in enumerate(ids):
        # Not str(value) of anything: an int of 32 digits would parse as a UUID, and a
        # caller's None or int is a mistake to name, not an id that is merely not found.
        if not isinstance(value, str | uuid.UUID):
            raise ConfigurationError(
                f"ids[{i}]: a memory id is a string (a UUID), got {type(value).__name__}"
            )
        try:
            out.append(uuid.UUID(str(value)))
        except ValueError as exc:
            raise ConfigurationError(f"ids[{i}]: {value!r} is not a memory id (a UUID)") from exc
    return out


def _record(*, tags: Sequence[str], entities: Sequence[str], **fields: Any) -> MemoryRecord:
    """A row of :data:`GET_UNIT` as the record ``engine.get`` returns."""
    return MemoryRecord(tags=tuple(tags), entities=tuple(entities), **fields)


def get_plan(bank: str, memory_id: str) -> Plan[MemoryRecord | None]:
    try:
        key = uuid.UUID(str(memory_id))
    except ValueError:
        return None
    row: MemoryRecord | None = yield Query(GET_UNIT, {"bank": bank, "id": key}, fetch="one", row_type=_record)
    return row


def delete_plan(bank: str, ids: Sequence[str] | None, document_id: str | None) -> Plan[int]:
    if (ids is None) == (document_id is None):
        raise ConfigurationError("delete needs either ids or document_id")
    parsed = parse_ids(ids) if ids is not None else None  # checked before anything runs
    if document_id is not None:
        # Else a NUL or an int reached the server as a refused call, a surrogate psycopg's encoder.
        problem = (
            text_problem(document_id)
            if isinstance(document_id, str)
            else f"must be a string, got {type(document_id).__name__}"
        )
        if problem is not None:
            raise ConfigurationError(f"document_id {problem}")
    yield Query(LOCK_BANK_STATS, {"bank": bank}, fetch="none")
    if parsed is not None:
        count: int = yield Query(DELETE_UNITS, {"bank": bank, "ids": parsed}, fetch="none")
        return count
    row: CountRow = yield Query(
        COUNT_DOCUMENT_UNITS, {"bank": bank, "document_id": document_id}, fetch="one", row_type=CountRow
    )
    yield Query(DELETE_DOCUMENT, {"bank": bank, "document_id": document_id}, fetch="none")
    return row.n


def banks_plan() -> Plan[list[BankInfo]]:
    rows: list[BankInfo] = yield Query(LIST_BANKS, row_type=BankInfo)
    return rows


def stats_plan(bank: str) -> Plan[BankStats]:
    row: _StatsRow = yield Query(BANK_STATS, {"bank": bank}, fetch="one", row_type=_StatsRow)
    by_type = {k: int(v) for k, v in row.memories_by_type.items()}
    return BankStats(
        bank=bank,
        memories=sum(by_type.values()),
        memories_by_type=by_type,
        documents=row.documents,
        chunks=row.chunks,
        entities=row.entities,
        links_by_type={k: int(v) for k, v in row.links_by_type.items()},
    )


def bank_embedder_query(bank: str) -> Query:
    """The :data:`BANK_EMBEDDER` statement of ``bank`` (one :class:`BankEmbedder` or None)."""
    return Query(BANK_EMBEDDER, {"bank": bank}, fetch="one", row_type=BankEmbedder)


def bank_embedder_plan(bank: str) -> Plan[BankEmbedder | None]:
    """The model and dimension ``bank`` was created with (None: no such bank yet)."""
    row: BankEmbedder | None = yield bank_embedder_query(bank)
    return row
