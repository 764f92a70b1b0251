"""Differential tests: TimeWeightedHindsightRetriever vs LangChain's TimeWeightedVectorStoreRetriever.

Random sequences of add / invoke / advance-the-clock steps run against both, under ``mock_now``
(a virtual clock, so both see the same "now"), over the same kind of vector store with the same
deterministic 1536-d embeddings: FAISS ``IndexFlatL2`` (squared L2, Euclidean relevance; also
built from ``embeddings.embed_query`` and with ``normalize_L2``), FAISS with a custom relevance
function, and an ``InMemoryVectorStore`` (cosine). Every invoke must return the same documents
in the same order with the same metadata, the memory streams must agree at the end, and the
store must hold what upstream's holds.
"""

from __future__ import annotations

import datetime
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import faiss
import pytest
from fake_embeddings import HashEmbeddings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_classic.retrievers import TimeWeightedVectorStoreRetriever
from langchain_community.docstore.in_memory import InMemoryDocstore
from langchain_community.vectorstores import FAISS
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.utils import mock_now
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from hindsight_langchain import TimeWeightedHindsightRetriever
from shared_core import MemoryEngine

DIM = 1536
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]


class _CosineStore(InMemoryVectorStore):
    """InMemoryVectorStore returns cosine similarity; relevance = similarity. (Upstream's
    InMemoryVectorStore raises NotImplementedError for a relevance function.)"""

    def _select_relevance_score_fn(self) -> Any:
        return lambda score: score


def _faiss(emb: Embeddings, **kwargs: Any) -> FAISS:
    return FAISS(emb, faiss.IndexFlatL2(DIM), InMemoryDocstore({}), {}, **kwargs)


def _inverse(distance: float) -> float:
    return 1.0 / (1.0 + distance)


STORES: dict[str, Callable[[Embeddings], VectorStore]] = {
    "faiss-l2": _faiss,
    "faiss-l2-function": lambda emb: FAISS(emb.embed_query, faiss.IndexFlatL2(DIM), InMemoryDocstore({}), {}),
    "faiss-l2-normalize": lambda emb: _faiss(emb, normalize_L2=True),
    "faiss-custom-relevance": lambda emb: _faiss(emb, relevance_score_fn=_inverse),
    "inmemory-cosine": _CosineStore,
}


@pytest.fixture(scope="module")
def raw_embeddings() -> HashEmbeddings:
    return HashEmbeddings(DIM, normalised=False)


@pytest.fixture(scope="module")
def engine_1536(engine: MemoryEngine, raw_embeddings: HashEmbeddings) -> Iterator[MemoryEngine]:
    """1536-d banks in the test database, beside the default model's 384-d ones."""
    with engine.with_embedder(raw_embeddings) as eng:
        yield eng


_add = st.tuples(
    st.just("add"),
    st.lists(
        st.tuples(
            st.sampled_from(WORDS),
            st.integers(0, 3),
            st.one_of(st.none(), st.integers(-48, 0)),
            st.one_of(st.none(), st.floats(0, 1, allow_nan=False)),
        ),
        min_size=1,
        max_size=3,
    ),
)
_invoke = st.tuples(st.just("invoke"), st.sampled_from(WORDS))
_advance = st.tuples(st.just("advance"), st.integers(1, 72))
_steps = st.lists(st.one_of(_add, _invoke, _advance), min_size=2, max_size=8)


def _view(docs: list[Document]) -> list[tuple[str, int, Any, Any, Any]]:
    return [
        (
            d.page_content,
            d.metadata["buffer_idx"],
            d.metadata["last_accessed_at"],
            d.metadata["created_at"],
            d.metadata.get("importance"),
        )
        for d in docs
    ]


@pytest.mark.parametrize("store", sorted(STORES))
def test_same_documents_as_upstream(
    engine_1536: MemoryEngine, raw_embeddings: HashEmbeddings, store: str
) -> None:
    make = STORES[store]

    @settings(
        max_examples=8,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(
        steps=_steps,
        decay_rate=st.sampled_from([0.01, 0.3, 0.5, 0.99]),
        k=st.integers(1, 4),
        search_k=st.integers(1, 6),
        default_salience=st.sampled_from([None, 0.25]),
        with_importance=st.booleans(),
    )
    def run(
        steps: list[tuple[Any, ...]],
        decay_rate: float,
        k: int,
        search_k: int,
        default_salience: float | None,
        with_importance: bool,
    ) -> None:
        common: dict[str, Any] = {
            "decay_rate": decay_rate,
            "k": k,
            "search_kwargs": {"k": search_k},
            "default_salience": default_salience,
            "other_score_keys": ["importance"] if with_importance else [],
        }
        upstream = TimeWeightedVectorStoreRetriever(vectorstore=make(raw_embeddings), **common)
        ours_store = make(raw_embeddings)
        ours = TimeWeightedHindsightRetriever(engine=engine_1536, vectorstore=ours_store, **common)
        try:
            _play(upstream, ours, steps)
            assert _view(ours.memory_stream) == _view(upstream.memory_stream)
            if isinstance(ours_store, FAISS):
                assert ours_store.index.ntotal == upstream.vectorstore.index.ntotal  # type: ignore[attr-defined]
        finally:
            ours.close()

    run()


def _play(
    upstream: TimeWeightedVectorStoreRetriever,
    ours: TimeWeightedHindsightRetriever,
    steps: list[tuple[Any, ...]],
) -> None:
    clock = datetime.datetime(2024, 3, 1, 9, 0, 0, 123456)
    counter = 0
    for step in steps:
        if step[0] == "advance":
            clock += datetime.timedelta(hours=step[1])
            continue
        with mock_now(clock), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # upstream: relevance outside [0, 1]
            if step[0] == "add":
                docs = []
                for word, n, accessed_hours_ago, importance in step[1]:
                    counter += 1  # distinct texts: no exact ties between documents
                    metadata: dict[str, Any] = {}
                    if accessed_hours_ago is not None:
                        metadata["last_accessed_at"] = clock + datetime.timedelta(hours=accessed_hours_ago)
                    if importance is not None:
                        metadata["importance"] = importance
                    docs.append(Document(page_content=f"{word} {n} memory {counter}", metadata=metadata))
                assert len(upstream.add_documents(docs)) == len(ours.add_documents(docs))
            else:
                want = upstream.invoke(step[1])
                got = ours.invoke(step[1])
                assert _view(got) == _view(want), step


@pytest.mark.parametrize("normalised", [True, False], ids=["unit-vectors", "raw-vectors"])
@pytest.mark.parametrize("store", sorted(STORES))
def test_relevance_matches_upstream(engine_1536: MemoryEngine, store: str, normalised: bool) -> None:
    """The store's own relevance, from Postgres, to 1e-6 of what the store itself gives."""
    emb = HashEmbeddings(DIM, normalised=normalised)
    texts = [f"{w} {i}" for i, w in enumerate(WORDS)]
    upstream_store = STORES[store](emb)
    upstream_store.add_documents([Document(page_content=t) for t in texts])
    with TimeWeightedHindsightRetriever(
        engine=engine_1536, vectorstore=STORES[store](emb), search_kwargs={"k": 5}
    ) as ours:
        ours.add_documents([Document(page_content=t) for t in texts])
        for query in ["alpha 0", "golf", "something else"]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                want = upstream_store.similarity_search_with_relevance_scores(query, k=5)
            got = ours.get_salient_docs(query)
            assert [d.page_content for d, _ in got.values()] == [d.page_content for d, _ in want]
            for (_, mine), (_, theirs) in zip(got.values(), want, strict=True):
                assert mine == pytest.approx(float(theirs), rel=1e-6, abs=1e-6)
