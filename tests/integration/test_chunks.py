"""Chunks (issue 11 item 6): chosen from the ranking, independently of ``max_tokens``; every
memory's source text can come back (a long item's whole text, or a short memory's own), and
the one cut to ``max_chunk_tokens`` is flagged in the result and in both adapters."""

from __future__ import annotations

import uuid

import pytest
from langchain_core.documents import Document

from hindsight_langchain import HindsightRetriever as LangChainRetriever
from hindsight_llamaindex import HindsightRetriever as LlamaIndexRetriever
from shared_core import MemoryEngine
from shared_core.types import MemoryItem

LONG = " ".join(f"Sentence {i} tells how the heron number {i} waits in the marsh at dawn." for i in range(40))
SHORT = "A heron nests near the old mill by the marsh."


@pytest.fixture(scope="module")
def chunk_bank(engine: MemoryEngine) -> str:
    bank = f"chunks-{uuid.uuid4().hex[:8]}"
    assert engine.token_counter.count(LONG) > 512
    engine.retain(
        [MemoryItem(text=LONG, document_id="doc-heron"), MemoryItem(text=SHORT, document_id="mill")],
        bank=bank,
    )
    return bank


def test_max_tokens_zero_returns_chunks_only(engine: MemoryEngine, chunk_bank: str) -> None:
    result = engine.recall("heron in the marsh", bank=chunk_bank, include_chunks=True, max_tokens=0)
    assert result.memories == []
    assert LONG in result.chunks.values() and SHORT in result.chunks.values()
    assert result.truncated_chunks == frozenset()


def test_chunks_do_not_depend_on_max_tokens(engine: MemoryEngine, chunk_bank: str) -> None:
    wide = engine.recall("heron in the marsh", bank=chunk_bank, include_chunks=True)
    narrow = engine.recall("heron in the marsh", bank=chunk_bank, include_chunks=True, max_tokens=20)
    assert len(narrow.memories) < len(wide.memories)
    assert narrow.chunks == wide.chunks


def test_every_memory_has_its_source_text(engine: MemoryEngine, chunk_bank: str) -> None:
    result = engine.recall("heron in the marsh", bank=chunk_bank, include_chunks=True)
    for m in result.memories:
        source = result.chunk_of(m)
        assert source is not None
        assert source == (LONG if m.chunk_id is not None else m.text)
    short = next(m for m in result.memories if m.text == SHORT)
    assert short.chunk_id is None and result.chunks[short.id] == SHORT


def test_the_truncated_chunk_is_flagged(engine: MemoryEngine, chunk_bank: str) -> None:
    result = engine.recall("heron waits at dawn", bank=chunk_bank, include_chunks=True, max_chunk_tokens=40)
    assert len(result.truncated_chunks) == 1
    (key,) = result.truncated_chunks
    assert engine.token_counter.count(result.chunks[key]) <= 40
    assert list(result.chunks)[-1] == key  # only the last chunk is cut

    docs = LangChainRetriever(
        engine=engine, bank=chunk_bank, k=5, include_chunks=True, max_chunk_tokens=40
    ).invoke("heron waits at dawn")
    flagged = [d for d in docs if d.metadata.get("chunk_truncated")]
    assert flagged and all(d.metadata["chunk"] in LONG + SHORT for d in flagged)
    nodes = LlamaIndexRetriever(
        engine, bank=chunk_bank, similarity_top_k=5, include_chunks=True, max_chunk_tokens=40
    ).retrieve("heron waits at dawn")
    assert any(n.node.metadata.get("chunk_truncated") for n in nodes)


def test_langchain_documents_carry_their_chunk(engine: MemoryEngine, chunk_bank: str) -> None:
    docs = LangChainRetriever(engine=engine, bank=chunk_bank, k=3, include_chunks=True).invoke("old mill")
    mill = next(d for d in docs if d.id == "mill")
    assert mill.metadata["chunk"] == SHORT and mill.metadata["chunk_truncated"] is False
    assert isinstance(mill, Document)
