"""Plans for reading and deleting stored memories (everything but retain and recall)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from shared_core.errors import ConfigurationError
from shared_core.storage.locks import LOCK_BANK_STATS
from shared_core.storage.plan import Plan, Query
from shared_core.types import MemoryRecord

__all__ = ["banks_plan", "delete_plan", "get_plan", "parse_ids", "stats_plan"]

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


def parse_ids(ids: Sequence[str]) -> list[uuid.UUID]:
    """Memory ids as UUIDs; a malformed id is a caller error, named."""
    if isinstance(ids, str):
        raise ConfigurationError("ids must be a sequence of memory ids, not one string")
    out = []
    for value in ids:
        try:
            out.append(uuid.UUID(str(value)))
        except ValueError as exc:
            raise ConfigurationError(f"{value!r} is not a memory id (a UUID)") from exc
    return out


def get_plan(bank: str, memory_id: str) -> Plan[MemoryRecord | None]:
    try:
        key = uuid.UUID(str(memory_id))
    except ValueError:
        return None
    row = yield Query(GET_UNIT, {"bank": bank, "id": key}, fetch="one")
    if row is None:
        return None
    row["tags"] = tuple(row["tags"])
    row["entities"] = tuple(row["entities"])
    return MemoryRecord(**row)


def delete_plan(bank: str, ids: Sequence[str] | None, document_id: str | None) -> Plan[int]:
    if (ids is None) == (document_id is None):
        raise ConfigurationError("delete needs either ids or document_id")
    yield Query(LOCK_BANK_STATS, {"bank": bank}, fetch="none")
    if ids is not None:
        count: int = yield Query(DELETE_UNITS, {"bank": bank, "ids": parse_ids(ids)}, fetch="none")
        return count
    row = yield Query(COUNT_DOCUMENT_UNITS, {"bank": bank, "document_id": document_id}, fetch="one")
    yield Query(DELETE_DOCUMENT, {"bank": bank, "document_id": document_id}, fetch="none")
    return int(row["n"])


def banks_plan() -> Plan[list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = yield Query(LIST_BANKS)
    return rows


def stats_plan(bank: str) -> Plan[dict[str, Any]]:
    row = yield Query(BANK_STATS, {"bank": bank}, fetch="one")
    by_type = {k: int(v) for k, v in row["memories_by_type"].items()}
    return {
        "bank": bank,
        "memories": sum(by_type.values()),
        "memories_by_type": by_type,
        "documents": int(row["documents"]),
        "chunks": int(row["chunks"]),
        "entities": int(row["entities"]),
        "links_by_type": {k: int(v) for k, v in row["links_by_type"].items()},
    }
