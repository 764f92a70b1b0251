"""``TimeWeightedHindsightRetriever``: a drop-in for LangChain's ``TimeWeightedVectorStoreRetriever``.

Change only the import::

    # from langchain_classic.retrievers import TimeWeightedVectorStoreRetriever
    from hindsight_langchain import TimeWeightedHindsightRetriever as TimeWeightedVectorStoreRetriever

    retriever = TimeWeightedVectorStoreRetriever(vectorstore=vectorstore, decay_rate=1e-25, k=1)
    retriever.add_documents([Document(page_content="hello world")])
    retriever.invoke("hello world")

Same fields, defaults, methods and results: the score is
``(1 - decay_rate) ** hours_since_last_access + Σ other_score_keys + relevance`` over the last
``k`` memories of the stream plus the store's top ``search_kwargs["k"]``, where relevance is
**the store's own**: the distance the store ranks by (FAISS ``IndexFlatL2``: squared L2;
``InMemoryVectorStore``: cosine similarity; ...) computed by Postgres with pgvector's operator,
mapped through the store's ``_select_relevance_score_fn()``. Documents and queries are embedded
by the store's embedding function (any dimension); ``add_documents`` also adds to the store,
with the same ids.

The stream lives in Postgres (the engine's :meth:`~shared_core.MemoryEngine.stream`):

- without ``bank=``, each retriever has a private stream, as upstream's in-memory list: no
  other retriever sees it, and it is deleted when the retriever is closed or collected (or,
  after a crash, by the next private stream on that database);
- with ``bank=``, the stream persists and is shared: a new retriever (another process, after a
  restart) on the same bank continues it, with its ``buffer_idx`` and access times.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import datetime
import threading
import warnings
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    Callbacks,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever, LangSmithRetrieverParams
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr

from hindsight_langchain._common import EngineHandle, from_aware, resolve_engine, to_aware
from hindsight_langchain._relevance import StoreRelevance, store_relevance
from hindsight_langchain.search import check_k
from shared_core import ConfigurationError, MemoryEngine, MemoryItem
from shared_core.embedding_adapters import ForeignEmbedder
from shared_core.engine import AsyncMemoryEngine
from shared_core.errors import InvalidItemError, InvalidOptionError, InvalidQueryError
from shared_core.retain.prepare import coerce_items
from shared_core.storable import text_problem
from shared_core.storage.stream import MemoryStream, Metric, StreamAppend, StreamEntry

__all__ = ["TimeWeightedHindsightRetriever"]

_REAL_DT = datetime.datetime
_REAL_DATE = datetime.date
_STREAM_KEYS = ("last_accessed_at", "created_at", "buffer_idx")
_INTERNAL = "__tw"
# Where stores keep their embedding function, in order (FAISS(embeddings.embed_query, ...)
# keeps a bare function in ``embedding_function``).
_EMBEDDING_ATTRS = (
    "embeddings",
    "embedding_function",
    "embedding",
    "_embedding_function",
    "embedding_service",
)


def _get_hours_passed(time: datetime.datetime, ref_time: datetime.datetime) -> float:
    """Hours between two datetimes (as upstream); naive and aware values may be mixed (naive =
    local time)."""
    if (time.tzinfo is None) != (ref_time.tzinfo is None):
        time, ref_time = to_aware(time)[0], to_aware(ref_time)[0]
    return (time - ref_time).total_seconds() / 3600


def _now() -> datetime.datetime:
    # Looked up through the module at call time: langchain_core.utils.mock_now applies.
    return datetime.datetime.now()


def _store_embeddings(store: Any) -> Any:
    """The store's embedding function (an ``Embeddings`` or a ``text -> vector`` function)."""
    for attr in _EMBEDDING_ATTRS:
        try:
            found = getattr(store, attr, None)
        except (AttributeError, NotImplementedError):
            continue
        if found is not None and (callable(found) or hasattr(found, "embed_query")):
            return found
    return None


def _release(stream: MemoryStream, handle: EngineHandle) -> None:
    """Drop a private stream and close an owned engine (finaliser: must not see the
    retriever)."""
    if stream.ephemeral:
        with contextlib.suppress(Exception):  # the engine may already be closed
            stream.drop()
    handle.close()


def _check_query(query: Any) -> None:
    """A query the embedder can take, or the typed error (upstream scoring embeds it here,
    not through recall's checks)."""
    if not isinstance(query, str):
        raise InvalidQueryError(f"query must be a string, got {type(query).__name__}")
    problem = text_problem(query.replace("\x00", ""))  # NULs embed fine, as before
    if problem is not None:
        raise InvalidQueryError(f"query {problem}")


def _copy(index: int, document: Document) -> Document:
    try:
        return copy.deepcopy(document)
    except RecursionError as exc:
        raise InvalidItemError(index, "metadata is nested too deeply to copy") from exc


def _stream_time(index: int, document: Document, key: str) -> tuple[datetime.datetime, str]:
    try:
        return to_aware(document.metadata[key])
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidItemError(index, f"metadata[{key!r}]: {exc}") from exc


class TimeWeightedHindsightRetriever(BaseRetriever):
    """Recency-weighted retrieval over a Postgres memory stream; a drop-in for
    ``langchain_classic.retrievers.TimeWeightedVectorStoreRetriever``.

    Args (beyond the upstream fields):
        engine: a :class:`~shared_core.MemoryEngine` (not closed by the retriever).
        dsn: a Postgres DSN; the retriever opens (and :meth:`close` closes) an engine on it.
            Neither: the embedded server.
        bank: a named bank: the stream persists and is shared. ``None`` (default): a private
            stream, deleted on :meth:`close`.
        embeddings: embeddings to use instead of the vector store's.
        relevance_metric: the distance the vector store ranks by, for stores not recognised
            (see :data:`shared_core.storage.stream.Metric`).
        scoring: ``"upstream"`` (the LangChain formula, default) or ``"tempr"`` (the engine's
            full recall, its score multiplied by ``(1 - decay_rate) ** hours_since_access``).

    >>> retriever = TimeWeightedHindsightRetriever(  # doctest: +SKIP
    ...     vectorstore=faiss_store, decay_rate=0.99, k=1)
    >>> retriever.add_documents([Document(page_content="hello world")])  # doctest: +SKIP
    ['0196...']
    >>> retriever.invoke("hello")[0].metadata["buffer_idx"]  # doctest: +SKIP
    0
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    vectorstore: VectorStore | None = None
    """The store written by ``add_documents``, whose embedding function and relevance are used."""
    search_kwargs: dict[str, Any] = Field(default_factory=lambda: {"k": 100})
    """``k`` (candidates by relevance), optional ``score_threshold`` and ``filter`` (a dict of
    metadata equalities)."""
    memory_stream: list[Document] = Field(default_factory=list)
    """The stream as a plain list (``memory_stream[buffer_idx]``), mirrored from the bank."""
    decay_rate: float = Field(default=0.01)
    """The exponential decay factor used as ``(1.0 - decay_rate) ** hours_passed``."""
    k: int = 4
    """The maximum number of documents returned (override per call: ``invoke(q, k=2)``)."""
    other_score_keys: list[str] = Field(default_factory=list)
    """Metadata keys added to the score, e.g. ``"importance"``."""
    default_salience: float | None = None
    """Relevance given to recent memories the relevance search did not return."""

    bank: str | None = None
    scoring: Literal["upstream", "tempr"] = "upstream"
    embeddings: Any = None
    relevance_metric: Metric | None = None
    load_memory_stream: bool = True
    """Mirror the bank's stream into ``memory_stream``; ``False`` keeps it empty (huge banks)."""
    adopt_existing: bool = True
    """Give memories retained into a named bank by other means a place at the end of the
    stream."""
    budget: Literal["low", "mid", "high"] = "mid"
    """Recall budget for ``scoring="tempr"``."""
    max_tokens: int = 4096
    """Recall token budget for ``scoring="tempr"``."""

    _handle: EngineHandle = PrivateAttr()
    _stream: MemoryStream = PrivateAttr()
    _relevance: StoreRelevance = PrivateAttr()
    _finalizer: weakref.finalize[Any, Any] = PrivateAttr()
    _lock: threading.RLock = PrivateAttr(default_factory=threading.RLock)
    _positions: dict[int, int] = PrivateAttr(default_factory=dict)

    def __init__(
        self, *, engine: MemoryEngine | AsyncMemoryEngine | None = None, dsn: str | None = None, **data: Any
    ) -> None:
        if "k" in data:
            check_k(data["k"])  # before pydantic, which would take True as 1 and "3" as 3
        super().__init__(**data)
        rate = self.decay_rate
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0.0 <= rate <= 1.0:
            # (1 - rate) ** hours: outside [0, 1] it is negative or complex, not a decay.
            raise ConfigurationError(f"decay_rate must be a number between 0 and 1, got {rate!r}")
        given = self.embeddings
        if given is None and self.vectorstore is not None:
            given = _store_embeddings(self.vectorstore)
        if self.scoring == "tempr" and self.embeddings is None:
            given = None  # TEMPR recall: the engine's own model
        self._handle = resolve_engine(engine, dsn, given)
        try:
            self._stream = self.engine.stream(self.bank)
        except BaseException:
            self._handle.close()
            raise
        self._finalizer = weakref.finalize(self, _release, self._stream, self._handle)
        self._relevance = store_relevance(self.vectorstore, metric=self.relevance_metric)
        try:
            self._bootstrap()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ lifecycle
    @property
    def engine(self) -> MemoryEngine:
        """The engine this retriever runs on."""
        return self._handle.engine

    @property
    def bank_stream(self) -> MemoryStream:
        """The memory stream (bank ``stream.bank``) behind ``memory_stream``."""
        return self._stream

    def close(self) -> None:
        """Delete a private stream, and close the engine if this retriever opened it."""
        self._finalizer()

    def __enter__(self) -> TimeWeightedHindsightRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        store = type(self.vectorstore).__name__ if self.vectorstore is not None else None
        bank = repr(self.bank) if self.bank is not None else "private"
        return (
            f"{type(self).__name__}(bank={bank}, k={self.k}, "
            f"decay_rate={self.decay_rate}, scoring={self.scoring!r}, "
            f"memories={len(self.memory_stream)}, vectorstore={store}, "
            f"relevance={self._relevance.metric}, engine={self.engine!r})"
        )

    __str__ = __repr__

    def _bootstrap(self) -> None:
        given = list(self.memory_stream)
        if self.bank is None:
            self.memory_stream = []
            if given:  # seed the private stream from one built elsewhere (a pickled stream)
                self._add(given, {}, keep_objects=True, to_store=False)
            return
        self._stream.check_embedder()
        if self.adopt_existing:
            self._stream.adopt()
        stored = self._stream.entries() if (self.load_memory_stream or given) else []
        if given and not stored:
            self.memory_stream = []
            self._add(given, {}, keep_objects=True, to_store=False)
            return
        if given:
            if len(given) != len(stored):
                raise ConfigurationError(
                    f"memory_stream has {len(given)} documents but bank {self.bank!r} already "
                    f"holds a stream of {len(stored)}; pass the bank's stream, or none"
                )
            self.memory_stream = given
            self._positions = {e.index: i for i, e in enumerate(stored)}
            return
        if self.load_memory_stream:
            self.memory_stream = [self._entry_to_doc(e) for e in stored]
            self._positions = {e.index: i for i, e in enumerate(stored)}

    # ------------------------------------------------------------------ embeddings
    def _raw_documents(self, texts: list[str]) -> npt.NDArray[np.float32]:
        embedder = self.engine.embedder
        if isinstance(embedder, ForeignEmbedder):
            return embedder.raw_documents(texts)
        return embedder.embed_documents(texts)

    async def _araw_documents(self, texts: list[str]) -> npt.NDArray[np.float32]:
        embedder = self.engine.embedder
        if isinstance(embedder, ForeignEmbedder):
            return await embedder.araw_documents(texts)
        return await asyncio.to_thread(embedder.embed_documents, texts)

    def _raw_query(self, text: str) -> npt.NDArray[np.float32]:
        embedder = self.engine.embedder
        if isinstance(embedder, ForeignEmbedder):
            return embedder.raw_query(text)
        return embedder.embed_query(text)

    async def _araw_query(self, text: str) -> npt.NDArray[np.float32]:
        embedder = self.engine.embedder
        if isinstance(embedder, ForeignEmbedder):
            return await embedder.araw_query(text)
        return await asyncio.to_thread(embedder.embed_query, text)

    # ------------------------------------------------------------------ entries <-> documents
    @staticmethod
    def _entry_to_doc(entry: StreamEntry) -> Document:
        meta = dict(entry.metadata)
        internal = meta.pop(_INTERNAL, None) or {}
        meta.pop("buffer_idx", None)
        kinds: dict[str, str] = internal.get("kinds", {})
        for key, kind in kinds.items():
            if key in _STREAM_KEYS or key not in meta or not isinstance(meta[key], str):
                continue
            with contextlib.suppress(ValueError):
                meta[key] = (
                    _REAL_DATE.fromisoformat(meta[key])
                    if kind == "date"
                    else _REAL_DT.fromisoformat(meta[key])
                )
        meta["last_accessed_at"] = from_aware(entry.last_accessed_at, kinds.get("last_accessed_at", "naive"))
        meta["created_at"] = from_aware(entry.created_at, kinds.get("created_at", "naive"))
        meta["buffer_idx"] = entry.index
        content = internal.get("content")
        # As upstream, a document has an id only when it was given one.
        return Document(
            id=internal.get("id"), page_content=content if content is not None else entry.text, metadata=meta
        )

    def _materialise(self, entries: Sequence[StreamEntry]) -> list[Document]:
        """Documents for entries: the ``memory_stream`` objects (their access time refreshed
        from the bank) when mirrored, so returned documents are the stream's own, as upstream."""
        out = []
        with self._lock:
            for entry in entries:
                fresh = self._entry_to_doc(entry)
                pos = self._positions.get(entry.index)
                if (
                    pos is not None
                    and pos < len(self.memory_stream)
                    and self.memory_stream[pos].metadata.get("buffer_idx") == entry.index
                ):
                    mirrored = self.memory_stream[pos]
                    mirrored.metadata["last_accessed_at"] = fresh.metadata["last_accessed_at"]
                    out.append(mirrored)
                else:
                    out.append(fresh)
        return out

    def _extend_mirror(self, entries: Sequence[StreamEntry]) -> None:
        with self._lock:
            for entry in entries:
                if entry.index not in self._positions:
                    self._positions[entry.index] = len(self.memory_stream)
                    self.memory_stream.append(self._entry_to_doc(entry))

    def _mirror_needs(self, indexes: Sequence[int]) -> int | None:
        """The first stream position to load when other writers extended the stream."""
        if not self.load_memory_stream:
            return None
        with self._lock:
            missing = [i for i in indexes if i not in self._positions]
            if not missing:
                return None
            return min(min(missing), max(self._positions, default=-1) + 1)

    def _sync_mirror(self, indexes: Sequence[int]) -> None:
        start = self._mirror_needs(indexes)
        if start is not None:
            self._extend_mirror(self._stream.entries(start))

    async def _async_sync_mirror(self, indexes: Sequence[int]) -> None:
        start = self._mirror_needs(indexes)
        if start is not None:
            self._extend_mirror(await self._stream.aentries(start))

    # ------------------------------------------------------------------ scoring (upstream API)
    def _document_get_date(self, field: str, document: Document) -> datetime.datetime:
        """The value of a date field (epoch floats become naive local datetimes, as upstream;
        ISO strings are parsed instead of failing later)."""
        if field in document.metadata:
            value = document.metadata[field]
            if isinstance(value, float):
                return _REAL_DT.fromtimestamp(value)
            if isinstance(value, str):
                return to_aware(value)[0]
            return value  # type: ignore[no-any-return]
        return _now()

    def _get_combined_score(
        self, document: Document, vector_relevance: float | None, current_time: datetime.datetime
    ) -> float:
        """``(1 - decay_rate) ** hours_passed + Σ other_score_keys + relevance`` (upstream)."""
        hours_passed = _get_hours_passed(current_time, self._document_get_date("last_accessed_at", document))
        score: float = (1.0 - self.decay_rate) ** hours_passed
        for key in self.other_score_keys:
            if key in document.metadata:
                score += document.metadata[key]
        if vector_relevance is not None:
            score += vector_relevance
        return score

    def _search_options(self) -> tuple[int, float | None, dict[str, Any]]:
        kwargs = dict(self.search_kwargs)
        k = kwargs.pop("k", 4)
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            raise ConfigurationError(f"search_kwargs['k'] must be a non-negative integer, got {k!r}")
        threshold = kwargs.pop("score_threshold", None)
        flt = kwargs.pop("filter", None)
        if flt is not None and not isinstance(flt, Mapping):
            raise ConfigurationError(
                "search_kwargs['filter'] must be a dict of metadata "
                "equalities (callable filters are not supported)"
            )
        return k, float(threshold) if threshold is not None else None, dict(flt or {})

    def _salient(
        self, entries: list[StreamEntry], threshold: float | None
    ) -> dict[int, tuple[Document, float]]:
        docs = self._materialise(entries)
        out: dict[int, tuple[Document, float]] = {}
        for entry, doc in zip(entries, docs, strict=True):
            assert entry.distance is not None
            relevance = float(self._relevance.fn(entry.distance))
            if threshold is None or relevance >= threshold:
                out[entry.index] = (doc, relevance)
        return out

    def get_salient_docs(self, query: str) -> dict[int, tuple[Document, float]]:
        """``{buffer_idx: (document, relevance)}`` for the store's top ``search_kwargs["k"]``
        memories for ``query``, nearest first, with the store's own relevance (upstream
        signature)."""
        k, threshold, flt = self._search_options()
        rel = self._relevance
        entries = self._stream.search(
            self._raw_query(query), k=k, metric=rel.metric, normalise=rel.normalise, filter=flt
        )
        self._sync_mirror([e.index for e in entries])
        return self._salient(entries, threshold)

    async def aget_salient_docs(self, query: str) -> dict[int, tuple[Document, float]]:
        """Async twin of :meth:`get_salient_docs`."""
        k, threshold, flt = self._search_options()
        rel = self._relevance
        entries = await self._stream.asearch(
            await self._araw_query(query), k=k, metric=rel.metric, normalise=rel.normalise, filter=flt
        )
        await self._async_sync_mirror([e.index for e in entries])
        return self._salient(entries, threshold)

    def _recent(self, entries: list[StreamEntry]) -> dict[int, tuple[Document, float | None]]:
        docs = self._materialise(entries)
        return {e.index: (d, self.default_salience) for e, d in zip(entries, docs, strict=True)}

    def _rescore(
        self, docs_and_scores: Mapping[Any, tuple[Document, float | None]], k: int
    ) -> tuple[list[Document], datetime.datetime]:
        current_time = _now()
        rescored = [
            (doc, self._get_combined_score(doc, relevance, current_time))
            for doc, relevance in docs_and_scores.values()
        ]
        rescored.sort(key=lambda x: x[1], reverse=True)  # stable: ties keep candidate order
        return [doc for doc, _ in rescored[:k]], current_time

    def _accessed(self, docs: Sequence[Document], current_time: datetime.datetime) -> list[int]:
        indexes = []
        with self._lock:
            for doc in docs:
                doc.metadata["last_accessed_at"] = current_time
                idx = doc.metadata.get("buffer_idx")
                if isinstance(idx, int):
                    indexes.append(idx)
        return indexes

    def _get_rescored_docs(
        self, docs_and_scores: Mapping[Any, tuple[Document, float | None]], k: int | None = None
    ) -> list[Document]:
        """Score, keep the best ``k``, and mark them accessed now (in the bank too)."""
        result, current_time = self._rescore(docs_and_scores, self.k if k is None else k)
        self._stream.touch(self._accessed(result, current_time), at=to_aware(current_time)[0])
        return result

    async def _aget_rescored_docs(
        self, docs_and_scores: Mapping[Any, tuple[Document, float | None]], k: int | None = None
    ) -> list[Document]:
        result, current_time = self._rescore(docs_and_scores, self.k if k is None else k)
        await self._stream.atouch(self._accessed(result, current_time), at=to_aware(current_time)[0])
        return result

    # ------------------------------------------------------------------ retrieval
    def _call_k(self, kwargs: Mapping[str, Any]) -> int:
        # Upstream's retriever takes no option at invoke (a TypeError); ours takes k=. Anything
        # else (filter=, a typo) would be ignored silently: refuse it, named.
        for name in kwargs:
            if name != "k":
                raise InvalidOptionError(
                    name,
                    "the time-weighted retriever takes only k= at invoke "
                    "(metadata filters: HindsightRetriever)",
                )
        k = kwargs.get("k", self.k)
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            raise ConfigurationError(f"k must be a non-negative integer, got {k!r}")
        return k

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        _check_query(query)
        k = self._call_k(kwargs)
        if k == 0:
            return []
        if self.scoring == "tempr":
            return self._tempr(query, k)
        entries = self._stream.recent(k)
        self._sync_mirror([e.index for e in entries])
        docs_and_scores = self._recent(entries)
        docs_and_scores.update(self.get_salient_docs(query))
        return self._get_rescored_docs(docs_and_scores, k)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        _check_query(query)
        k = self._call_k(kwargs)
        if k == 0:
            return []
        if self.scoring == "tempr":
            return await self._atempr(query, k)
        entries = await self._stream.arecent(k)
        await self._async_sync_mirror([e.index for e in entries])
        docs_and_scores = self._recent(entries)
        docs_and_scores.update(await self.aget_salient_docs(query))
        return await self._aget_rescored_docs(docs_and_scores, k)

    # ------------------------------------------------------------------ scoring="tempr"
    def _recall_kwargs(self) -> dict[str, Any]:
        return {"bank": self._stream.bank, "budget": self.budget, "max_tokens": self.max_tokens}

    def _tempr_rank(
        self, recalled: Sequence[Any], entries: list[StreamEntry], k: int
    ) -> tuple[list[Document], datetime.datetime]:
        by_id = {e.memory_id: e for e in entries}
        current_time = _now()
        order = [m for m in recalled if m.id in by_id]
        docs = self._materialise([by_id[m.id] for m in order])
        best: dict[int, tuple[Document, float]] = {}
        for memory, doc in zip(order, docs, strict=True):
            hours = _get_hours_passed(current_time, self._document_get_date("last_accessed_at", doc))
            score = float(memory.score) * (1.0 - self.decay_rate) ** hours
            idx = doc.metadata["buffer_idx"]
            if idx not in best or best[idx][1] < score:
                best[idx] = (doc, score)
        scored = sorted(best.values(), key=lambda x: x[1], reverse=True)
        return [doc for doc, _ in scored[:k]], current_time

    def _tempr(self, query: str, k: int) -> list[Document]:
        result = self.engine.recall(query, **self._recall_kwargs())
        entries = self._stream.by_ids([m.id for m in result.memories])
        docs, now = self._tempr_rank(result.memories, entries, k)
        self._stream.touch(self._accessed(docs, now), at=to_aware(now)[0])
        return docs

    async def _atempr(self, query: str, k: int) -> list[Document]:
        result = await self.engine.arecall(query, **self._recall_kwargs())
        entries = await self._stream.aby_ids([m.id for m in result.memories])
        docs, now = self._tempr_rank(result.memories, entries, k)
        await self._stream.atouch(self._accessed(docs, now), at=to_aware(now)[0])
        return docs

    # ------------------------------------------------------------------ writing
    def _prepare(
        self,
        documents: Sequence[Document],
        current_time: Any,
        ids: Sequence[str | None] | None,
        keep_objects: bool,
    ) -> tuple[list[Document], list[MemoryItem], list[datetime.datetime], list[datetime.datetime]]:
        if current_time is None:
            current_time = _now()
        try:
            to_aware(current_time)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ConfigurationError(f"current_time: {exc}") from exc
        if ids is not None and len(ids) != len(documents):
            raise ConfigurationError(f"ids has {len(ids)} values for {len(documents)} documents")
        copies = list(documents) if keep_objects else [_copy(i, d) for i, d in enumerate(documents)]
        items: list[MemoryItem] = []
        accessed: list[datetime.datetime] = []
        created: list[datetime.datetime] = []
        for i, doc in enumerate(copies):
            if not isinstance(doc, Document):
                raise TypeError(f"documents[{i}] is a {type(doc).__name__}, not a Document")
            if ids is not None and ids[i] is not None:
                doc.id = ids[i]
            if "last_accessed_at" not in doc.metadata:
                doc.metadata["last_accessed_at"] = current_time
            if "created_at" not in doc.metadata:
                doc.metadata["created_at"] = current_time
            la, la_kind = _stream_time(i, doc, "last_accessed_at")
            ca, ca_kind = _stream_time(i, doc, "created_at")
            kinds: dict[str, str] = {"last_accessed_at": la_kind, "created_at": ca_kind}
            stored: dict[str, Any] = {}
            for key, value in doc.metadata.items():
                if key in _STREAM_KEYS:
                    continue
                if isinstance(value, _REAL_DT):
                    kinds[key] = "aware" if value.tzinfo is not None else "naive"
                elif isinstance(value, _REAL_DATE):
                    kinds[key] = "date"
                stored[key] = value
            internal: dict[str, Any] = {"kinds": kinds}
            if doc.id is not None:
                internal["id"] = doc.id
            if doc.page_content != doc.page_content.strip():
                internal["content"] = doc.page_content
            stored[_INTERNAL] = internal
            items.append(MemoryItem(text=doc.page_content, metadata=stored, mentioned_at=ca))
            accessed.append(la)
            created.append(ca)
        # The core's checks (text, metadata, ...) before the texts are embedded: a lone
        # surrogate used to reach the tokenizer first, as its TypeError.
        coerce_items(items)
        return copies, items, accessed, created

    def _number(self, copies: list[Document], appended: StreamAppend) -> list[str]:
        """Give the copies their ``buffer_idx``; return the ids for the vector store (the
        document's own id, else its memory id)."""
        out = []
        for i, (doc, memory_id) in enumerate(zip(copies, appended.memory_ids, strict=True)):
            doc.metadata["buffer_idx"] = appended.base + i
            out.append(doc.id if doc.id is not None else memory_id)
        return out

    def _mirror(self, copies: list[Document], base: int) -> None:
        """Append the added documents themselves to ``memory_stream`` (as upstream); when
        other writers extended the stream meanwhile, the caller reloads the tail instead."""
        with self._lock:
            if self.load_memory_stream and base == (max(self._positions) + 1 if self._positions else 0):
                for i, doc in enumerate(copies):
                    self._positions[base + i] = len(self.memory_stream)
                    self.memory_stream.append(doc)

    def _store_kwargs(self, kwargs: Mapping[str, Any], ids: list[str]) -> dict[str, Any]:
        forwarded = {k: v for k, v in kwargs.items() if k != "ids"}
        forwarded["ids"] = ids
        return forwarded

    def _add(
        self,
        documents: Sequence[Document],
        kwargs: Mapping[str, Any],
        *,
        keep_objects: bool = False,
        to_store: bool = True,
    ) -> list[str]:
        if not documents:
            return []
        copies, items, la, ca = self._prepare(
            documents, kwargs.get("current_time"), kwargs.get("ids"), keep_objects
        )
        vectors = self._raw_documents([d.page_content for d in copies])
        appended = self._stream.append(items, accessed_at=la, created_at=ca, vectors=list(vectors))
        ids = self._number(copies, appended)
        if to_store and self.vectorstore is not None:
            try:
                self.vectorstore.add_documents(copies, **self._store_kwargs(kwargs, ids))
            except BaseException:
                self._stream.delete(appended.indexes)  # all or nothing, as one add
                raise
        self._mirror(copies, appended.base)
        self._sync_mirror([appended.base + len(copies) - 1])
        return ids

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Add documents to the stream and to the vector store; return their ids.

        As upstream: inputs are not mutated; ``last_accessed_at`` / ``created_at`` default to
        ``kwargs["current_time"]`` or now; ``buffer_idx`` is the position in the stream; the
        store gets the same documents (and ``kwargs``) with ``ids=`` the returned ids (the
        documents' own, else their memory ids). Also accepts epoch floats, ISO strings and
        aware datetimes for the two timestamps. A store that fails leaves the stream as it
        was.
        """
        return self._add(documents, kwargs)

    async def aadd_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Async twin of :meth:`add_documents`."""
        if not documents:
            return []
        copies, items, la, ca = self._prepare(documents, kwargs.get("current_time"), kwargs.get("ids"), False)
        vectors = await self._araw_documents([d.page_content for d in copies])
        appended = await self._stream.aappend(items, accessed_at=la, created_at=ca, vectors=list(vectors))
        ids = self._number(copies, appended)
        if self.vectorstore is not None:
            try:
                await self.vectorstore.aadd_documents(copies, **self._store_kwargs(kwargs, ids))
            except BaseException:
                await self._stream.adelete(appended.indexes)
                raise
        self._mirror(copies, appended.base)
        await self._async_sync_mirror([appended.base + len(copies) - 1])
        return ids

    # ------------------------------------------------------------------ old names
    def get_relevant_documents(
        self,
        query: str,
        *,
        callbacks: Callbacks = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        run_name: str | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Deprecated LangChain 0.x name, kept so old notebooks run: use :meth:`invoke`."""
        warnings.warn(
            "get_relevant_documents is deprecated (removed in langchain-core 1.0); use invoke",
            DeprecationWarning,
            stacklevel=2,
        )
        config: dict[str, Any] = {
            "callbacks": callbacks,
            "tags": tags,
            "metadata": metadata,
            "run_name": run_name,
        }
        return self.invoke(
            query,
            {k: v for k, v in config.items() if v is not None},  # type: ignore[arg-type]
            **kwargs,
        )

    async def aget_relevant_documents(
        self,
        query: str,
        *,
        callbacks: Callbacks = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        run_name: str | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Deprecated LangChain 0.x name: use :meth:`ainvoke`."""
        warnings.warn(
            "aget_relevant_documents is deprecated (removed in langchain-core 1.0); use ainvoke",
            DeprecationWarning,
            stacklevel=2,
        )
        config: dict[str, Any] = {
            "callbacks": callbacks,
            "tags": tags,
            "metadata": metadata,
            "run_name": run_name,
        }
        return await self.ainvoke(
            query,
            {k: v for k, v in config.items() if v is not None},  # type: ignore[arg-type]
            **kwargs,
        )

    def _get_ls_params(self, **kwargs: Any) -> LangSmithRetrieverParams:
        params = super()._get_ls_params(**kwargs)
        params["ls_vector_store_provider"] = (
            type(self.vectorstore).__name__ if self.vectorstore is not None else "HindsightPostgres"
        )
        embedder = self.engine.embedder
        params["ls_embedding_provider"] = type(getattr(embedder, "wrapped", embedder)).__name__
        params["ls_embedding_model"] = embedder.model_name
        return params
