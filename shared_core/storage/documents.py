"""Documents by the id their user gave them: read, delete, and the stored vectors of memories.

A retained item with a ``document_id`` (a LangChain ``Document.id``, a LlamaIndex node id) is a
document: one memory, or several passages when it was longer than ``unit_max_tokens``. These
plans serve the frameworks' ``get_by_ids`` / ``delete(ids)``; an id that names no document is
tried as a memory id, so memories retained without one can be read and deleted too.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from shared_core.errors import ConfigurationError
from shared_core.storable import text_problem
from shared_core.storage.locks import LOCK_BANK_STATS
from shared_core.storage.plan import Plan, Query
from shared_core.storage.queries import CountRow

__all__ = ["StoredDocument", "delete_documents_plan", "get_documents_plan", "vectors_plan"]

# Passages in retain order (ids are UUIDv7: time-ordered); a split document also has its whole
# text as a chunk.
GET_DOCUMENTS = """
SELECT coalesce(u.document_id, u.id::text) AS key, u.text, u.metadata, c.text AS chunk
FROM memory_units u
LEFT JOIN chunks c ON c.bank_id = u.bank_id AND c.chunk_id = u.chunk_id
WHERE u.bank_id = %(bank)s
  AND (u.document_id = ANY(%(ids)s::text[]) OR u.id = ANY(%(uuids)s::uuid[]))
ORDER BY u.id"""

# Deleting a document cascades to its memories, chunks, links and entity mentions.
DELETE_DOCUMENTS = """
WITH gone AS (
    DELETE FROM documents WHERE bank_id = %(bank)s AND document_id = ANY(%(ids)s::text[])
    RETURNING document_id
)
SELECT count(*) AS n FROM memory_units u JOIN gone g ON u.document_id = g.document_id
WHERE u.bank_id = %(bank)s"""
DELETE_MEMORIES = """
DELETE FROM memory_units WHERE bank_id = %(bank)s AND id = ANY(%(uuids)s::uuid[])"""

VECTORS = """
SELECT id::text AS id, embedding FROM memory_units
WHERE bank_id = %(bank)s AND id = ANY(%(uuids)s::uuid[])"""


@dataclass(frozen=True, slots=True, kw_only=True)
class _PassageRow:
    """One row of :data:`GET_DOCUMENTS`."""

    key: str
    text: str
    metadata: Mapping[str, Any]
    chunk: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class _VectorRow:
    """One row of :data:`VECTORS`."""

    id: str
    embedding: Any  # pgvector's numpy array (or a list, without the type registered)


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredDocument:
    """A document as its user added it: its id, whole text and metadata."""

    id: str
    text: str
    metadata: Mapping[str, Any]


def check_ids(ids: Sequence[str]) -> list[str]:
    """``ids`` as a list of non-empty strings Postgres can store, or a typed error naming the
    first bad one (before any statement runs: a NUL reached the server as a refused call).

    >>> check_ids(["a", 5])
    Traceback (most recent call last):
    ...
    shared_core.errors.ConfigurationError: ids[1]: ids must be non-empty strings, got 5
    """
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        raise ConfigurationError(f"ids must be a list of ids, got {type(ids).__name__}")
    texts = []
    for i, value in enumerate(ids):
        if not isinstance(value, str) or not value:
            raise ConfigurationError(f"ids[{i}]: ids must be non-empty strings, got {value!r}")
        problem = text_problem(value)
        if problem is not None:
            raise ConfigurationError(f"ids[{i}] {problem}")
        texts.append(value)
    return texts


def _ids(ids: Sequence[str]) -> tuple[list[str], list[uuid.UUID]]:
    texts = check_ids(ids)
    uuids = []
    for value in texts:
        try:
            uuids.append(uuid.UUID(value))
        except ValueError:
            continue
    return texts, uuids


def get_documents_plan(bank: str, ids: Sequence[str]) -> Plan[list[StoredDocument]]:
    """The documents (or memories) with these ids, in the order asked; missing ids are
    skipped, as LangChain's ``get_by_ids`` does."""
    texts, uuids = _ids(ids)
    if not texts:
        return []
    rows: list[_PassageRow] = yield Query(
        GET_DOCUMENTS, {"bank": bank, "ids": texts, "uuids": uuids}, row_type=_PassageRow
    )
    found: dict[str, list[_PassageRow]] = {}
    for row in rows:
        found.setdefault(row.key, []).append(row)
    out = []
    for key in dict.fromkeys(texts):
        parts = found.get(key)
        if not parts:
            continue
        text = parts[0].chunk if parts[0].chunk is not None else " ".join(p.text for p in parts)
        out.append(StoredDocument(id=key, text=text, metadata=parts[0].metadata))
    return out


def delete_documents_plan(bank: str, ids: Sequence[str]) -> Plan[int]:
    """Delete the documents (or memories) with these ids; return how many memories went."""
    texts, uuids = _ids(ids)
    if not texts:
        return 0
    yield Query(LOCK_BANK_STATS, {"bank": bank}, fetch="none")
    row: CountRow | None = yield Query(
        DELETE_DOCUMENTS, {"bank": bank, "ids": texts}, fetch="one", row_type=CountRow
    )
    count = row.n if row else 0
    if uuids:
        count += yield Query(DELETE_MEMORIES, {"bank": bank, "uuids": uuids}, fetch="none")
    return count


def vectors_plan(bank: str, memory_ids: Sequence[str]) -> Plan[dict[str, npt.NDArray[np.float32]]]:
    """The stored embeddings of these memories (e.g. for maximal marginal relevance)."""
    _, uuids = _ids(memory_ids)
    if not uuids:
        return {}
    rows: list[_VectorRow] = yield Query(VECTORS, {"bank": bank, "uuids": uuids}, row_type=_VectorRow)
    return {r.id: np.asarray(r.embedding, dtype=np.float32) for r in rows}
