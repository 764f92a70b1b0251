"""``HindsightRetriever``: the TEMPR recall pipeline as a LangChain retriever.

>>> from hindsight_langchain import HindsightRetriever  # doctest: +SKIP
>>> retriever = HindsightRetriever(engine=engine, bank="demo", k=5)  # doctest: +SKIP
>>> retriever.add_documents([Document(page_content="Alice joined Google in March 2021.")])  # doctest: +SKIP
>>> docs = retriever.invoke("Where does Alice work?")  # doctest: +SKIP
>>> docs[0].metadata["score"], docs[0].metadata["fact_type"]  # doctest: +SKIP
(0.83..., 'world')
>>> chain = retriever | format_docs          # any LCEL composition works  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever, LangSmithRetrieverParams
from pydantic import ConfigDict, PrivateAttr

from hindsight_langchain.documents import document_to_item, memory_to_document
from shared_core.config import DEFAULT_BANK, DEFAULT_MAX_TOKENS
from shared_core.engine import AsyncMemoryEngine, MemoryEngine
from shared_core.errors import ConfigurationError
from shared_core.integrations import EngineHandle, resolve_engine
from shared_core.recall.options import Budget, RecallOptions, recall_option_names
from shared_core.recall.query import TagsMatch
from shared_core.types import FactType, RecallResult

__all__ = ["HindsightRetriever", "document_to_item", "memory_to_document"]

# Options a call may not override: ``trace`` and ``arms`` shape the result, not the query.
_PER_CALL_EXCLUDED = frozenset({"trace", "arms"})
_IGNORED_KEYS = ("verbose",)  # forwarded by BaseRetriever.invoke, meaningless here


class HindsightRetriever(BaseRetriever):
    """Long-term memory recall (semantic + keyword + graph + temporal arms, fused, reranked).

    Construct with ``engine=`` (a :class:`~shared_core.MemoryEngine`, left open), ``dsn=``
    (an engine is opened and closed by :meth:`close`), or nothing (the embedded server).
    Every recall option can be overridden per call: ``retriever.invoke(q, k=3, tags=["x"])``.
    Thread-safe: ``batch`` runs ``invoke`` in a thread pool over the engine's connection pool.

    >>> retriever = HindsightRetriever(engine=engine, bank="demo", k=4, budget="low")  # doctest: +SKIP
    >>> retriever.invoke("What happened last spring?", query_timestamp=datetime(2024, 7, 1))  # doctest: +SKIP
    [Document(id='0196...', metadata={'score': ..., 'fact_type': 'world', ...}, ...)]
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    bank: str = DEFAULT_BANK
    k: int | None = None
    """Optional cap on the number of documents returned (recall itself is token-bounded)."""
    max_tokens: int = DEFAULT_MAX_TOKENS
    budget: Budget = "mid"
    """"low", "mid", "high" or "adaptive" (candidates fetched per arm)."""
    types: list[FactType] | None = None
    tags: list[str] | None = None
    """Memory tags to filter on. (Shadows ``BaseRetriever.tags`` - the callback tags - which
    remain settable through ``with_config(tags=...)``.)"""
    tags_match: TagsMatch = "any"
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
        """The recall options of one call: this retriever's fields, then the call's overrides
        (any :class:`~shared_core.recall.options.RecallOptions` field, plus ``k``)."""
        allowed = set(recall_option_names()) - _PER_CALL_EXCLUDED
        unknown = set(kwargs) - allowed - {"k"} - set(_IGNORED_KEYS)
        if unknown:
            raise TypeError(f"unknown retriever option(s) {sorted(unknown)}; "
                            f"allowed: {sorted((*allowed, 'k'))}")
        options: dict[str, Any] = {key: getattr(self, key) for key in allowed
                                   if key in type(self).model_fields}
        options.update({key: kwargs[key] for key in allowed if key in kwargs})
        RecallOptions(**options)  # a bad option fails here, named, before any I/O
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
