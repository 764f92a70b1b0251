"""What the framework adapters share: engine handles, metadata dates, memory metadata.

Neutral ground for :mod:`hindsight_langchain` and :mod:`hindsight_llamaindex`: nothing here
imports a framework, and neither adapter imports the other. A new adapter starts here.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from shared_core.engine import AsyncMemoryEngine, MemoryEngine
from shared_core.errors import ConfigurationError
from shared_core.storage.documents import check_ids
from shared_core.types import FACT_TYPES, FactType, MemoryItem, RecalledMemory

__all__ = [
    "DATE_KEYS",
    "PIECE_SEPARATOR",
    "DateKind",
    "EngineHandle",
    "document_ids",
    "document_key",
    "first_date",
    "from_aware",
    "iso_or_none",
    "memory_item",
    "memory_metadata",
    "relevance",
    "resolve_engine",
    "to_aware",
]

# Bound at import: langchain_core.utils.mock_now replaces the module attribute
# ``datetime.datetime`` with a subclass, so isinstance checks against the name looked up at
# call time would reject real datetimes inside the context.
_REAL_DT = datetime.datetime
_REAL_DATE = datetime.date
_UTC = datetime.UTC

DateKind = Literal["naive", "aware", "epoch"]

# Metadata keys mapped to a memory's date (``occurred_start``), in order of preference.
DATE_KEYS: tuple[str, ...] = ("occurred_at", "timestamp", "created_at", "date")


class EngineHandle:
    """An engine plus whether the adapter created it (and so must close it)."""

    __slots__ = ("engine", "owned")

    def __init__(self, engine: MemoryEngine, owned: bool) -> None:
        self.engine = engine
        self.owned = owned

    def close(self) -> None:
        if self.owned:
            self.engine.close()


def resolve_engine(
    engine: MemoryEngine | AsyncMemoryEngine | None, dsn: str | None, embeddings: Any = None
) -> EngineHandle:
    """``engine=`` wins; else ``dsn=`` opens an engine on that server; else the embedded one.

    With ``embeddings`` (an ``Embedder``, LangChain ``Embeddings``, LlamaIndex
    ``BaseEmbedding`` or function), the engine embeds with them: the given engine when it
    already does, else a twin of it on the same database (owned: closed with the adapter).
    """
    if engine is not None and dsn is not None:
        raise ConfigurationError("pass either engine= or dsn=, not both")
    if embeddings is not None:
        if engine is None:
            return EngineHandle(MemoryEngine(dsn, embeddings=embeddings), owned=True)
        base = resolve_engine(engine, None).engine
        if base.uses_embeddings(embeddings):
            return EngineHandle(base, owned=False)
        return EngineHandle(base.with_embedder(embeddings), owned=True)
    if isinstance(engine, AsyncMemoryEngine):
        return EngineHandle(engine.sync, owned=False)
    if engine is not None:
        if not isinstance(engine, MemoryEngine):
            raise ConfigurationError(
                f"engine must be a MemoryEngine or AsyncMemoryEngine, got {type(engine).__name__}"
            )
        return EngineHandle(engine, owned=False)
    return EngineHandle(MemoryEngine(dsn), owned=True)


def _parse_iso(value: str) -> datetime.datetime:
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return _REAL_DT.fromisoformat(text)


def to_aware(value: Any) -> tuple[datetime.datetime, DateKind]:
    """A metadata timestamp as an aware datetime, plus the kind it came as.

    Accepts datetimes (naive ones are UTC, as everywhere in this library, whatever the
    machine's time zone), dates (midnight UTC), ISO-8601 strings and epoch seconds (int or
    float). Raises ``TypeError`` / ``ValueError`` for anything else.

    >>> to_aware(0.0)[1]
    'epoch'
    >>> to_aware(datetime.datetime(2024, 1, 1, 12))[0].isoformat()
    '2024-01-01T12:00:00+00:00'
    """
    if isinstance(value, bool):
        raise TypeError("a bool is not a timestamp")
    if isinstance(value, int | float):
        return _REAL_DT.fromtimestamp(float(value), tz=_UTC), "epoch"
    if isinstance(value, str):
        value = _parse_iso(value)
    elif not isinstance(value, _REAL_DT) and isinstance(value, _REAL_DATE):
        value = _REAL_DT(value.year, value.month, value.day)
    if isinstance(value, _REAL_DT):
        if value.tzinfo is None or value.utcoffset() is None:
            return value.replace(tzinfo=_UTC), "naive"
        return value, "aware"
    raise TypeError(f"{type(value).__name__} is not a timestamp (datetime, ISO string or epoch)")


def from_aware(value: datetime.datetime, kind: str) -> Any:
    """Inverse of :func:`to_aware`: give the caller back the kind of value they stored."""
    if kind == "epoch":
        return value.timestamp()
    if kind == "naive":
        utc = value.astimezone(_UTC)
        return _REAL_DT(utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second, utc.microsecond)
    return value


def iso_or_none(value: datetime.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def first_date(metadata: Mapping[str, Any], keys: tuple[str, ...] = DATE_KEYS) -> datetime.datetime | None:
    """The first parseable timestamp among ``keys`` in ``metadata`` (aware), or None."""
    for key in keys:
        if key in metadata and metadata[key] is not None:
            try:
                return to_aware(metadata[key])[0]
            except (TypeError, ValueError):
                continue
    return None


def relevance(memory: RecalledMemory) -> float:
    """The relevance a framework reports for a memory (``metadata["score"]``,
    ``NodeWithScore.score``), in [0, 1], higher is more relevant; ``score_threshold`` filters
    on it.

    * the learned reranker (the default without a cross-encoder): its calibrated probability
      that the memory answers the query (a threshold of 0.5 means "more likely than not"; the
      precision and recall it gives are in docs/benchmarks.md);
    * a cross-encoder: the sigmoid of its score, before recall's boosts;
    * passthrough (``reranker="none"``): the cosine similarity with the query, since
      passthrough's own scores only encode the rank (clamped to [0, 1]).

    Recall's own ranking score stays in ``scores.final``.

    >>> from shared_core.types import RecalledMemory
    >>> relevance(RecalledMemory(id="m", text="t", fact_type="world", score=0.9, relevance=0.72))
    0.72
    >>> relevance(RecalledMemory(id="m", text="t", fact_type="world", score=0.9, similarity=0.41))
    0.41
    """
    if memory.relevance is not None:
        return float(memory.relevance)
    similarity = memory.similarity if memory.similarity is not None else 0.0
    return min(max(float(similarity), 0.0), 1.0)


PIECE_SEPARATOR = "#"
"""Joins a document id and a piece number in the id of one piece of a split document."""


def document_key(memory: RecalledMemory) -> str:
    """The id a framework sees: the id its user gave (``document_id``) for a document stored
    whole, ``<document_id>#<n>`` (``n`` from 0, in text order) for each piece of a document
    retain split into several memories, else the memory id. Stable across re-adds, and
    distinct per piece, so LangChain's and LlamaIndex's de-duplication by id keeps them apart.

    >>> document_key(RecalledMemory(id="m", text="t", fact_type="world", score=1.0,
    ...                             document_id="doc-1"))
    'doc-1'
    >>> document_key(RecalledMemory(id="m", text="t", fact_type="world", score=1.0,
    ...                             document_id="doc-1", piece=2, pieces=5))
    'doc-1#2'
    """
    if memory.document_id is None:
        return memory.id
    if memory.pieces > 1:
        return f"{memory.document_id}{PIECE_SEPARATOR}{memory.piece}"
    return memory.document_id


def document_ids(ids: Sequence[str]) -> list[str]:
    """The stored document ids to look up for ``ids``: each id as given, plus, for a piece id
    (``<document_id>#<n>``, see :func:`document_key`), the id of the document it came from.

    >>> document_ids(["a", "b#3", "c#x"])
    ['a', 'b#3', 'b', 'c#x']
    """
    out: list[str] = []
    for key in check_ids(ids):  # a caller's None or int is named here, not an AttributeError
        out.append(key)
        head, sep, tail = key.rpartition(PIECE_SEPARATOR)
        if sep and head and tail.isdigit() and head not in out:
            out.append(head)
    return out


def memory_metadata(memory: RecalledMemory) -> dict[str, Any]:
    """A recalled memory's metadata for a framework document: its own metadata, then
    ``score`` (:func:`relevance`), ``below_threshold`` (added only to fill ``k``),
    ``memory_id``, ``fact_type``, the dates (ISO strings), ``tags``, ``document_id``,
    ``chunk_id``, ``entities`` and ``scores`` (the full breakdown, as plain dicts)."""
    meta: dict[str, Any] = dict(memory.metadata)
    meta.update(
        {
            "score": relevance(memory),
            "below_threshold": memory.below_threshold,
            "memory_id": memory.id,
            "fact_type": memory.fact_type,
            "occurred_start": iso_or_none(memory.occurred_start),
            "occurred_end": iso_or_none(memory.occurred_end),
            "mentioned_at": iso_or_none(memory.mentioned_at),
            "tags": list(memory.tags),
            "document_id": memory.document_id,
            "chunk_id": memory.chunk_id,
            "entities": list(memory.entities),
            "scores": {
                k: (dict(v) if isinstance(v, Mapping) else v)
                for k, v in dataclasses.asdict(memory.scores).items()
            },
        }
    )
    return meta


def _fact_type(value: object) -> FactType:
    for fact_type in FACT_TYPES:
        if value == fact_type:
            return fact_type
    return "world"


def memory_item(
    text: str, metadata: Mapping[str, Any], *, document_id: str | None, read_context: bool = False
) -> MemoryItem:
    """A framework document's text and metadata as a :class:`~shared_core.types.MemoryItem`.

    The first timestamp among :data:`DATE_KEYS` (datetime, ISO string or epoch seconds; naive =
    UTC) becomes ``occurred_start``; ``tags`` (a list of strings) and ``fact_type`` are
    used when valid. With ``read_context``, ``context`` and ``mentioned_at`` are read too.

    >>> memory_item("Alice moved.", {"tags": ["a"], "date": "2024-03-01T00:00:00Z"},
    ...             document_id=None).occurred_start.year
    2024
    """
    meta = dict(metadata)
    tags = meta.get("tags")
    context = meta.get("context") if read_context else None
    mentioned = meta.get("mentioned_at") if read_context else None
    return MemoryItem(
        text=text,
        context=context if isinstance(context, str) else None,
        fact_type=_fact_type(meta.get("fact_type")),
        occurred_start=first_date(meta),
        mentioned_at=first_date({"m": mentioned}, ("m",)) if mentioned is not None else None,
        tags=tuple(tags) if isinstance(tags, list | tuple) and all(isinstance(t, str) for t in tags) else (),
        metadata=meta,
        document_id=document_id,
    )
