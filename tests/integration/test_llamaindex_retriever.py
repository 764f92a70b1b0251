"""hindsight_llamaindex.HindsightRetriever against the real engine."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core import Document
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeRelationship, TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from hindsight_llamaindex import HindsightRetriever
from shared_core import MemoryEngine


@pytest.fixture
def retriever(engine: MemoryEngine, bank: str) -> HindsightRetriever:
    r = HindsightRetriever(engine, bank=bank, similarity_top_k=3)
    r.insert(
        [
            Document(
                text="Alice joined Google in March 2021 as an engineer.",
                id_="hr-1",
                metadata={"tags": ["alice", "work"], "team": "search"},
            ),
            Document(
                text="Bob moved to Paris in the summer of 2019.",
                id_="bio-2",
                metadata={"tags": ["bob"], "team": "ads"},
            ),
            TextNode(text="Alice adopted a cat named Miso.", metadata={"tags": ["alice"]}),
        ]
    )
    return r


def test_class() -> None:
    assert BaseRetriever.__name__ in [b.__name__ for b in HindsightRetriever.__mro__]


def test_nodes_with_scores(retriever: HindsightRetriever) -> None:
    nodes = retriever.retrieve("Where does Alice work?")
    assert 1 <= len(nodes) <= 3
    top = nodes[0]
    assert top.node.get_content().startswith("Alice joined Google")
    # the node as inserted: its id, its metadata; the score is relevance (cosine similarity)
    assert top.node.node_id == "hr-1" and top.score is not None and 0.0 < top.score <= 1.0
    assert top.node.metadata == {"tags": ["alice", "work"], "team": "search"}
    llm_text = top.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "team: search" in llm_text and "score" not in llm_text


def test_metadata_filters(engine: MemoryEngine, retriever: HindsightRetriever) -> None:
    bob = HindsightRetriever(
        engine,
        bank=retriever.bank,
        filters=MetadataFilters(filters=[MetadataFilter(key="tags", value="bob")]),
    )
    assert [n.node.get_content() for n in bob.retrieve("Who moved?")] == [
        "Bob moved to Paris in the summer of 2019."
    ]
    search = HindsightRetriever(
        engine,
        bank=retriever.bank,
        similarity_top_k=5,
        filters=MetadataFilters(
            filters=[MetadataFilter(key="team", value="search"), MetadataFilter(key="team", value="ads")],
            condition=FilterCondition.OR,
        ),
    )
    assert {n.node.metadata["team"] for n in search.retrieve("Alice Bob")} == {"search", "ads"}
    not_alice = HindsightRetriever(
        engine,
        bank=retriever.bank,
        similarity_top_k=5,
        filters=MetadataFilters(
            filters=[MetadataFilter(key="tags", value=["alice"], operator=FilterOperator.NIN)]
        ),
    )
    assert all("alice" not in n.node.metadata["tags"] for n in not_alice.retrieve("Alice Bob"))


async def test_native_async(retriever: HindsightRetriever) -> None:
    nodes = await retriever.aretrieve("Where does Alice work?")
    assert nodes[0].node.get_content().startswith("Alice joined Google")
    await retriever.ainsert([Document(text="Carol drinks green tea.", id_="c")])
    assert (await retriever.aretrieve("What does Carol drink?"))[0].node.node_id == "c"


def test_query_engine_and_instrumentation(retriever: HindsightRetriever) -> None:
    events: list[str] = []

    class Collector(BaseEventHandler):
        @classmethod
        def class_name(cls) -> str:
            return "Collector"

        def handle(self, event: BaseEvent, **kwargs: Any) -> None:
            events.append(event.class_name())

    root = get_dispatcher()
    handler = Collector()
    root.add_event_handler(handler)
    try:
        query_engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
        response = query_engine.query("Where does Alice work?")
    finally:
        root.event_handlers.remove(handler)
    assert response.source_nodes
    assert response.source_nodes[0].node.get_content().startswith("Alice joined Google")
    assert {"RetrievalStartEvent", "RetrievalEndEvent", "HindsightRecallEvent"} <= set(events)
    assert "HindsightRetriever(bank=" in repr(retriever)


async def test_query_engine_async(retriever: HindsightRetriever) -> None:
    query_engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = await query_engine.aquery("Who moved to Paris?")
    assert any("Paris" in n.node.get_content() for n in response.source_nodes)


def test_a_nodes_source_document_comes_back(engine: MemoryEngine, bank: str) -> None:
    from llama_index.core.schema import RelatedNodeInfo

    node = TextNode(
        id_="n-1",
        text="The lighthouse keeper retired in 1999.",
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="book-7")},
    )
    r = HindsightRetriever(engine, bank=bank, similarity_top_k=1)
    assert r.insert([node]) == ["n-1"]
    found = r.retrieve("When did the lighthouse keeper retire?")[0].node
    assert found.node_id == "n-1" and found.ref_doc_id == "book-7"
    assert found.metadata == {} and found.hash == node.hash
