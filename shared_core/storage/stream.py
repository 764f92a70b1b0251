"""The memory stream: a bank's memories in the order they were added, with access times.

This is what recency-weighted retrieval (LangChain's ``TimeWeightedVectorStoreRetriever`` and
our drop-in for it) needs from the database: append in order, the last ``k`` entries, the
nearest entries under a chosen distance, and "accessed now" updates. Positions live in
``memory_units.stream_idx`` (migration 0005); a memory split into several units at retain
shares one position. Every method is a sans-I/O plan run by the engine, with an async twin.

>>> stream = engine.stream("agent")  # doctest: +SKIP
>>> stream.append(["Alice joined Google."]).indexes  # doctest: +SKIP
[0]
>>> [e.text for e in stream.recent(1)]  # doctest: +SKIP
['Alice joined Google.']
>>> stream.touch([0], at=datetime.now(UTC))  # doctest: +SKIP
1
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import socket
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

import numpy as np
import numpy.typing as npt
from psycopg import sql

from shared_core.errors import ConfigurationError, HindsightError
from shared_core.storage.locks import LOCK_BANK_STATS
from shared_core.storage.plan import Plan, Query
from shared_core.storage.queries import bank_embedder_plan
from shared_core.types import MemoryItem

if TYPE_CHECKING:
    from shared_core.engine import MemoryEngine

__all__ = ["EPHEMERAL_PREFIX", "MemoryStream", "Metric", "StreamAppend", "StreamEntry"]

Metric = Literal[
    "cosine_similarity", "cosine_distance", "l2", "l2_squared", "inner_product", "negative_inner_product"
]
"""What ``search`` ranks by and returns as ``distance``, computed with pgvector's operator:
``cosine_similarity`` = 1 - (a <=> b) (InMemoryVectorStore), ``cosine_distance`` = a <=> b
(Chroma "cosine", PGVector), ``l2`` = a <-> b (PGVector), ``l2_squared`` = (a <-> b)² (FAISS
``IndexFlatL2``, Chroma "l2"), ``inner_product`` = a·b (FAISS ``IndexFlatIP``),
``negative_inner_product`` = a <#> b = -a·b."""

METRICS: Final = frozenset(get_args(Metric))
EPHEMERAL_PREFIX: Final = "~stream-"
_PENDING: Final = "__stream_pending"
_UNIT_NORM_TOLERANCE: Final = 1e-6

# (SQL expression over a and b, whether larger is nearer)
_DISTANCE: Final[dict[str, tuple[str, bool]]] = {
    "cosine_similarity": ("1 - ({a} <=> {b})", True),
    "cosine_distance": ("{a} <=> {b}", False),
    "l2": ("{a} <-> {b}", False),
    "l2_squared": ("({a} <-> {b}) ^ 2", False),
    "inner_product": ("({a} <#> {b}) * -1", True),
    "negative_inner_product": ("{a} <#> {b}", False),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamEntry:
    """One position of a stream. ``text`` is the whole memory (its chunk when retain split
    it); ``distance`` is set by :meth:`MemoryStream.search`."""

    index: int
    memory_id: str
    text: str
    metadata: dict[str, Any]
    created_at: _dt.datetime
    last_accessed_at: _dt.datetime
    chunk_id: str | None = None
    distance: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamAppend:
    """What :meth:`MemoryStream.append` wrote: positions ``base, base + 1, ...`` and the first
    memory id of each appended item."""

    base: int
    memory_ids: tuple[str, ...]

    @property
    def indexes(self) -> list[int]:
        return list(range(self.base, self.base + len(self.memory_ids)))


# ---------------------------------------------------------------------------------- SQL
LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%(key)s, 0)) AS locked"

_COLUMNS = sql.SQL("""
    u.stream_idx AS index, u.id::text AS memory_id, coalesce(c.text, u.text) AS text,
    u.chunk_id, u.metadata, u.created_at, coalesce(u.last_accessed_at, u.created_at)
    AS last_accessed_at""")

_FROM = sql.SQL("""
FROM memory_units u
LEFT JOIN chunks c ON c.bank_id = u.bank_id AND c.chunk_id = u.chunk_id
WHERE u.bank_id = %(bank)s AND u.stream_idx IS NOT NULL""")

NEXT_INDEX = """
SELECT coalesce(max(stream_idx) + 1, 0) AS base
FROM memory_units WHERE bank_id = %(bank)s AND stream_idx IS NOT NULL"""

# One row per position (a split memory is one entry).
RECENT = sql.SQL("""
SELECT DISTINCT ON (u.stream_idx) {columns}
{from_}
ORDER BY u.stream_idx DESC, u.id
LIMIT %(k)s""").format(columns=_COLUMNS, from_=_FROM)

ENTRIES = sql.SQL("""
SELECT DISTINCT ON (u.stream_idx) {columns}
{from_} AND u.stream_idx >= %(start)s
ORDER BY u.stream_idx, u.id""").format(columns=_COLUMNS, from_=_FROM)

BY_IDS = sql.SQL("""
SELECT {columns}
{from_} AND u.id = ANY(%(ids)s::uuid[])""").format(columns=_COLUMNS, from_=_FROM)

# Exact nearest entries (as a flat index): the distance is materialised before the ORDER BY,
# so no approximate vector index can answer it.
_SEARCH = """
WITH scored AS MATERIALIZED (
    SELECT DISTINCT ON (u.stream_idx) {columns}, {distance} AS distance
    {from_} AND u.metadata @> %(filter)s::jsonb
    ORDER BY u.stream_idx, {distance} {direction}, u.id
)
SELECT * FROM scored ORDER BY distance {direction}, index LIMIT %(k)s"""

FINALISE = """
UPDATE memory_units u
SET metadata = u.metadata - '__stream_pending', stream_idx = %(base)s::bigint + v.rel,
    last_accessed_at = v.la, created_at = v.ca
FROM unnest(%(rel)s::bigint[], %(la)s::timestamptz[], %(ca)s::timestamptz[]) AS v(rel, la, ca)
WHERE u.bank_id = %(bank)s AND u.id = ANY(%(ids)s::uuid[])
  AND (u.metadata->>'__stream_pending')::bigint = v.rel
RETURNING u.id::text AS memory_id, v.rel AS rel, u.chunk_id"""

# The entry's own vector (the model's, un-normalised, for the whole text) on all its units.
SET_VECTOR = """
UPDATE memory_units SET embedding = %(v)s::vector
WHERE bank_id = %(bank)s AND stream_idx = %(idx)s"""

# Memories retained by other means join the stream in creation order (ids are UUIDv7).
ADOPT = """
WITH base AS (
    SELECT coalesce(max(stream_idx) + 1, 0) AS b
    FROM memory_units WHERE bank_id = %(bank)s AND stream_idx IS NOT NULL
), todo AS (
    SELECT id, coalesce(chunk_id, id::text) AS entry
    FROM memory_units
    WHERE bank_id = %(bank)s AND stream_idx IS NULL AND NOT (metadata ? '__stream_pending')
), entries AS (
    SELECT entry, row_number() OVER (ORDER BY min(id::text)) - 1 AS rn FROM todo GROUP BY entry
)
UPDATE memory_units u
SET stream_idx = base.b + e.rn, last_accessed_at = coalesce(u.last_accessed_at, u.created_at)
FROM base, todo t JOIN entries e USING (entry)
WHERE u.bank_id = %(bank)s AND u.id = t.id"""

TOUCH = """
UPDATE memory_units SET last_accessed_at = %(at)s
WHERE bank_id = %(bank)s AND stream_idx = ANY(%(idx)s::bigint[])"""

MARK_EPHEMERAL = """
UPDATE banks SET config = config || jsonb_build_object('ephemeral', %(owner)s::jsonb)
WHERE bank_id = %(bank)s AND NOT (config ? 'ephemeral')"""

EPHEMERAL_BANKS = """
SELECT bank_id, config->'ephemeral' AS owner FROM banks WHERE config ? 'ephemeral'"""

DROP_BANK = "DELETE FROM banks WHERE bank_id = %(bank)s"

DELETE_ENTRIES = """
DELETE FROM memory_units WHERE bank_id = %(bank)s AND stream_idx = ANY(%(idx)s::bigint[])"""


def search_statement(metric: str, *, normalise: bool) -> sql.Composed:
    """The exact search for ``metric`` (``normalise``: compare unit vectors, as a FAISS store
    built with ``normalize_L2=True``)."""
    if metric not in METRICS:
        raise ConfigurationError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
    template, larger_nearer = _DISTANCE[metric]
    a, b = (
        ("l2_normalize(u.embedding)", "l2_normalize(%(q)s::vector)")
        if normalise
        else ("u.embedding", "%(q)s::vector")
    )
    distance = sql.SQL(template.format(a=a, b=b))
    return sql.SQL(_SEARCH).format(
        columns=_COLUMNS,
        from_=_FROM,
        distance=distance,
        direction=sql.SQL("DESC" if larger_nearer else "ASC"),
    )


def _entry(
    *, index: int, metadata: Mapping[str, Any], distance: float | None = None, **fields: Any
) -> StreamEntry:
    """A row of :data:`RECENT`, :data:`ENTRIES`, :data:`BY_IDS` or a search as an entry."""
    return StreamEntry(
        index=int(index),
        metadata=dict(metadata),
        distance=float(distance) if distance is not None else None,
        **fields,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _FinalisedRow:
    """One row of :data:`FINALISE`."""

    memory_id: str
    rel: int
    chunk_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class _EphemeralRow:
    """One row of :data:`EPHEMERAL_BANKS`."""

    bank_id: str
    owner: Any  # the JSON this module wrote: {"host", "pid"}, unless edited by hand


@dataclass(frozen=True, slots=True, kw_only=True)
class _BaseRow:
    base: int


def _lock_key(bank: str) -> str:
    return f"hindsight-stream:{bank}"


def _owner() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid()}


def _alive(owner: Mapping[str, Any]) -> bool:
    if owner.get("host") != socket.gethostname():
        return True  # another machine's: not ours to judge
    try:
        os.kill(int(owner.get("pid", 0)), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, OverflowError):
        return True
    return True


# ---------------------------------------------------------------------------------- plans
def recent_plan(bank: str, k: int) -> Plan[list[StreamEntry]]:
    """The last ``k`` entries, oldest first."""
    rows: list[StreamEntry] = yield Query(RECENT, {"bank": bank, "k": k}, row_type=_entry)
    return rows[::-1]


def entries_plan(bank: str, start: int) -> Plan[list[StreamEntry]]:
    rows: list[StreamEntry] = yield Query(ENTRIES, {"bank": bank, "start": start}, row_type=_entry)
    return rows


def by_ids_plan(bank: str, ids: Sequence[str]) -> Plan[list[StreamEntry]]:
    params = {"bank": bank, "ids": [str(i) for i in ids]}
    rows: list[StreamEntry] = yield Query(BY_IDS, params, row_type=_entry)
    return rows


def search_plan(
    bank: str, vector: npt.NDArray[np.float32], *, k: int, metric: str, normalise: bool, filter_json: str
) -> Plan[list[StreamEntry]]:
    rows: list[StreamEntry] = yield Query(
        search_statement(metric, normalise=normalise),
        {"bank": bank, "q": vector, "k": k, "filter": filter_json},
        row_type=_entry,
    )
    return rows


def touch_plan(bank: str, indexes: Sequence[int], at: _dt.datetime) -> Plan[int]:
    if not indexes:
        return 0
    count: int = yield Query(TOUCH, {"bank": bank, "at": at, "idx": list(indexes)}, fetch="none")
    return count


def adopt_plan(bank: str) -> Plan[int]:
    yield Query(LOCK, {"key": _lock_key(bank)}, fetch="one")
    count: int = yield Query(ADOPT, {"bank": bank}, fetch="none")
    return count


def delete_plan(bank: str, indexes: Sequence[int]) -> Plan[int]:
    yield Query(LOCK_BANK_STATS, {"bank": bank}, fetch="none")
    count: int = yield Query(DELETE_ENTRIES, {"bank": bank, "idx": list(indexes)}, fetch="none")
    return count


def drop_plan(bank: str) -> Plan[int]:
    count: int = yield Query(DROP_BANK, {"bank": bank}, fetch="none")
    return count


def sweep_plan() -> Plan[list[str]]:
    """Drop private banks whose process ended without dropping them (killed, crashed)."""
    rows: list[_EphemeralRow] = yield Query(EPHEMERAL_BANKS, row_type=_EphemeralRow)
    dead = [r.bank_id for r in rows if isinstance(r.owner, Mapping) and not _alive(r.owner)]
    for bank in dead:
        yield Query(DROP_BANK, {"bank": bank}, fetch="none")
    return dead


def _is_unit(vector: npt.NDArray[np.float32]) -> bool:
    return abs(float(np.linalg.norm(vector)) - 1.0) <= _UNIT_NORM_TOLERANCE


class MemoryStream:
    """A bank's memory stream (see the module docstring). Get one with
    :meth:`MemoryEngine.stream <shared_core.MemoryEngine.stream>`.

    ``ephemeral`` streams live in a private bank named ``~stream-<uuid>`` that :meth:`drop`
    removes; one left behind by a process that died is dropped by the next
    :meth:`private` call on the same database.
    """

    def __init__(self, engine: MemoryEngine, bank: str, *, ephemeral: bool = False) -> None:
        self.engine = engine
        self.bank = bank
        self.ephemeral = ephemeral

    @classmethod
    def private(cls, engine: MemoryEngine) -> MemoryStream:
        """A new stream in a bank nothing else uses (and first, drop orphaned ones)."""
        engine.run(sweep_plan())
        return cls(engine, f"{EPHEMERAL_PREFIX}{uuid.uuid4().hex}", ephemeral=True)

    def __repr__(self) -> str:
        kind = "private " if self.ephemeral else ""
        return f"<MemoryStream {kind}bank={self.bank!r}>"

    # ------------------------------------------------------------ append
    def _append_plan(
        self,
        items: Sequence[Any],
        accessed_at: Sequence[_dt.datetime] | None,
        created_at: Sequence[_dt.datetime] | None,
        vectors: Sequence[npt.NDArray[np.float32]] | None,
    ) -> Plan[StreamAppend]:
        n = len(items)
        now = _dt.datetime.now(_dt.UTC)
        la = list(accessed_at) if accessed_at is not None else [now] * n
        ca = list(created_at) if created_at is not None else list(la)
        if len(la) != n or len(ca) != n or (vectors is not None and len(vectors) != n):
            raise ConfigurationError(f"accessed_at, created_at and vectors need one value per item ({n})")
        marked = []
        for i, raw in enumerate(items):
            item = (
                raw
                if isinstance(raw, MemoryItem)
                else MemoryItem(text=raw)
                if isinstance(raw, str)
                else MemoryItem(**raw)
            )
            meta = dict(item.metadata)
            meta[_PENDING] = i
            changes: dict[str, Any] = {"metadata": meta}
            if vectors is not None:
                changes["embedding"] = [float(x) for x in vectors[i]]
            marked.append(dataclasses.replace(item, **changes))
        yield Query(LOCK, {"key": _lock_key(self.bank)}, fetch="one")
        ids: list[str] = yield from self.engine.retain_plan(marked, bank=self.bank, progress=False)
        if self.ephemeral:
            yield Query(MARK_EPHEMERAL, {"bank": self.bank, "owner": json.dumps(_owner())}, fetch="none")
        next_index: _BaseRow = yield Query(NEXT_INDEX, {"bank": self.bank}, fetch="one", row_type=_BaseRow)
        base = next_index.base
        rows: list[_FinalisedRow] = yield Query(
            FINALISE,
            {"bank": self.bank, "base": base, "rel": list(range(n)), "la": la, "ca": ca, "ids": ids},
            row_type=_FinalisedRow,
        )
        first: dict[int, str] = {}
        split: set[int] = set()
        for r in sorted(rows, key=lambda r: r.memory_id):
            first.setdefault(r.rel, r.memory_id)
            if r.chunk_id is not None:
                split.add(r.rel)
        if vectors is not None:
            # Retain stores unit vectors and embeds a split memory's parts one by one; the
            # stream keeps the caller's vector of the whole text, as a vector store would.
            for rel, vector in enumerate(vectors):
                v = np.asarray(vector, dtype=np.float32)
                if rel in split or not _is_unit(v):
                    yield Query(SET_VECTOR, {"bank": self.bank, "idx": base + rel, "v": v}, fetch="none")
        missing = [i for i in range(n) if i not in first]
        if missing:
            raise HindsightError(f"stream append lost items {missing}")
        return StreamAppend(base=base, memory_ids=tuple(first[i] for i in range(n)))

    def append(
        self,
        items: Sequence[MemoryItem | str | Mapping[str, Any]],
        *,
        accessed_at: Sequence[_dt.datetime] | None = None,
        created_at: Sequence[_dt.datetime] | None = None,
        vectors: Sequence[npt.NDArray[np.float32]] | None = None,
    ) -> StreamAppend:
        """Retain ``items`` and give them the next positions, in one transaction.

        ``accessed_at`` / ``created_at`` (aware datetimes, one per item) default to now;
        ``vectors`` are the caller's own embeddings of the whole items (kept as given, so
        ``search`` reproduces L2 and inner-product distances), else the engine embeds.
        """
        return self.engine.run(self._append_plan(items, accessed_at, created_at, vectors))

    async def aappend(
        self,
        items: Sequence[MemoryItem | str | Mapping[str, Any]],
        *,
        accessed_at: Sequence[_dt.datetime] | None = None,
        created_at: Sequence[_dt.datetime] | None = None,
        vectors: Sequence[npt.NDArray[np.float32]] | None = None,
    ) -> StreamAppend:
        """Async twin of :meth:`append`."""
        return await self.engine.arun(self._append_plan(items, accessed_at, created_at, vectors))

    # ------------------------------------------------------------ read
    def recent(self, k: int) -> list[StreamEntry]:
        """The last ``k`` entries, oldest first."""
        return self.engine.run(recent_plan(self.bank, k))

    async def arecent(self, k: int) -> list[StreamEntry]:
        return await self.engine.arun(recent_plan(self.bank, k))

    def entries(self, start: int = 0) -> list[StreamEntry]:
        """Every entry from position ``start`` on, in order."""
        return self.engine.run(entries_plan(self.bank, start))

    async def aentries(self, start: int = 0) -> list[StreamEntry]:
        return await self.engine.arun(entries_plan(self.bank, start))

    def by_ids(self, memory_ids: Sequence[str]) -> list[StreamEntry]:
        """The stream rows of these memories (one per unit)."""
        return self.engine.run(by_ids_plan(self.bank, memory_ids))

    async def aby_ids(self, memory_ids: Sequence[str]) -> list[StreamEntry]:
        return await self.engine.arun(by_ids_plan(self.bank, memory_ids))

    def _search(
        self, vector: npt.ArrayLike, k: int, metric: str, normalise: bool, filter: Mapping[str, Any] | None
    ) -> Plan[list[StreamEntry]]:
        from shared_core.retain.prepare import json_dumps

        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            raise ConfigurationError(f"k must be a non-negative integer, got {k!r}")
        return search_plan(
            self.bank,
            np.asarray(vector, dtype=np.float32),
            k=k,
            metric=metric,
            normalise=normalise,
            filter_json=json_dumps(dict(filter or {})),
        )

    def search(
        self,
        vector: npt.ArrayLike,
        *,
        k: int,
        metric: Metric = "cosine_similarity",
        normalise: bool = False,
        filter: Mapping[str, Any] | None = None,
    ) -> list[StreamEntry]:
        """The ``k`` entries nearest ``vector`` under ``metric`` (exact), nearest first, each
        with its ``distance``. ``filter``: metadata the entries must contain (JSON
        containment)."""
        return self.engine.run(self._search(vector, k, metric, normalise, filter))

    async def asearch(
        self,
        vector: npt.ArrayLike,
        *,
        k: int,
        metric: Metric = "cosine_similarity",
        normalise: bool = False,
        filter: Mapping[str, Any] | None = None,
    ) -> list[StreamEntry]:
        """Async twin of :meth:`search`."""
        return await self.engine.arun(self._search(vector, k, metric, normalise, filter))

    # ------------------------------------------------------------ write
    def touch(self, indexes: Sequence[int], *, at: _dt.datetime) -> int:
        """Set ``last_accessed_at = at`` on these positions (``at`` is a parameter, not the
        server's clock, so a caller's virtual clock applies); return the units updated."""
        return self.engine.run(touch_plan(self.bank, list(indexes), at))

    async def atouch(self, indexes: Sequence[int], *, at: _dt.datetime) -> int:
        return await self.engine.arun(touch_plan(self.bank, list(indexes), at))

    def adopt(self) -> int:
        """Give memories retained by other means (``engine.retain``) the next positions, in
        creation order; return how many units joined."""
        return self.engine.run(adopt_plan(self.bank))

    async def aadopt(self) -> int:
        return await self.engine.arun(adopt_plan(self.bank))

    def delete(self, indexes: Sequence[int]) -> int:
        """Delete the memories at these positions (later positions keep their numbers)."""
        return self.engine.run(delete_plan(self.bank, list(indexes)))

    async def adelete(self, indexes: Sequence[int]) -> int:
        return await self.engine.arun(delete_plan(self.bank, list(indexes)))

    def check_embedder(self) -> None:
        """Raise :class:`~shared_core.errors.DimensionMismatchError` or
        :class:`~shared_core.errors.EmbeddingModelMismatchError` (naming both) when the bank
        exists and was written by another model than the engine's embedder."""
        row = self.engine.run(bank_embedder_plan(self.bank))
        if row is not None:
            row.check(self.bank, self.engine.embedder.model_name, self.engine.embedder.dimension)

    def drop(self) -> None:
        """Delete the whole bank (every memory, not only the stream)."""
        self.engine.run(drop_plan(self.bank))

    async def adrop(self) -> None:
        await self.engine.arun(drop_plan(self.bank))
