"""``HindsightRetriever``: the TEMPR recall pipeline as a LangChain retriever.

It takes what LangChain's ``VectorStoreRetriever`` takes (``k``, ``search_type``,
``search_kwargs`` with ``filter`` in PGVector's syntax, ``score_threshold``, ``fetch_k``,
``lambda_mult``) and keeps the ids documents were added with.

>>> from hindsight_langchain import HindsightRetriever  # doctest: +SKIP
>>> retriever = HindsightRetriever(engine=engine, bank="demo")  # doctest: +SKIP
>>> retriever.add_documents([Document(id="hr-1", page_content="Alice joined Google in 2021.",
...                                   metadata={"team": "search"})])  # doctest: +SKIP
['hr-1']
>>> docs = retriever.invoke("Where does Alice work?", filter={"team": "search"})  # doctest: +SKIP
>>> docs[0].id, docs[0].metadata["score"]  # doctest: +SKIP
('hr-1', 0.71...)
>>> chain = retriever | format_docs          # any LCEL composition works  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever, LangSmithRetrieverParams
from pydantic import ConfigDict, Field, PrivateAttr

from hindsight_langchain.documents import document_to_item, documents_to_items, memory_to_document
from hindsight_langchain.search import (
    DEFAULT_K,
    SEARCH_KWARGS,
    SearchSpec,
    check_k,
    search_spec,
)
from shared_core.config import DEFAULT_BANK, DEFAULT_MAX_CHUNK_TOKENS, DEFAULT_MAX_TOKENS
from shared_core.engine import AsyncMemoryEngine, MemoryEngine
from shared_core.errors import ConfigurationError
from shared_core.integrations import EngineHandle, document_ids, relevance, resolve_engine
from shared_core.recall.mmr import mmr_select
from shared_core.recall.options import Budget, RecallOptions, recall_option_names
from shared_core.recall.query import TagsMatch
from shared_core.storage.documents import StoredDocument
from shared_core.types import FactType, RecalledMemory, RecallResult

__all__ = ["HindsightRetriever", "document_to_item", "memory_to_document"]

_log = logging.getLogger(__name__)

# Recall options a call may override (``memory_tags`` stands for the engine's ``tags``):
# ``trace``/``arms`` shape the result, ``filter``/``k`` come through the search options.
_PER_CALL = frozenset(recall_option_names()) - {"trace", "arms", "filter", "k", "tags"}
_IGNORED_KEYS = frozenset({"verbose"})  # forwarded by BaseRetriever.invoke, meaningless here


class HindsightRetriever(BaseRetriever):
    """Long-term memory recall (semantic + keyword + graph + temporal arms, fused, reranked).

    Construct with ``engine=`` (a :class:`~shared_core.MemoryEngine`, left open), ``dsn=``
    (an engine is opened and closed by :meth:`close`), or nothing (the embedded server).
    Unknown fields are rejected. Every search and recall option can be overridden per call:
    ``retriever.invoke(q, k=3, filter={"team": "er"}, memory_tags=["x"])``. Thread-safe:
    ``batch`` runs ``invoke`` in a thread pool over the engine's connection pool.

    ``k`` (default 4, as ``VectorStoreRetriever``) documents come back whenever the bank holds
    k that pass the filters: memories no arm found above its thresholds fill the rest, with
    ``metadata["below_threshold"] = True``. ``k=None`` returns what fits ``max_tokens``.

    ``memory_tags`` filters on memory tags (``tags`` stays LangChain's callback tags). With
    ``tags_match`` ``"any"`` / ``"all"`` untagged memories pass too; ``"any_strict"`` /
    ``"all_strict"`` keep only memories with the tags; ``"exact"`` wants the same set (and with
    no tags, only untagged memories).

    >>> retriever = HindsightRetriever(engine=engine, bank="demo", k=4, budget="low")  # doctest: +SKIP
    >>> retriever.invoke("What happened last spring?", query_timestamp=datetime(2024, 7, 1))  # doctest: +SKIP
    [Document(id='hr-1', metadata={'score': ..., 'fact_type': 'world', ...}, ...)]
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    bank: str = DEFAULT_BANK
    k: int | None = DEFAULT_K
    """How many documents to return (``None``: as many as fit ``max_tokens``)."""
    search_type: str = "similarity"
    """``"similarity"``, ``"similarity_score_threshold"`` or ``"mmr"`` (:data:`SearchType`)."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """``k``, ``filter``, ``score_threshold``, ``fetch_k``, ``lambda_mult`` (as
    ``VectorStoreRetriever``); what the search type does not use is an error."""
    max_tokens: int = DEFAULT_MAX_TOKENS
    budget: Budget = "mid"
    """"low", "mid", "high" or "adaptive" (candidates fetched per arm)."""
    types: list[FactType] | None = None
    memory_tags: list[str] | None = None
    """Memory tags to filter on (see the class docstring for untagged memories)."""
    tags_match: TagsMatch = "any"
    include_chunks: bool = False
    """Add each document's source text as ``metadata["chunk"]`` (``chunk_truncated`` when cut)."""
    max_chunk_tokens: int = DEFAULT_MAX_CHUNK_TOKENS
    """Token budget of the chunks, separate from ``max_tokens``."""
    reranker: Any = None
    """``None`` (engine default), ``"passthrough"``, a model name, or a pair scorer."""
    progress: bool | None = None
    """Progress bar on long ``add_documents``: ``None`` shows it on a terminal only."""
    embeddings: Any = None
    """Your own embedding model (any LangChain ``Embeddings``): memories and queries are
    embedded with it, in banks that record it (a bank of another model raises a typed
    error)."""

    _handle: EngineHandle = PrivateAttr()
    _spec: SearchSpec = PrivateAttr()

    def __init__(
        self, engine: MemoryEngine | AsyncMemoryEngine | None = None, *, dsn: str | None = None, **data: Any
    ) -> None:
        if data.get("k") is not None:
            check_k(data["k"])  # before pydantic, which would take True as 1 and "3" as 3
        super().__init__(**data)
        base = SearchSpec(k=self.k if self.k is not None else DEFAULT_K)
        self._spec = search_spec(self.search_type, self.search_kwargs, base=base)
        RecallOptions(**self._recall_fields())  # a bad option fails here, named
        self._handle = resolve_engine(engine, dsn, self.embeddings)

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
        return (
            f"{type(self).__name__}(bank={self.bank!r}, k={self._k(None)}, "
            f"search_type={self.search_type!r}, budget={self.budget!r}, "
            f"max_tokens={self.max_tokens}, engine={self.engine!r})"
        )

    __str__ = __repr__

    # ------------------------------------------------------------------ recall
    def _recall_fields(self) -> dict[str, Any]:
        fields = {key: getattr(self, key) for key in _PER_CALL if key in type(self).model_fields}
        fields["tags"] = self.memory_tags
        return fields

    def _k(self, spec: SearchSpec | None) -> int | None:
        if spec is None:
            spec = self._spec
        return spec.k if self.k is not None or "k" in self.search_kwargs else None

    def _plan(self, kwargs: Mapping[str, Any]) -> tuple[SearchSpec, int | None, dict[str, Any]]:
        """This call's search (the retriever's, then the call's search options) and recall
        options (the retriever's fields, then the call's overrides)."""
        if "tags" in kwargs:
            raise ConfigurationError(
                "tags are LangChain's callback tags; filter on memory tags with memory_tags="
            )
        unknown = set(kwargs) - _PER_CALL - set(SEARCH_KWARGS) - {"memory_tags"} - _IGNORED_KEYS
        if unknown:
            raise TypeError(
                f"unknown retriever option(s) {sorted(unknown)}; allowed: "
                f"{sorted((*_PER_CALL, *SEARCH_KWARGS, 'memory_tags'))}"
            )
        searched = {key: kwargs[key] for key in SEARCH_KWARGS if key in kwargs}
        k_given = "k" in searched
        if k_given and searched["k"] is None:
            searched.pop("k")
        spec = search_spec(self.search_type, searched, base=self._spec)
        k = spec.k if (k_given and kwargs["k"] is not None) else (None if k_given else self._k(spec))
        options = self._recall_fields()
        options.update({key: kwargs[key] for key in _PER_CALL if key in kwargs})
        if "memory_tags" in kwargs:
            options["tags"] = kwargs["memory_tags"]
        options["filter"] = spec.filter
        fetch = spec.fetch_k if spec.search_type == "mmr" else k
        options["k"] = fetch if fetch else None
        RecallOptions(**options)  # a bad option fails here, named, before any I/O
        return spec, k, options

    def _select(
        self,
        spec: SearchSpec,
        k: int | None,
        result: RecallResult,
        vectors: Mapping[str, Any] | None,
        query_vector: Any,
    ) -> list[Document]:
        memories: list[RecalledMemory] = list(result.memories)
        if spec.search_type == "mmr" and vectors is not None and k is not None:
            kept = [m for m in memories if m.id in vectors]
            import numpy as np

            order = (
                mmr_select(
                    query_vector, np.stack([vectors[m.id] for m in kept]), k=k, lambda_mult=spec.lambda_mult
                )
                if kept
                else []
            )
            memories = [kept[i] for i in order]
        elif k is not None:
            memories = memories[:k]
        if spec.score_threshold is not None:
            memories = [m for m in memories if relevance(m) >= spec.score_threshold]
        return [memory_to_document(m, result.chunks, result.truncated_chunks) for m in memories]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        spec, k, options = self._plan(kwargs)
        if k == 0:
            return []
        result = self.engine.recall(query, **options)
        vectors = query_vector = None
        if spec.search_type == "mmr" and result.memories:
            vectors = self.engine.vectors([m.id for m in result.memories], bank=options["bank"])
            query_vector = self.engine.embedder.embed_query(query)
        return self._select(spec, k, result, vectors, query_vector)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        spec, k, options = self._plan(kwargs)
        if k == 0:
            return []
        result = await self.engine.arecall(query, **options)
        vectors = query_vector = None
        if spec.search_type == "mmr" and result.memories:
            vectors = await self.engine.avectors([m.id for m in result.memories], bank=options["bank"])
            # On a worker thread, as arecall embeds: a forward pass (and, with queries of other
            # threads in flight, the wait to share one) would otherwise stall the event loop.
            query_vector = await asyncio.to_thread(self.engine.embedder.embed_query, query)
        return self._select(spec, k, result, vectors, query_vector)

    # ------------------------------------------------------------------ documents
    def add_documents(
        self,
        documents: Sequence[Document],
        *,
        ids: Sequence[str] | None = None,
        bank: str | None = None,
        progress: bool | None = None,
    ) -> list[str]:
        """Retain documents into the bank; return their ids: ``ids`` if given, else each
        ``Document.id``, else a new UUID (as vector stores do). Adding an id again replaces
        that document. A document longer than the engine's ``unit_max_tokens`` is stored as
        several passages that share its id. Raises
        :class:`~shared_core.errors.InvalidItemError` naming the bad document, before any
        write."""
        items, keys = documents_to_items(documents, ids)
        self.engine.retain(items, bank=bank or self.bank, progress=self._progress(progress))
        return keys

    async def aadd_documents(
        self,
        documents: Sequence[Document],
        *,
        ids: Sequence[str] | None = None,
        bank: str | None = None,
        progress: bool | None = None,
    ) -> list[str]:
        """Async twin of :meth:`add_documents`."""
        items, keys = documents_to_items(documents, ids)
        await self.engine.aretain(items, bank=bank or self.bank, progress=self._progress(progress))
        return keys

    def _progress(self, progress: bool | None) -> bool | None:
        return progress if progress is not None else self.progress

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents with these ids, as they were added (ids not found are skipped).

        A recalled piece of a document retain split (id ``<id>#<n>``) resolves to the whole
        document it came from, returned under the user's id."""
        return [_stored(d) for d in self.engine.get_documents(document_ids(ids), bank=self.bank)]

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Async twin of :meth:`get_by_ids`."""
        found = await self.engine.aget_documents(document_ids(ids), bank=self.bank)
        return [_stored(d) for d in found]

    def delete(self, ids: Sequence[str] | None = None, **kwargs: Any) -> bool:
        """Delete the documents with these ids (and their memories, links and chunks); the
        user's id of a split document removes every piece."""
        self.engine.delete_documents(_ids(ids), bank=kwargs.get("bank", self.bank))
        return True

    async def adelete(self, ids: Sequence[str] | None = None, **kwargs: Any) -> bool:
        """Async twin of :meth:`delete`."""
        await self.engine.adelete_documents(_ids(ids), bank=kwargs.get("bank", self.bank))
        return True

    def _get_ls_params(self, **kwargs: Any) -> LangSmithRetrieverParams:
        params = super()._get_ls_params(**kwargs)
        params["ls_vector_store_provider"] = "HindsightPostgres"
        params["ls_embedding_provider"] = type(self.engine.embedder).__name__
        params["ls_embedding_model"] = self.engine.embedder.model_name
        return params


def _ids(ids: Sequence[str] | None) -> Sequence[str]:
    if ids is None:
        raise ConfigurationError("delete needs the ids of the documents to delete")
    return ids


def _stored(doc: StoredDocument) -> Document:
    return Document(id=doc.id, page_content=doc.text, metadata=dict(doc.metadata))
