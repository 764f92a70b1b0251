"""The adapters' scores are the reranker's calibrated relevance (issue 13 item 5, issue 11
item 1): ``Document.metadata["score"]`` and ``NodeWithScore.score`` are in [0, 1], higher for a
relevant memory than an irrelevant one, and ``score_threshold`` filters on them.

The engine's default reranker here is the learned one (the default cross-encoder is not
downloadable offline); the cross-encoder and passthrough cases pick theirs per call.
"""

from __future__ import annotations

import math
import uuid
from pathlib import Path

import pytest
from langchain_core.documents import Document

from hindsight_langchain import HindsightRetriever as LangChainRetriever
from hindsight_llamaindex import HindsightRetriever as LlamaIndexRetriever
from shared_core import MemoryEngine
from tests.unit.test_rerank import tiny_cross_encoder  # noqa: F401  (a fixture)

NURSE = "Bob is a nurse in the emergency room of a hospital in Zurich."
TEXTS = {
    "bob-job": NURSE,
    "carol-cat": "Carol adopted a cat named Miso.",
    "dan-trip": "Dan hiked across Patagonia last winter.",
    "erin-book": "Erin is writing a book about glaciers.",
    "alice-job": "Alice works at Google as an engineer.",
}
QUERY = "Who works as a nurse in a hospital?"


@pytest.fixture(scope="module")
def scored_bank(engine: MemoryEngine) -> str:
    bank = f"scores-{uuid.uuid4().hex[:8]}"
    docs = [Document(id=i, page_content=t) for i, t in TEXTS.items()]
    LangChainRetriever(engine=engine, bank=bank).add_documents(docs)
    return bank


def _learned(engine: MemoryEngine) -> bool:
    return engine.recall_context().reranker.is_learned


def test_langchain_score_is_the_learned_relevance(engine: MemoryEngine, scored_bank: str) -> None:
    if not _learned(engine):
        pytest.skip("a cross-encoder is the default reranker here")
    docs = LangChainRetriever(engine=engine, bank=scored_bank, k=5).invoke(QUERY)
    assert len(docs) == 5
    scores = {d.id: d.metadata["score"] for d in docs}
    assert all(0.0 <= s <= 1.0 for s in scores.values())
    assert scores["bob-job"] > 0.5 > max(s for i, s in scores.items() if i != "bob-job")
    # the learned score is what recall ranked by (no boost on top)
    for d in docs:
        if not d.metadata["below_threshold"]:
            assert d.metadata["score"] == pytest.approx(d.metadata["scores"]["reranker"])
    result = engine.recall(QUERY, bank=scored_bank, k=5)
    assert [m.relevance for m in result.memories] == [d.metadata["score"] for d in docs]


def test_fill_below_thresholds_gets_a_relevance_too(engine: MemoryEngine, scored_bank: str) -> None:
    if not _learned(engine):
        pytest.skip("a cross-encoder is the default reranker here")
    result = engine.recall("quantum chromodynamics", bank=scored_bank, k=3)
    assert len(result.memories) == 3
    for m in result.memories:
        assert m.relevance is not None and 0.0 <= m.relevance < 0.5
    filled = [m for m in result.memories if m.below_threshold]
    assert filled  # nothing is similar to the query: the fill is scored, not assumed relevant


def test_score_threshold_filters_on_the_relevance(engine: MemoryEngine, scored_bank: str) -> None:
    if not _learned(engine):
        pytest.skip("a cross-encoder is the default reranker here")
    r = LangChainRetriever(
        engine=engine,
        bank=scored_bank,
        search_type="similarity_score_threshold",
        search_kwargs={"score_threshold": 0.5, "k": 5},
    )
    assert [d.id for d in r.invoke(QUERY)] == ["bob-job"]
    assert r.invoke("quantum chromodynamics") == []
    unfiltered = LangChainRetriever(engine=engine, bank=scored_bank, k=5).invoke(QUERY)
    low = min(d.metadata["score"] for d in unfiltered)
    # a threshold at the lowest score keeps all k (fill included), one just above it drops some
    assert len(r.invoke(QUERY, score_threshold=low)) == 5
    assert len(r.invoke(QUERY, score_threshold=math.nextafter(low, 1.0))) < 5


def test_llamaindex_score_and_similarity_cutoff(engine: MemoryEngine, scored_bank: str) -> None:
    if not _learned(engine):
        pytest.skip("a cross-encoder is the default reranker here")
    from llama_index.core.postprocessor import SimilarityPostprocessor

    nodes = LlamaIndexRetriever(engine, bank=scored_bank, similarity_top_k=5).retrieve(QUERY)
    assert len(nodes) == 5 and all(n.score is not None and 0.0 <= n.score <= 1.0 for n in nodes)
    assert nodes[0].node.node_id == "bob-job"
    kept = SimilarityPostprocessor(similarity_cutoff=0.5).postprocess_nodes(nodes)
    assert [n.node.node_id for n in kept] == ["bob-job"]


def test_passthrough_score_is_the_cosine(engine: MemoryEngine, scored_bank: str) -> None:
    docs = LangChainRetriever(engine=engine, bank=scored_bank, k=5, reranker="none").invoke(QUERY)
    result = engine.recall(QUERY, bank=scored_bank, k=5, reranker="none")
    assert all(m.relevance is None for m in result.memories)
    by_id = {m.document_id: m.similarity for m in result.memories}
    for d in docs:
        assert d.metadata["score"] == pytest.approx(max(0.0, by_id[d.id] or 0.0))
    assert docs[0].id == "bob-job"


def test_cross_encoder_score_is_its_sigmoid(
    engine: MemoryEngine,
    scored_bank: str,
    tiny_cross_encoder: Path,  # noqa: F811
) -> None:
    spec = str(tiny_cross_encoder)
    docs = LangChainRetriever(engine=engine, bank=scored_bank, k=5, reranker=spec).invoke(QUERY)
    assert len(docs) == 5
    for d in docs:
        raw = d.metadata["scores"]["reranker_raw"]
        if d.metadata["below_threshold"]:
            assert 0.0 <= d.metadata["score"] <= 1.0
            continue
        # the relevance is the cross-encoder's own sigmoid, not the boosted ranking score
        assert d.metadata["score"] == pytest.approx(1 / (1 + math.exp(-raw)))
        assert d.metadata["score"] == pytest.approx(d.metadata["scores"]["reranker"])
