"""``TimeWeightedHindsightRetriever``: a drop-in for LangChain's ``TimeWeightedVectorStoreRetriever``.

Change only the import::

    # from langchain_classic.retrievers import TimeWeightedVectorStoreRetriever
    from hindsight_langchain import TimeWeightedHindsightRetriever as TimeWeightedVectorStoreRetriever

    retriever = TimeWeightedVectorStoreRetriever(vectorstore=vectorstore, decay_rate=1e-25, k=1)
    retriever.add_documents([Document(page_content="hello world")])
    retriever.invoke("hello world")

Same fields and defaults, same ``add_documents`` / ``invoke`` / ``ainvoke`` and the same score,
``(1 - decay_rate) ** hours_since_last_access + Σ other_score_keys + relevance``, over the same
candidates (the last ``k`` memories of the stream plus the top ``search_kwargs["k"]`` by cosine
relevance). The difference: memories, their ``buffer_idx`` and their ``last_accessed_at`` live in
a Postgres bank, so they survive restarts, are shared between processes, and never need the
vector store to echo ``buffer_idx`` back.

Embeddings: when a ``vectorstore`` (or ``embeddings=``) is given, its embedding function embeds
documents and queries, so relevance matches the upstream retriever over that store. The
database stores vectors of one dimension (384 for the default model); if the given embeddings
produce another dimension the retriever warns once and falls back to the engine's embedder
(``on_dimension_mismatch="raise"`` raises :class:`~shared_core.ConfigurationError` instead).
The vector store itself is never written to.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import datetime
import threading
import warnings
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
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever, LangSmithRetrieverParams
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr

from hindsight_langchain import _tw_sql as tw
from hindsight_langchain._common import EngineHandle, from_aware, resolve_engine, to_aware
from shared_core import ConfigurationError, MemoryEngine, MemoryItem
from shared_core.config import DEFAULT_BANK
from shared_core.engine import AsyncMemoryEngine
from shared_core.retain.prepare import json_dumps
from shared_core.storage.plan import Plan

__all__ = ["TimeWeightedHindsightRetriever"]

_REAL_DT = datetime.datetime
_REAL_DATE = datetime.date
_STREAM_KEYS = ("last_accessed_at", "created_at", "buffer_idx")
_INTERNAL = "__tw"
_PENDING = "__tw_pending"


def _get_hours_passed(time: datetime.datetime, ref_time: datetime.datetime) -> float:
    """Hours between two datetimes (as upstream); naive and aware values may be mixed (naive =
    local time)."""
    if (time.tzinfo is None) != (ref_time.tzinfo is None):
        time, ref_time = to_aware(time)[0], to_aware(ref_time)[0]
    return (time - ref_time).total_seconds() / 3600


def _now() -> datetime.datetime:
    # Looked up through the module at call time: langchain_core.utils.mock_now applies.
    return datetime.datetime.now()


class TimeWeightedHindsightRetriever(BaseRetriever):
    """Recency-weighted retrieval over a persistent memory bank; a drop-in for
    ``langchain_classic.retrievers.TimeWeightedVectorStoreRetriever``.

    Args (beyond the upstream fields):
        engine: a :class:`~shared_core.MemoryEngine` (not closed by the retriever).
        dsn: a Postgres DSN; the retriever opens (and :meth:`close` closes) an engine on it.
            Neither: the embedded server.
        bank: the memory bank holding the stream (default ``"default"``).
        scoring: ``"upstream"`` (the LangChain formula, default) or ``"tempr"`` (the engine's
            full recall, its score multiplied by ``(1 - decay_rate) ** hours_since_access``).
        embeddings: embeddings to use instead of ``vectorstore.embeddings``.

    >>> from langchain_core.documents import Document  # doctest: +SKIP
    >>> retriever = TimeWeightedHindsightRetriever(engine=engine, bank="agent", k=1,  # doctest: +SKIP
    ...                                            decay_rate=0.99)
    >>> retriever.add_documents([Document(page_content="hello world")])  # doctest: +SKIP
    ['0196...']
    >>> retriever.invoke("hello")[0].metadata["buffer_idx"]  # doctest: +SKIP
    0
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    vectorstore: VectorStore | None = None
    """Optional: only its embedding function is used (memories live in the bank)."""
    search_kwargs: dict[str, Any] = Field(default_factory=lambda: {"k": 100})
    """``k`` (candidates by relevance), optional ``score_threshold`` and ``filter`` (a dict of
    metadata equalities)."""
    memory_stream: list[Document] = Field(default_factory=list)
    """The stream as a plain list (``memory_stream[buffer_idx]``), loaded from the bank."""
    decay_rate: float = Field(default=0.01)
    """The exponential decay factor used as ``(1.0 - decay_rate) ** hours_passed``."""
    k: int = 4
    """The maximum number of documents returned (override per call: ``invoke(q, k=2)``)."""
    other_score_keys: list[str] = Field(default_factory=list)
    """Metadata keys added to the score, e.g. ``"importance"``."""
    default_salience: float | None = None
    """Relevance given to recent memories the relevance search did not return."""

    bank: str = DEFAULT_BANK
    scoring: Literal["upstream", "tempr"] = "upstream"
    embeddings: Embeddings | None = None
    exact_search: bool = True
    """Exact cosine top-k (as a flat store); ``False`` uses the HNSW index (approximate)."""
    load_memory_stream: bool = True
    """Mirror the bank's stream into ``memory_stream``; ``False`` keeps it empty (huge banks)."""
    adopt_existing: bool = True
    """Give memories retained by other means a place at the end of the stream."""
    on_dimension_mismatch: Literal["fallback", "raise"] = "fallback"
    budget: Literal["low", "mid", "high"] = "mid"
    """Recall budget for ``scoring="tempr"``."""
    max_tokens: int = 4096
    """Recall token budget for ``scoring="tempr"``."""

    _handle: EngineHandle = PrivateAttr()
    _lock: threading.RLock = PrivateAttr(default_factory=threading.RLock)
    _positions: dict[int, int] = PrivateAttr(default_factory=dict)
    _locator: dict[int, tuple[str, str | None]] = PrivateAttr(default_factory=dict)
    _custom_ok: bool | None = PrivateAttr(default=None)

    def __init__(self, *, engine: MemoryEngine | AsyncMemoryEngine | None = None,
                 dsn: str | None = None, **data: Any) -> None:
        super().__init__(**data)
        self._handle = resolve_engine(engine, dsn)
        try:
            self._bootstrap()
        except BaseException:
            self._handle.close()
            raise

    # ------------------------------------------------------------------ lifecycle
    @property
    def engine(self) -> MemoryEngine:
        """The engine this retriever runs on."""
        return self._handle.engine

    def close(self) -> None:
        """Close the engine if this retriever opened it (``dsn=`` or embedded default)."""
        self._handle.close()

    def __enter__(self) -> TimeWeightedHindsightRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        store = type(self.vectorstore).__name__ if self.vectorstore is not None else None
        return (f"{type(self).__name__}(bank={self.bank!r}, k={self.k}, "
                f"decay_rate={self.decay_rate}, scoring={self.scoring!r}, "
                f"memories={len(self.memory_stream)}, vectorstore={store}, "
                f"engine={self.engine!r})")

    __str__ = __repr__

    def _bootstrap(self) -> None:
        if self.adopt_existing:
            self.engine.run(tw.adopt_plan(self.bank))
        given = list(self.memory_stream)
        stored = self.engine.run(tw.load_stream_plan(self.bank, 0)) \
            if (self.load_memory_stream or given) else []
        if given and not stored:
            # Seed an empty bank from a stream built elsewhere (e.g. a pickled upstream stream).
            self.memory_stream = []
            self._add(given, current_time=None, keep_objects=True)
            return
        if given:
            if len(given) != len(stored):
                raise ConfigurationError(
                    f"memory_stream has {len(given)} documents but bank {self.bank!r} already "
                    f"holds a stream of {len(stored)}; pass the bank's stream, or none")
            self.memory_stream = given
            self._positions = {int(r["buffer_idx"]): i for i, r in enumerate(stored)}
            self._remember_locations(stored)
            return
        if self.load_memory_stream:
            self.memory_stream = [self._row_to_doc(r) for r in stored]
            self._positions = {int(r["buffer_idx"]): i for i, r in enumerate(stored)}
            self._remember_locations(stored)

    # ------------------------------------------------------------------ embeddings
    def _custom_embeddings(self) -> Embeddings | None:
        if self.scoring == "tempr" or self._custom_ok is False:
            return None
        if self.embeddings is not None:
            return self.embeddings
        if self.vectorstore is not None:
            try:
                return self.vectorstore.embeddings
            except (AttributeError, NotImplementedError):
                return None
        return None

    def _dimension_ok(self, n: int) -> bool:
        expected = self.engine.embedder.dimension
        if n == expected:
            self._custom_ok = True
            return True
        if self._custom_ok:
            raise ConfigurationError(f"embeddings changed dimension ({n}, was {expected})")
        message = (f"the given embeddings produce {n}-dimensional vectors but this database "
                   f"stores {expected} dimensions ({self.engine.embedder.model_name})")
        if self.on_dimension_mismatch == "raise":
            raise ConfigurationError(message + "; use embeddings of that dimension")
        warnings.warn(message + "; falling back to the engine's embedder", RuntimeWarning,
                      stacklevel=3)
        self._custom_ok = False
        return False

    def _embed_documents(self, texts: list[str]) -> list[npt.NDArray[np.float32]] | None:
        emb = self._custom_embeddings()
        if emb is None or not texts:
            return None
        vectors = emb.embed_documents(texts)
        if not self._dimension_ok(len(vectors[0])):
            return None
        return [np.asarray(v, dtype=np.float32) for v in vectors]

    async def _aembed_documents(self, texts: list[str]) -> list[npt.NDArray[np.float32]] | None:
        emb = self._custom_embeddings()
        if emb is None or not texts:
            return None
        vectors = await emb.aembed_documents(texts)
        if not self._dimension_ok(len(vectors[0])):
            return None
        return [np.asarray(v, dtype=np.float32) for v in vectors]

    def _embed_query(self, text: str) -> npt.NDArray[np.float32]:
        emb = self._custom_embeddings()
        if emb is not None:
            vector = emb.embed_query(text)
            if self._dimension_ok(len(vector)):
                return np.asarray(vector, dtype=np.float32)
        return self.engine.embedder.embed_query(text)

    async def _aembed_query(self, text: str) -> npt.NDArray[np.float32]:
        emb = self._custom_embeddings()
        if emb is not None:
            vector = await emb.aembed_query(text)
            if self._dimension_ok(len(vector)):
                return np.asarray(vector, dtype=np.float32)
        return await asyncio.to_thread(self.engine.embedder.embed_query, text)

    # ------------------------------------------------------------------ rows <-> documents
    def _row_to_doc(self, row: Mapping[str, Any]) -> Document:
        meta = dict(row["metadata"])
        internal = meta.pop(_INTERNAL, None) or {}
        meta.pop(_PENDING, None)
        meta.pop("buffer_idx", None)
        kinds: dict[str, str] = internal.get("kinds", {})
        for key, kind in kinds.items():
            if key in _STREAM_KEYS or key not in meta or not isinstance(meta[key], str):
                continue
            with contextlib.suppress(ValueError):
                meta[key] = (_REAL_DATE.fromisoformat(meta[key]) if kind == "date"
                             else _REAL_DT.fromisoformat(meta[key]))
        created = row["created_at"]
        accessed = row["last_accessed_at"] or created
        meta["last_accessed_at"] = from_aware(accessed, kinds.get("last_accessed_at", "naive"))
        meta["created_at"] = from_aware(created, kinds.get("created_at", "naive"))
        if row.get("buffer_idx") is not None:
            meta["buffer_idx"] = int(row["buffer_idx"])
        content = internal.get("content")
        return Document(id=internal.get("id") or row["id"],
                        page_content=content if content is not None else row["page_content"],
                        metadata=meta)

    def _remember_locations(self, rows: Sequence[Mapping[str, Any]]) -> None:
        for row in rows:
            if row.get("buffer_idx") is not None:
                self._locator[int(row["buffer_idx"])] = (row["id"], row["chunk_id"])

    def _materialise(self, rows: Sequence[Mapping[str, Any]]) -> list[Document]:
        """Documents for rows: the ``memory_stream`` objects (refreshed from the bank) when
        mirrored, so returned documents are the stream's own, as upstream."""
        out = []
        with self._lock:
            self._remember_locations(rows)
            for row in rows:
                fresh = self._row_to_doc(row)
                idx = row.get("buffer_idx")
                pos = self._positions.get(int(idx)) if idx is not None else None
                if pos is not None and pos < len(self.memory_stream) and \
                        self.memory_stream[pos].metadata.get("buffer_idx") == idx:
                    mirrored = self.memory_stream[pos]
                    mirrored.metadata["last_accessed_at"] = fresh.metadata["last_accessed_at"]
                    out.append(mirrored)
                else:
                    out.append(fresh)
        return out

    def _extend_mirror(self, rows: Sequence[Mapping[str, Any]]) -> None:
        with self._lock:
            for row in rows:
                idx = int(row["buffer_idx"])
                if idx not in self._positions:
                    self._positions[idx] = len(self.memory_stream)
                    self.memory_stream.append(self._row_to_doc(row))
            self._remember_locations(rows)

    def _mirror_needs(self, rows: Sequence[Mapping[str, Any]]) -> int | None:
        """The first stream index to load when other writers extended the stream."""
        if not self.load_memory_stream:
            return None
        with self._lock:
            missing = [int(r["buffer_idx"]) for r in rows
                       if r.get("buffer_idx") is not None
                       and int(r["buffer_idx"]) not in self._positions]
            if not missing:
                return None
            known = max(self._positions, default=-1)
            return min(min(missing), known + 1)

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

    def _get_combined_score(self, document: Document, vector_relevance: float | None,
                            current_time: datetime.datetime) -> float:
        """``(1 - decay_rate) ** hours_passed + Σ other_score_keys + relevance`` (upstream)."""
        hours_passed = _get_hours_passed(current_time,
                                         self._document_get_date("last_accessed_at", document))
        score: float = (1.0 - self.decay_rate) ** hours_passed
        for key in self.other_score_keys:
            if key in document.metadata:
                score += document.metadata[key]
        if vector_relevance is not None:
            score += vector_relevance
        return score

    def _salient_query(self, vector: npt.NDArray[np.float32]) -> Plan[list[dict[str, Any]]]:
        kwargs = dict(self.search_kwargs)
        k = int(kwargs.pop("k", 4))
        threshold = kwargs.pop("score_threshold", None)
        flt = kwargs.pop("filter", None)
        if flt is not None and not isinstance(flt, Mapping):
            raise ConfigurationError("search_kwargs['filter'] must be a dict of metadata "
                                     "equalities (callable filters are not supported)")
        return tw.salient_plan(self.bank, vector, k, exact=self.exact_search,
                               filter_json=json_dumps(dict(flt or {})),
                               threshold=float(threshold) if threshold is not None else None)

    def _salient_result(self, rows: list[dict[str, Any]]) -> dict[int, tuple[Document, float]]:
        docs = self._materialise(rows)
        return {int(r["buffer_idx"]): (d, float(r["relevance"])) for r, d in zip(rows, docs,
                                                                                 strict=True)}

    def get_salient_docs(self, query: str) -> dict[int, tuple[Document, float]]:
        """``{buffer_idx: (document, relevance)}`` for the top ``search_kwargs["k"]`` memories by
        cosine relevance to ``query``, best first (upstream signature)."""
        rows = self.engine.run(self._salient_query(self._embed_query(query)))
        self._sync_mirror(rows)
        return self._salient_result(rows)

    async def aget_salient_docs(self, query: str) -> dict[int, tuple[Document, float]]:
        """Async twin of :meth:`get_salient_docs`."""
        rows = await self.engine.arun(self._salient_query(await self._aembed_query(query)))
        await self._async_sync_mirror(rows)
        return self._salient_result(rows)

    def _sync_mirror(self, rows: Sequence[Mapping[str, Any]]) -> None:
        start = self._mirror_needs(rows)
        if start is not None:
            self._extend_mirror(self.engine.run(tw.load_stream_plan(self.bank, start)))

    async def _async_sync_mirror(self, rows: Sequence[Mapping[str, Any]]) -> None:
        start = self._mirror_needs(rows)
        if start is not None:
            self._extend_mirror(await self.engine.arun(tw.load_stream_plan(self.bank, start)))

    def _recent(self, rows: list[dict[str, Any]]) -> dict[int, tuple[Document, float | None]]:
        docs = self._materialise(rows)
        return {int(r["buffer_idx"]): (d, self.default_salience)
                for r, d in zip(rows, docs, strict=True)}

    def _rescore(self, docs_and_scores: Mapping[Any, tuple[Document, float | None]], k: int
                 ) -> tuple[list[Document], datetime.datetime]:
        current_time = _now()
        rescored = [(doc, self._get_combined_score(doc, relevance, current_time))
                    for doc, relevance in docs_and_scores.values()]
        rescored.sort(key=lambda x: x[1], reverse=True)  # stable: ties keep candidate order
        return [doc for doc, _ in rescored[:k]], current_time

    def _touch(self, docs: Sequence[Document], current_time: datetime.datetime
               ) -> Plan[None]:
        ids: list[str] = []
        chunks: list[str] = []
        unknown: list[int] = []
        with self._lock:
            for doc in docs:
                doc.metadata["last_accessed_at"] = current_time
                idx = doc.metadata.get("buffer_idx")
                where = self._locator.get(idx) if isinstance(idx, int) else None
                if where is None:
                    if isinstance(idx, int):
                        unknown.append(idx)
                elif where[1] is not None:
                    chunks.append(where[1])
                else:
                    ids.append(where[0])
        return tw.touch_plan(self.bank, to_aware(current_time)[0], ids, chunks, unknown)

    def _get_rescored_docs(self, docs_and_scores: Mapping[Any, tuple[Document, float | None]],
                           k: int | None = None) -> list[Document]:
        """Score, keep the best ``k``, and mark them accessed now (in the bank too)."""
        result, current_time = self._rescore(docs_and_scores, self.k if k is None else k)
        self.engine.run(self._touch(result, current_time))
        return result

    async def _aget_rescored_docs(self, docs_and_scores: Mapping[Any, tuple[Document,
                                                                            float | None]],
                                  k: int | None = None) -> list[Document]:
        result, current_time = self._rescore(docs_and_scores, self.k if k is None else k)
        await self.engine.arun(self._touch(result, current_time))
        return result

    # ------------------------------------------------------------------ retrieval
    def _call_k(self, kwargs: Mapping[str, Any]) -> int:
        k = kwargs.get("k", self.k)
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            raise ConfigurationError(f"k must be a non-negative integer, got {k!r}")
        return k

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        k = self._call_k(kwargs)
        if k == 0:
            return []
        if self.scoring == "tempr":
            return self._tempr(query, k)
        rows = self.engine.run(tw.recent_plan(self.bank, k))
        self._sync_mirror(rows)
        docs_and_scores = self._recent(rows)
        docs_and_scores.update(self.get_salient_docs(query))
        return self._get_rescored_docs(docs_and_scores, k)

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[Document]:
        k = self._call_k(kwargs)
        if k == 0:
            return []
        if self.scoring == "tempr":
            return await self._atempr(query, k)
        rows = await self.engine.arun(tw.recent_plan(self.bank, k))
        await self._async_sync_mirror(rows)
        docs_and_scores = self._recent(rows)
        docs_and_scores.update(await self.aget_salient_docs(query))
        return await self._aget_rescored_docs(docs_and_scores, k)

    # ------------------------------------------------------------------ scoring="tempr"
    def _recall_kwargs(self) -> dict[str, Any]:
        return {"bank": self.bank, "budget": self.budget, "max_tokens": self.max_tokens}

    def _tempr_rank(self, recalled: Sequence[Any], rows: list[dict[str, Any]], k: int
                    ) -> tuple[list[Document], datetime.datetime]:
        by_id = {r["id"]: r for r in rows}
        current_time = _now()
        order = [m for m in recalled if m.id in by_id]
        docs = self._materialise([by_id[m.id] for m in order])
        scored = []
        for memory, doc in zip(order, docs, strict=True):
            hours = _get_hours_passed(current_time,
                                      self._document_get_date("last_accessed_at", doc))
            scored.append((doc, float(memory.score) * (1.0 - self.decay_rate) ** hours))
        scored.sort(key=lambda x: x[1], reverse=True)
        return [doc for doc, _ in scored[:k]], current_time

    def _tempr(self, query: str, k: int) -> list[Document]:
        result = self.engine.recall(query, **self._recall_kwargs())
        rows = self.engine.run(tw.rows_by_id_plan(self.bank, [m.id for m in result.memories]))
        docs, now = self._tempr_rank(result.memories, rows, k)
        self.engine.run(self._touch(docs, now))
        return docs

    async def _atempr(self, query: str, k: int) -> list[Document]:
        result = await self.engine.arecall(query, **self._recall_kwargs())
        rows = await self.engine.arun(tw.rows_by_id_plan(self.bank,
                                                         [m.id for m in result.memories]))
        docs, now = self._tempr_rank(result.memories, rows, k)
        await self.engine.arun(self._touch(docs, now))
        return docs

    # ------------------------------------------------------------------ writing
    def _prepare(self, documents: Sequence[Document], current_time: Any,
                 ids: Sequence[str | None] | None, vectors: list[npt.NDArray[np.float32]] | None,
                 keep_objects: bool
                 ) -> tuple[list[Document], list[MemoryItem], list[datetime.datetime],
                            list[datetime.datetime]]:
        if current_time is None:
            current_time = _now()
        copies = list(documents) if keep_objects else [copy.deepcopy(d) for d in documents]
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
            la, la_kind = to_aware(doc.metadata["last_accessed_at"])
            ca, ca_kind = to_aware(doc.metadata["created_at"])
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
            stored[_PENDING] = i
            vector = vectors[i] if vectors is not None else None
            items.append(MemoryItem(text=doc.page_content, metadata=stored, mentioned_at=ca,
                                    embedding=vector.tolist() if vector is not None else None))
            accessed.append(la)
            created.append(ca)
        return copies, items, accessed, created

    def _add_flow(self, items: list[MemoryItem], la: list[datetime.datetime],
                  ca: list[datetime.datetime],
                  vectors: list[npt.NDArray[np.float32]] | None) -> Plan[tuple[int, list[str]]]:
        # One transaction: lock the bank's stream, retain, then number the new entries.
        yield tw.Query(tw.LOCK, {"key": tw.lock_key(self.bank)}, fetch="one")
        ids: list[str] = yield from self.engine.retain_plan(items, bank=self.bank)
        result: tuple[int, list[str]] = yield from tw.finalise_plan(
            self.bank, ids, la, ca, lambda rel: vectors[rel] if vectors is not None else None,
            lock=False)
        return result

    def _commit(self, copies: list[Document], base: int, memory_ids: list[str]) -> list[str]:
        out = []
        with self._lock:
            for i, (doc, memory_id) in enumerate(zip(copies, memory_ids, strict=True)):
                idx = base + i
                doc.metadata["buffer_idx"] = idx
                if doc.id is None:
                    doc.id = memory_id
                out.append(doc.id)
                self._locator[idx] = (memory_id, None)
            if self.load_memory_stream and base == (max(self._positions) + 1
                                                    if self._positions else 0):
                for i, doc in enumerate(copies):
                    self._positions[base + i] = len(self.memory_stream)
                    self.memory_stream.append(doc)
        # Otherwise other writers extended the stream meanwhile: the caller reloads the tail.
        return out

    def _add(self, documents: Sequence[Document], current_time: Any, keep_objects: bool = False,
             ids: Sequence[str | None] | None = None) -> list[str]:
        if not documents:
            return []
        vectors = self._embed_documents([d.page_content for d in documents])
        copies, items, la, ca = self._prepare(documents, current_time, ids, vectors, keep_objects)
        base, memory_ids = self.engine.run(self._add_flow(items, la, ca, vectors))
        out = self._commit(copies, base, memory_ids)
        self._sync_mirror([{"buffer_idx": base + len(copies) - 1}])
        return out

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Add documents to the stream (and the bank); return their ids.

        As upstream: inputs are not mutated; ``last_accessed_at`` / ``created_at`` default to
        ``kwargs["current_time"]`` or now; ``buffer_idx`` is the position in the stream. Also
        accepts epoch floats, ISO strings and aware datetimes for those two keys, and ``ids=``.
        """
        return self._add(documents, kwargs.get("current_time"), ids=kwargs.get("ids"))

    async def aadd_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Async twin of :meth:`add_documents`."""
        if not documents:
            return []
        vectors = await self._aembed_documents([d.page_content for d in documents])
        copies, items, la, ca = self._prepare(documents, kwargs.get("current_time"),
                                              kwargs.get("ids"), vectors, False)
        base, memory_ids = await self.engine.arun(self._add_flow(items, la, ca, vectors))
        out = self._commit(copies, base, memory_ids)
        await self._async_sync_mirror([{"buffer_idx": base + len(copies) - 1}])
        return out

    # ------------------------------------------------------------------ old names
    def get_relevant_documents(self, query: str, *, callbacks: Callbacks = None,
                               tags: list[str] | None = None,
                               metadata: dict[str, Any] | None = None,
                               run_name: str | None = None, **kwargs: Any) -> list[Document]:
        """Deprecated LangChain 0.x name, kept so old notebooks run: use :meth:`invoke`."""
        warnings.warn("get_relevant_documents is deprecated (removed in langchain-core 1.0); "
                      "use invoke", DeprecationWarning, stacklevel=2)
        config: dict[str, Any] = {"callbacks": callbacks, "tags": tags, "metadata": metadata,
                                  "run_name": run_name}
        return self.invoke(query, {k: v for k, v in config.items() if v is not None},  # type: ignore[arg-type]
                           **kwargs)

    async def aget_relevant_documents(self, query: str, *, callbacks: Callbacks = None,
                                      tags: list[str] | None = None,
                                      metadata: dict[str, Any] | None = None,
                                      run_name: str | None = None, **kwargs: Any
                                      ) -> list[Document]:
        """Deprecated LangChain 0.x name: use :meth:`ainvoke`."""
        warnings.warn("aget_relevant_documents is deprecated (removed in langchain-core 1.0); "
                      "use ainvoke", DeprecationWarning, stacklevel=2)
        config: dict[str, Any] = {"callbacks": callbacks, "tags": tags, "metadata": metadata,
                                  "run_name": run_name}
        return await self.ainvoke(query, {k: v for k, v in config.items() if v is not None},  # type: ignore[arg-type]
                                  **kwargs)

    def _get_ls_params(self, **kwargs: Any) -> LangSmithRetrieverParams:
        params = super()._get_ls_params(**kwargs)
        params["ls_vector_store_provider"] = "HindsightPostgres"
        emb = self._custom_embeddings()
        params["ls_embedding_provider"] = (type(emb).__name__ if emb is not None
                                           else type(self.engine.embedder).__name__)
        return params

