"""``HindsightRetriever``: the TEMPR recall pipeline as a LangChain retriever.

>>> from hindsight_langchain import HindsightRetriever
>>> retriever = HindsightRetriever(engine=engine, bank="demo", k=5)
>>> retriever.add_documents([Document(page_content="Alice joined Google in March 2021.")])
>>> docs = retriever.invoke("Where does Alice work?")
>>> docs[0].metadata["score"], docs[0].metadata["fact_type"]
(0.83..., 'world')
>>> chain = retriever | format_docs          # any LCEL composition works
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever, LangSmithRetrieverParams
from pydantic import ConfigDict, PrivateAttr

from hindsight_langchain._common import (
    EngineHandle,
    first_date,
    iso_or_none,
    resolve_engine,
)
from hindsight_langchain._import import aimport_pgvector_collection, import_pgvector_collection
from shared_core import ConfigurationError, MemoryEngine, MemoryItem, RecallResult
from shared_core.config import DEFAULT_BANK, DEFAULT_MAX_TOKENS
from shared_core.engine import AsyncMemoryEngine
from shared_core.types import FACT_TYPES, RecalledMemory

__all__ = ["HindsightRetriever", "aimport_pgvector_collection", "import_pgvector_collection",
           "memory_to_document"]

_RECALL_KEYS = ("bank", "max_tokens", "budget", "types", "tags", "tags_match", "query_timestamp",
                "temporal_window", "include_chunks", "max_chunk_tokens", "reranker")
_IGNORED_KEYS = ("verbose",)  # forwarded by BaseRetriever.invoke, meaningless here


def memory_to_document(memory: RecalledMemory, chunks: Mapping[str, str] | None = None
                       ) -> Document:
    """A recalled memory as a LangChain ``Document`` (``id`` = memory id).

    Metadata: the memory's own metadata, then ``score``, ``fact_type``, ``occurred_start`` /
    ``occurred_end`` / ``mentioned_at`` (ISO strings), ``tags``, ``document_id``, ``chunk_id``,
    ``context``, ``entities``, ``scores`` (the full breakdown) and, with ``include_chunks``,
    ``chunk`` (the source passage).
    """
    meta: dict[str, Any] = dict(memory.metadata)
    meta.update({
        "score": float(memory.score),
        "fact_type": memory.fact_type,
        "occurred_start": iso_or_none(memory.occurred_start),
        "occurred_end": iso_or_none(memory.occurred_end),
        "mentioned_at": iso_or_none(memory.mentioned_at),
        "tags": list(memory.tags),
        "document_id": memory.document_id,
        "chunk_id": memory.chunk_id,
        "context": memory.context,
        "entities": list(memory.entities),
        "scores": {k: (dict(v) if isinstance(v, Mapping) else v)
                   for k, v in dataclasses.asdict(memory.scores).items()},
    })
    if chunks and memory.chunk_id is not None and memory.chunk_id in chunks:
        meta["chunk"] = chunks[memory.chunk_id]
    return Document(id=memory.id, page_content=memory.text, metadata=meta)


def document_to_item(doc: Document) -> MemoryItem:
    """A LangChain ``Document`` as a :class:`~shared_core.MemoryItem`.

    The first timestamp among ``occurred_at``, ``timestamp``, ``created_at``, ``date``
    (datetime, ISO string or epoch seconds; naive = local time) becomes ``occurred_start``;
    ``tags`` (a list of strings), ``fact_type``, ``context`` and ``mentioned_at`` are used when
    present; ``Document.id`` becomes the ``document_id``, so re-adding a document replaces it.
    """
    meta = dict(doc.metadata)
    tags = meta.get("tags")
    fact_type = meta.get("fact_type")
    mentioned = meta.get("mentioned_at")
    context = meta.get("context")
    return MemoryItem(
        text=doc.page_content,
        context=context if isinstance(context, str) else None,
        fact_type=fact_type if fact_type in FACT_TYPES else "world",
        occurred_start=first_date(meta),
        mentioned_at=first_date({"m": mentioned}, ("m",)) if mentioned is not None else None,
        tags=tuple(tags) if isinstance(tags, list | tuple) and
        all(isinstance(t, str) for t in tags) else (),
        metadata=meta,
        document_id=doc.id,
    )


class HindsightRetriever(BaseRetriever):
    """Long-term memory recall (semantic + keyword + graph + temporal arms, fused, reranked).

    Construct with ``engine=`` (a :class:`~shared_core.MemoryEngine`, left open), ``dsn=``
    (an engine is opened and closed by :meth:`close`), or nothing (the embedded server).
    Every recall option can be overridden per call: ``retriever.invoke(q, k=3, tags=["x"])``.
    Thread-safe: ``batch`` runs ``invoke`` in a thread pool over the engine's connection pool.

    >>> retriever = HindsightRetriever(engine=engine, bank="demo", k=4, budget="low")
    >>> retriever.invoke("What happened last spring?", query_timestamp=datetime(2024, 7, 1))
    [Document(id='0196...', metadata={'score': ..., 'fact_type': 'world', ...}, ...)]
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    bank: str = DEFAULT_BANK
    k: int | None = None
    """Optional cap on the number of documents returned (recall itself is token-bounded)."""
    max_tokens: int = DEFAULT_MAX_TOKENS
    budget: str = "mid"
    """"low", "mid", "high" or "adaptive" (candidates fetched per arm)."""
    types: list[str] | None = None
    tags: list[str] | None = None
    """Memory tags to filter on. (Shadows ``BaseRetriever.tags`` - the callback tags - which
    remain settable through ``with_config(tags=...)``.)"""
    tags_match: str = "any"
    include_chunks: bool = False
    reranker: Any = None
    """``None`` (engine default), ``"passthrough"``, a model name, or a pair scorer."""

    _handle: EngineHandle = PrivateAttr()

    def __init__(self, *, engine: MemoryEngine | AsyncMemoryEngine | None = None,
                 dsn: str | None = None, **data: Any) -> None:
        super().__init__(**data)
        self._handle = resolve_engine(engine, dsn)

    @property
    def engine(self) -> MemoryEngine:
        return self._handle.engine

    def close(self) -> None:
        """Close the engine if this retriever opened it."""
        self._handle.close()

    def __enter__(self) -> HindsightRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(bank={self.bank!r}, k={self.k}, budget={self.budget!r}, "
                f"max_tokens={self.max_tokens}, engine={self.engine!r})")

    __str__ = __repr__

    # ------------------------------------------------------------------ recall
    def _options(self, kwargs: Mapping[str, Any]) -> tuple[int | None, dict[str, Any]]:
        unknown = set(kwargs) - set(_RECALL_KEYS) - {"k"} - set(_IGNORED_KEYS)
        if unknown:
            raise TypeError(f"unknown retriever option(s) {sorted(unknown)}; "
                            f"allowed: {sorted((*_RECALL_KEYS, 'k'))}")
        options: dict[str, Any] = {
            "bank": self.bank, "max_tokens": self.max_tokens, "budget": self.budget,
            "types": self.types, "tags": self.tags, "tags_match": self.tags_match,
            "include_chunks": self.include_chunks, "reranker": self.reranker}
        options.update({key: kwargs[key] for key in _RECALL_KEYS if key in kwargs})
        k = kwargs.get("k", self.k)
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 0):
            raise ConfigurationError(f"k must be a non-negative integer or None, got {k!r}")
        return k, options

    @staticmethod
    def _documents(result: RecallResult, k: int | None) -> list[Document]:
        memories = list(result.memories)
        if k is not None:
            memories = memories[:k]
        return [memory_to_document(m, result.chunks) for m in memories]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        k, options = self._options(kwargs)
        if k == 0:
            return []
        return self._documents(self.engine.recall(query, **options), k)

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[Document]:
        k, options = self._options(kwargs)
        if k == 0:
            return []
        return self._documents(await self.engine.arecall(query, **options), k)

    # ------------------------------------------------------------------ retain
    def add_documents(self, documents: Sequence[Document], **kwargs: Any) -> list[str]:
        """Retain documents into the bank; return the new memory ids (a document longer than
        the engine's ``unit_max_tokens`` is split and yields one id per passage)."""
        return self.engine.retain([document_to_item(d) for d in documents],
                                  bank=kwargs.get("bank", self.bank), progress=False)

    async def aadd_documents(self, documents: Sequence[Document], **kwargs: Any) -> list[str]:
        """Async twin of :meth:`add_documents`."""
        return await self.engine.aretain([document_to_item(d) for d in documents],
                                         bank=kwargs.get("bank", self.bank), progress=False)

    def _get_ls_params(self, **kwargs: Any) -> LangSmithRetrieverParams:
        params = super()._get_ls_params(**kwargs)
        params["ls_vector_store_provider"] = "HindsightPostgres"
        params["ls_embedding_provider"] = type(self.engine.embedder).__name__
        params["ls_embedding_model"] = self.engine.embedder.model_name
        return params
