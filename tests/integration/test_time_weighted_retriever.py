"""TimeWeightedHindsightRetriever: the upstream unit tests (ported), the notebook flow, and
persistence, against the real embedded Postgres."""

from __future__ import annotations

import asyncio
import datetime
import uuid
import warnings
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.utils import mock_now
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from hindsight_langchain import TimeWeightedHindsightRetriever
from hindsight_langchain.time_weighted import _get_hours_passed
from shared_core import (
    DimensionMismatchError,
    EmbeddingModelMismatchError,
    MemoryEngine,
)


# ---------------------------------------------------------------- ported upstream unit tests
def _get_example_memories(k: int = 4) -> list[Document]:
    return [
        Document(
            page_content="foo",
            metadata={"buffer_idx": i, "last_accessed_at": datetime.datetime(2023, 4, 14, 12, 0)},
        )
        for i in range(k)
    ]


class MockVectorStore(VectorStore):
    """Upstream's mock store. Ours only asks a store for its embeddings (None here), so
    relevance comes from the bank, computed with the engine's embedder."""

    def add_texts(
        self, texts: Iterable[str], metadatas: list[dict[str, Any]] | None = None, **kwargs: Any
    ) -> list[str]:
        return list(texts)

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return []

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> MockVectorStore:
        return cls()


@pytest.fixture
def time_weighted_retriever(engine: MemoryEngine, bank: str) -> TimeWeightedHindsightRetriever:
    return TimeWeightedHindsightRetriever(
        engine=engine, bank=bank, vectorstore=MockVectorStore(), memory_stream=_get_example_memories()
    )


def test__get_hours_passed() -> None:
    time1 = datetime.datetime(2023, 4, 14, 14, 30)
    time2 = datetime.datetime(2023, 4, 14, 12, 0)
    assert _get_hours_passed(time1, time2) == 2.5


def test_get_combined_score(time_weighted_retriever: TimeWeightedHindsightRetriever) -> None:
    document = Document(
        page_content="Test document", metadata={"last_accessed_at": datetime.datetime(2023, 4, 14, 12, 0)}
    )
    vector_salience = 0.7
    current_time = datetime.datetime(2023, 4, 14, 14, 30)
    combined = time_weighted_retriever._get_combined_score(document, vector_salience, current_time)
    expected = (1.0 - time_weighted_retriever.decay_rate) ** 2.5 + vector_salience
    assert combined == pytest.approx(expected)


def _check_salient(
    retriever: TimeWeightedHindsightRetriever, docs_and_scores: dict[int, tuple[Document, float]]
) -> None:
    assert isinstance(docs_and_scores, dict)
    assert sorted(docs_and_scores) == [0, 1, 2, 3]
    for idx, (doc, relevance) in docs_and_scores.items():
        # upstream: the memory_stream's own documents, with their relevance
        assert doc is retriever.memory_stream[idx]
        assert doc.page_content == "foo" and doc.metadata["buffer_idx"] == idx
        assert -1.0 <= relevance <= 1.0


def test_get_salient_docs(time_weighted_retriever: TimeWeightedHindsightRetriever) -> None:
    _check_salient(time_weighted_retriever, time_weighted_retriever.get_salient_docs("Test query"))


async def test_aget_salient_docs(time_weighted_retriever: TimeWeightedHindsightRetriever) -> None:
    _check_salient(time_weighted_retriever, await time_weighted_retriever.aget_salient_docs("Test query"))


def _check_accessed_now(retriever: TimeWeightedHindsightRetriever, docs: list[Document]) -> None:
    assert isinstance(docs, list)
    assert len(docs) == 4
    now = datetime.datetime.now()
    for doc in docs:
        assert now - timedelta(hours=1) < doc.metadata["last_accessed_at"] <= now
    for d in retriever.memory_stream:
        assert now - timedelta(hours=1) < d.metadata["last_accessed_at"] <= now


def test_invoke(time_weighted_retriever: TimeWeightedHindsightRetriever) -> None:
    _check_accessed_now(time_weighted_retriever, time_weighted_retriever.invoke("Test query"))


async def test_ainvoke(time_weighted_retriever: TimeWeightedHindsightRetriever) -> None:
    _check_accessed_now(time_weighted_retriever, await time_weighted_retriever.ainvoke("Test query"))


def test_add_documents(time_weighted_retriever: TimeWeightedHindsightRetriever) -> None:
    documents = [Document(page_content="test_add_documents document")]
    added = time_weighted_retriever.add_documents(documents)
    assert isinstance(added, list)
    assert len(added) == 1
    assert time_weighted_retriever.memory_stream[-1].page_content == documents[0].page_content


async def test_aadd_documents(time_weighted_retriever: TimeWeightedHindsightRetriever) -> None:
    documents = [Document(page_content="test_add_documents document")]
    added = await time_weighted_retriever.aadd_documents(documents)
    assert isinstance(added, list)
    assert len(added) == 1
    assert time_weighted_retriever.memory_stream[-1].page_content == documents[0].page_content


# ---------------------------------------------------------------- the notebook, import changed
class _Store(InMemoryVectorStore):
    def _select_relevance_score_fn(self) -> Any:
        return lambda score: score


def _notebook(engine: MemoryEngine, bank: str, decay_rate: float) -> TimeWeightedHindsightRetriever:
    embeddings = DeterministicFakeEmbedding(size=384)
    retriever = TimeWeightedHindsightRetriever(
        engine=engine, bank=bank, vectorstore=_Store(embeddings), decay_rate=decay_rate, k=1
    )
    yesterday = datetime.datetime.now() - timedelta(days=1)
    retriever.add_documents([Document(page_content="hello world", metadata={"last_accessed_at": yesterday})])
    retriever.add_documents([Document(page_content="hello foo")])
    return retriever


def test_notebook_low_decay_rate(engine: MemoryEngine, bank: str) -> None:
    retriever = _notebook(engine, bank, 1e-25)
    docs = retriever.invoke("hello world")
    assert [d.page_content for d in docs] == ["hello world"]
    assert set(docs[0].metadata) == {"last_accessed_at", "created_at", "buffer_idx"}
    assert docs[0].metadata["buffer_idx"] == 0


@pytest.mark.parametrize("query", ["hello world", "hello foo", "goodbye"])
def test_notebook_high_decay_rate_matches_upstream(engine: MemoryEngine, bank: str, query: str) -> None:
    from langchain_classic.retrievers import TimeWeightedVectorStoreRetriever

    retriever = _notebook(engine, bank, 0.999)
    upstream = TimeWeightedVectorStoreRetriever(
        vectorstore=_Store(DeterministicFakeEmbedding(size=384)), decay_rate=0.999, k=1
    )
    yesterday = datetime.datetime.now() - timedelta(days=1)
    upstream.add_documents([Document(page_content="hello world", metadata={"last_accessed_at": yesterday})])
    upstream.add_documents([Document(page_content="hello foo")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # upstream: "relevance scores must be ..."
        want = [d.page_content for d in upstream.invoke(query)]
    assert [d.page_content for d in retriever.invoke(query)] == want


def test_notebook_virtual_time(engine: MemoryEngine, bank: str) -> None:
    retriever = _notebook(engine, bank, 0.999)
    tomorrow = datetime.datetime(2030, 2, 3, 10, 11)
    with mock_now(tomorrow):
        docs = retriever.invoke("hello world")
    assert [d.page_content for d in docs] == ["hello world"]
    assert docs[0].metadata["last_accessed_at"] == tomorrow
    assert type(docs[0].metadata["last_accessed_at"]).__name__ == "MockDateTime"
    # written to Postgres: a re-opened retriever sees the access
    again = TimeWeightedHindsightRetriever(
        engine=engine, bank=bank, decay_rate=0.999, k=1, embeddings=retriever.vectorstore.embeddings
    )
    assert again.memory_stream[0].metadata["last_accessed_at"] == tomorrow


# ---------------------------------------------------------------- what upstream cannot do
def test_memories_survive_a_new_retriever(engine: MemoryEngine, bank: str) -> None:
    first = TimeWeightedHindsightRetriever(engine=engine, bank=bank)
    ids = first.add_documents(
        [Document(page_content=f"memory {i}", metadata={"importance": i}) for i in range(5)]
    )
    assert len(ids) == 5 and first.bank_stream.entries()[2].memory_id == ids[2]
    assert first.memory_stream[2].id is None  # as upstream: an id only when one was given
    second = TimeWeightedHindsightRetriever(engine=engine, bank=bank, other_score_keys=["importance"])
    assert type(second.memory_stream) is list
    assert [d.page_content for d in second.memory_stream] == [f"memory {i}" for i in range(5)]
    assert [d.metadata["buffer_idx"] for d in second.memory_stream] == list(range(5))
    assert second.memory_stream[3].metadata["importance"] == 3
    top = second.invoke("anything", k=2)
    assert [d.metadata["importance"] for d in top] == [4, 3]
    assert top[0] is second.memory_stream[4]


def test_inputs_not_mutated_and_timestamps_of_any_kind(engine: MemoryEngine, bank: str) -> None:
    retriever = TimeWeightedHindsightRetriever(engine=engine, bank=bank, decay_rate=0.5)
    epoch = datetime.datetime(2024, 1, 1, 12, 0).timestamp()
    aware = datetime.datetime(2024, 1, 1, 12, 0, tzinfo=datetime.UTC)
    docs = [
        Document(page_content="epoch", metadata={"last_accessed_at": epoch}),
        Document(page_content="iso", metadata={"last_accessed_at": "2024-01-01T12:00:00Z"}),
        Document(
            page_content="aware", metadata={"last_accessed_at": aware, "when": datetime.date(2024, 1, 2)}
        ),
    ]
    before = [dict(d.metadata) for d in docs]
    retriever.add_documents(docs, current_time=datetime.datetime(2024, 1, 1, 13, 0))
    assert [d.metadata for d in docs] == before
    reopened = TimeWeightedHindsightRetriever(engine=engine, bank=bank)
    by_text = {d.page_content: d for d in reopened.memory_stream}
    assert by_text["epoch"].metadata["last_accessed_at"] == pytest.approx(epoch)
    assert by_text["aware"].metadata["last_accessed_at"] == aware
    assert by_text["aware"].metadata["when"] == datetime.date(2024, 1, 2)
    assert by_text["iso"].metadata["created_at"] == datetime.datetime(2024, 1, 1, 13, 0)
    with mock_now(datetime.datetime(2024, 1, 1, 14, 0)):
        assert len(reopened.invoke("x", k=3)) == 3  # upstream raises TypeError on the ISO string


def test_k_kwarg_and_old_name(engine: MemoryEngine, bank: str) -> None:
    retriever = TimeWeightedHindsightRetriever(engine=engine, bank=bank)
    retriever.add_documents([Document(page_content=f"doc {i}") for i in range(6)])
    assert len(retriever.invoke("doc", k=2)) == 2
    assert len(retriever.invoke("doc")) == 4
    assert retriever.invoke("doc", k=0) == []
    with pytest.warns(DeprecationWarning):
        assert len(retriever.get_relevant_documents("doc")) == 4


def test_a_bank_refuses_another_model(engine: MemoryEngine, bank: str) -> None:
    """Never a silent substitution: a named bank written by one model refuses another (same
    dimension: the model; other dimension: the dimension), naming both."""
    written = TimeWeightedHindsightRetriever(engine=engine, bank=bank)  # all-MiniLM-L6-v2
    written.add_documents([Document(page_content="Alice works at Google.")])
    with pytest.raises(EmbeddingModelMismatchError, match=r"all-MiniLM-L6-v2.*DeterministicFake"):
        TimeWeightedHindsightRetriever(
            engine=engine, bank=bank, vectorstore=_Store(DeterministicFakeEmbedding(size=384))
        )
    with pytest.raises(DimensionMismatchError, match=r"384.*16"):
        TimeWeightedHindsightRetriever(
            engine=engine, bank=bank, embeddings=DeterministicFakeEmbedding(size=16)
        )


def test_private_streams_are_separate_and_leave_nothing(engine: MemoryEngine) -> None:
    store = _Store(DeterministicFakeEmbedding(size=384))
    first = TimeWeightedHindsightRetriever(engine=engine, vectorstore=store)
    second = TimeWeightedHindsightRetriever(engine=engine, vectorstore=store)
    first.add_documents([Document(page_content="first's memory")])
    second.add_documents([Document(page_content="second's memory")])
    assert [d.page_content for d in first.invoke("memory")] == ["first's memory"]
    assert [d.page_content for d in second.invoke("memory")] == ["second's memory"]
    assert len(first.memory_stream) == len(second.memory_stream) == 1
    banks = {first.bank_stream.bank, second.bank_stream.bank}
    assert banks <= {b.bank for b in engine.banks()}
    first.close()
    del second  # collected: its finaliser drops the bank too
    import gc

    gc.collect()
    assert not banks & {b.bank for b in engine.banks()}
    third = TimeWeightedHindsightRetriever(engine=engine, vectorstore=store)
    assert third.memory_stream == [] and third.invoke("memory") == []
    third.close()


def test_concurrent_adds_get_distinct_indexes(engine: MemoryEngine, bank: str) -> None:
    retriever = TimeWeightedHindsightRetriever(engine=engine, bank=bank)
    other = TimeWeightedHindsightRetriever(engine=engine, bank=bank)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        list(
            pool.map(
                lambda i: (retriever if i % 2 else other).add_documents(
                    [Document(page_content=f"c{i}-{j}") for j in range(3)]
                ),
                range(8),
            )
        )
    fresh = TimeWeightedHindsightRetriever(engine=engine, bank=bank)
    assert [d.metadata["buffer_idx"] for d in fresh.memory_stream] == list(range(24))
    # the mirrors caught up with the other writer
    retriever.invoke("c1", k=1)
    assert len(retriever.memory_stream) == 24
    results = retriever.batch(["c1", "c2", "c3"], config={"max_concurrency": 3})
    assert all(len(r) == 4 for r in results)


async def test_async_path_and_existing_memories_adopted(engine: MemoryEngine, bank: str) -> None:
    engine.retain(["Alice joined Google in March 2021.", "Bob moved to Paris."], bank=bank, progress=False)
    retriever = TimeWeightedHindsightRetriever(engine=engine, bank=bank, k=2)
    assert [d.metadata["buffer_idx"] for d in retriever.memory_stream] == [0, 1]
    await retriever.aadd_documents([Document(page_content="Carol likes tea.")])
    docs = await retriever.ainvoke("Who likes tea?")
    assert docs[0].page_content == "Carol likes tea."
    results = await asyncio.gather(*(retriever.ainvoke(q) for q in ["Alice", "Bob", "tea"]))
    assert all(len(r) == 2 for r in results)


def test_tempr_scoring(engine: MemoryEngine, bank: str) -> None:
    retriever = TimeWeightedHindsightRetriever(engine=engine, bank=bank, scoring="tempr", k=2)
    retriever.add_documents(
        [
            Document(page_content="Alice joined Google in March 2021."),
            Document(page_content="Bob moved to Paris in 2019."),
            Document(page_content="The weather was sunny."),
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        docs = retriever.invoke("Where does Alice work?")
    assert docs and docs[0].page_content.startswith("Alice")
    assert len(docs) <= 2
    assert "TimeWeightedHindsightRetriever(bank=" in repr(retriever)


def test_engine_from_dsn_is_owned(engine: MemoryEngine) -> None:
    with TimeWeightedHindsightRetriever(dsn=engine.dsn, bank=f"dsn-{uuid.uuid4().hex[:8]}") as r:
        assert r.engine is not engine
        r.add_documents([Document(page_content="owned engine")])
        assert r.invoke("owned")[0].page_content == "owned engine"


def test_add_documents_writes_the_store_with_the_same_ids(engine: MemoryEngine) -> None:
    store = _Store(DeterministicFakeEmbedding(size=384))
    with TimeWeightedHindsightRetriever(engine=engine, vectorstore=store) as retriever:
        ids = retriever.add_documents([Document(page_content="a"), Document(page_content="b", id="mine")])
        assert ids[1] == "mine"
        stored = store.get_by_ids(ids)
        assert [d.page_content for d in stored] == ["a", "b"]
        assert [d.metadata["buffer_idx"] for d in stored] == [0, 1]


class _FailingStore(_Store):
    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        raise RuntimeError("store unavailable")


def test_a_failing_store_leaves_the_stream_as_it_was(engine: MemoryEngine) -> None:
    store = _FailingStore(DeterministicFakeEmbedding(size=384))
    with TimeWeightedHindsightRetriever(engine=engine, vectorstore=store) as retriever:
        with pytest.raises(RuntimeError, match="store unavailable"):
            retriever.add_documents([Document(page_content="lost")])
        assert retriever.memory_stream == []
        assert retriever.bank_stream.entries() == []


def test_the_stores_embedding_function_is_used_never_the_builtin(engine: MemoryEngine) -> None:
    """FAISS(embeddings.embed_query, ...) holds a bare function: it embeds, at its 1536
    dimensions, in the same database as the default 384-d banks."""
    import faiss
    from fake_embeddings import HashEmbeddings
    from langchain_community.docstore.in_memory import InMemoryDocstore
    from langchain_community.vectorstores import FAISS

    emb = HashEmbeddings(1536)
    store = FAISS(emb.embed_query, faiss.IndexFlatL2(1536), InMemoryDocstore({}), {})
    with TimeWeightedHindsightRetriever(engine=engine, vectorstore=store, k=1) as retriever:
        retriever.add_documents([Document(page_content="hello world")])
        info = {b.bank: b for b in engine.banks()}[retriever.bank_stream.bank]
        assert (info.embedding_model, info.embedding_dimension) == ("HashEmbeddings(size=1536)", 1536)
        assert store.index.ntotal == 1
        assert retriever.invoke("hello world")[0].page_content == "hello world"
