"""Bring your own embeddings: LangChain ``Embeddings``, LlamaIndex ``BaseEmbedding`` and plain
functions drive the engine and both adapters; banks remember their model and refuse another."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from fake_embeddings import HashEmbeddings
from langchain_core.documents import Document
from llama_index.core import Settings
from llama_index.core.embeddings import MockEmbedding

from hindsight_langchain import HindsightRetriever
from hindsight_llamaindex import HindsightRetriever as LlamaRetriever
from shared_core import DimensionMismatchError, EmbeddingModelMismatchError, MemoryEngine
from shared_core.embedding_adapters import ForeignEmbedder, as_embedder

DIM = 384  # the test database's dimension
TEXTS = ["Alice joined Google in March 2021.", "Bob moved to Paris.", "Carol plays the cello."]


def _bank_model(engine: MemoryEngine, bank: str) -> tuple[str, int]:
    info = {b.bank: b for b in engine.banks()}[bank]
    return info.embedding_model, info.embedding_dimension


def test_adapter_shapes_and_names() -> None:
    emb = as_embedder(HashEmbeddings(DIM, normalised=False))
    assert isinstance(emb, ForeignEmbedder) and emb.dimension == DIM
    assert emb.model_name == "HashEmbeddings(size=384)"
    docs = emb.embed_documents(["a", "b"])
    assert docs.shape == (2, DIM) and np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-6)
    assert not np.allclose(np.linalg.norm(emb.raw_documents(["a", "b"]), axis=1), 1.0)
    llama = as_embedder(MockEmbedding(embed_dim=8))
    assert llama.dimension == 8 and llama.embed_query("q").shape == (8,)


@pytest.fixture
def own_engine(engine: MemoryEngine) -> Iterator[MemoryEngine]:
    with MemoryEngine(engine.dsn, embeddings=HashEmbeddings(DIM)) as eng:
        yield eng


def test_engine_with_langchain_embeddings(own_engine: MemoryEngine, bank: str) -> None:
    own_engine.retain(TEXTS, bank=bank, progress=False)
    assert _bank_model(own_engine, bank) == ("HashEmbeddings(size=384)", DIM)
    # The hash model knows only exact texts: the semantic arm finds the exact one first.
    result = own_engine.recall(TEXTS[2], bank=bank, arms=["semantic"])
    assert result.memories[0].text == TEXTS[2]


def test_a_bank_refuses_another_model(engine: MemoryEngine, own_engine: MemoryEngine, bank: str) -> None:
    own_engine.retain(TEXTS[:1], bank=bank, progress=False)
    with pytest.raises(EmbeddingModelMismatchError) as caught:
        engine.retain(TEXTS[1:], bank=bank, progress=False)
    assert "HashEmbeddings(size=384)" in str(caught.value)
    assert "all-MiniLM-L6-v2" in str(caught.value)
    with pytest.raises(EmbeddingModelMismatchError):  # reading it with another model, too
        engine.recall("Bob", bank=bank)
    with engine.with_embedder(HashEmbeddings(16)) as small, pytest.raises(DimensionMismatchError):
        small.retain(TEXTS[1:], bank=bank, progress=False)
    assert (
        len(own_engine.get(own_engine.retain(TEXTS[1:2], bank=bank, progress=False)[0], bank=bank).text) > 0
    )


def test_langchain_retriever_embeddings(engine: MemoryEngine, bank: str) -> None:
    emb = HashEmbeddings(DIM)
    with HindsightRetriever(engine=engine, bank=bank, embeddings=emb) as retriever:
        assert retriever.engine is not engine and retriever.engine.uses_embeddings(emb)
        retriever.add_documents([Document(page_content=t) for t in TEXTS])
        assert _bank_model(engine, bank)[0] == "HashEmbeddings(size=384)"
        docs = retriever.invoke(TEXTS[1])
        assert docs[0].page_content == TEXTS[1]
    assert not engine._closed  # only the twin closed


def test_llamaindex_embed_model_and_settings(engine: MemoryEngine, bank: str) -> None:
    model = MockEmbedding(embed_dim=DIM)
    retriever = LlamaRetriever(engine, bank=bank, embed_model=model)
    from llama_index.core.schema import TextNode

    retriever.insert([TextNode(text=t) for t in TEXTS])
    assert _bank_model(engine, bank)[0] == "MockEmbedding(embed_dim=384)"
    assert retriever.retrieve("Who plays the cello?")
    retriever.close()
    previous = Settings._embed_model
    try:
        Settings.embed_model = model
        from_settings = LlamaRetriever(engine, bank=bank)
        assert from_settings.engine.uses_embeddings(model)
        from_settings.close()
    finally:
        Settings._embed_model = previous
    default = LlamaRetriever(engine, bank=bank + "-default")
    assert default.engine is engine
