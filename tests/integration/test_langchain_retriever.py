"""HindsightRetriever (LangChain) against the real engine."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from hindsight_langchain import HindsightRetriever
from shared_core import MemoryEngine

STORY = [
    Document(
        page_content="Alice joined Google in March 2021 as an engineer.",
        metadata={"occurred_at": "2021-03-01T00:00:00Z", "tags": ["alice", "work"], "source": "hr"},
    ),
    Document(
        page_content="Bob moved to Paris in the summer of 2019.",
        metadata={"timestamp": datetime.datetime(2019, 7, 1).timestamp(), "tags": ["bob"]},
    ),
    Document(
        page_content="Alice adopted a cat named Miso.",
        metadata={"date": datetime.datetime(2022, 5, 2, 10, 0), "tags": ["alice"]},
    ),
]


@pytest.fixture
def retriever(engine: MemoryEngine, bank: str) -> HindsightRetriever:
    r = HindsightRetriever(engine=engine, bank=bank)
    ids = r.add_documents(STORY)
    assert len(ids) == 3
    return r


def test_documents_carry_memory_fields(retriever: HindsightRetriever) -> None:
    docs = retriever.invoke("Where does Alice work?")
    assert docs and docs[0].page_content.startswith("Alice joined Google")
    top = docs[0]
    assert top.id is not None and len(top.id) == 36
    meta = top.metadata
    assert meta["fact_type"] == "world" and meta["source"] == "hr"
    assert meta["occurred_start"].startswith("2021-03-01")
    assert set(meta["tags"]) == {"alice", "work"}
    assert isinstance(meta["score"], float) and "rrf" in meta["scores"]
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)


def test_dates_from_epoch_and_naive_datetime(retriever: HindsightRetriever) -> None:
    by_text = {d.page_content: d for d in retriever.invoke("Bob Paris cat Miso", k=None)}
    bob = by_text["Bob moved to Paris in the summer of 2019."]
    assert bob.metadata["occurred_start"].startswith("2019-0")
    miso = by_text["Alice adopted a cat named Miso."]
    assert miso.metadata["occurred_start"].startswith("2022-05-0")


def test_per_call_overrides(retriever: HindsightRetriever) -> None:
    assert len(retriever.invoke("Alice", k=1)) == 1
    only_bob = retriever.invoke("Who moved?", memory_tags=["bob"], k=None)
    assert [d.page_content for d in only_bob] == ["Bob moved to Paris in the summer of 2019."]
    both = retriever.invoke("Alice", memory_tags=["alice", "work"], tags_match="all_strict")
    assert [d.metadata["tags"] for d in both] == [["alice", "work"]]
    assert retriever.invoke("Alice", k=0) == []
    with pytest.raises(TypeError, match="unknown retriever option"):
        retriever.invoke("Alice", colour="red")


async def test_async_and_batch(retriever: HindsightRetriever) -> None:
    docs = await retriever.ainvoke("Where does Alice work?", k=2)
    assert len(docs) <= 2 and docs[0].page_content.startswith("Alice joined Google")
    many = retriever.batch(["Alice", "Bob", "Miso"], config={"max_concurrency": 3})
    assert all(many)
    amany = await retriever.abatch(["Alice", "Bob", "Miso"])
    assert [[d.id for d in r] for r in amany] == [[d.id for d in r] for r in many]


def test_re_adding_a_document_id_replaces_it(engine: MemoryEngine, bank: str) -> None:
    r = HindsightRetriever(engine=engine, bank=bank)
    r.add_documents([Document(id="doc-1", page_content="The meeting is on Monday.")])
    r.add_documents([Document(id="doc-1", page_content="The meeting moved to Tuesday.")])
    assert engine.stats(bank).memories == 1
    assert r.invoke("When is the meeting?")[0].metadata["document_id"] == "doc-1"


def test_callbacks_lcel_and_repr(retriever: HindsightRetriever) -> None:
    seen: dict[str, Any] = {}

    class Handler(BaseCallbackHandler):
        def on_retriever_start(self, serialized: Any, query: str, **kwargs: Any) -> None:
            seen["start"] = query
            seen["metadata"] = kwargs.get("metadata")

        def on_retriever_end(self, documents: Any, **kwargs: Any) -> None:
            seen["end"] = len(documents)

    chain = retriever | RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs))
    text = chain.invoke("Alice", config={"callbacks": [Handler()]})
    assert "Alice" in text and seen["start"] == "Alice" and seen["end"] >= 1
    assert seen["metadata"]["ls_retriever_name"] == "hindsight"
    assert seen["metadata"]["ls_vector_store_provider"] == "HindsightPostgres"
    assert repr(retriever).startswith("HindsightRetriever(bank=")


def test_dsn_owned_engine(engine: MemoryEngine, bank: str) -> None:
    with HindsightRetriever(dsn=engine.dsn, bank=bank) as r:
        r.add_documents([Document(page_content="Carol drinks green tea every morning.")])
        assert r.invoke("What does Carol drink?")[0].page_content.startswith("Carol")
