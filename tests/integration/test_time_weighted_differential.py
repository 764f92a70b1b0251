"""Differential test: TimeWeightedHindsightRetriever vs LangChain's TimeWeightedVectorStoreRetriever.

Random sequences of add / invoke / advance-the-clock steps run against both, under
``mock_now`` (a virtual clock, so both see the same "now"), with the same deterministic
embeddings (dimension 384, the database's). Every invoke must return the same documents in the
same order with the same metadata, and the memory streams must agree at the end.
"""

from __future__ import annotations

import datetime
import uuid
import warnings
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_classic.retrievers import TimeWeightedVectorStoreRetriever
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.utils import mock_now
from langchain_core.vectorstores import InMemoryVectorStore

from hindsight_langchain import TimeWeightedHindsightRetriever
from shared_core import MemoryEngine

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]


class _CosineStore(InMemoryVectorStore):
    """InMemoryVectorStore returns cosine similarity; relevance = similarity (as pgvector's
    1 - cosine distance). Upstream's InMemoryVectorStore raises NotImplementedError here."""

    def _select_relevance_score_fn(self) -> Any:
        return lambda score: score


_add = st.tuples(
    st.just("add"),
    st.lists(st.tuples(st.sampled_from(WORDS), st.integers(0, 3),
                       st.one_of(st.none(), st.integers(-48, 0)),
                       st.one_of(st.none(), st.floats(0, 1, allow_nan=False))),
             min_size=1, max_size=3))
_invoke = st.tuples(st.just("invoke"), st.sampled_from(WORDS))
_advance = st.tuples(st.just("advance"), st.integers(1, 72))
_steps = st.lists(st.one_of(_add, _invoke, _advance), min_size=2, max_size=10)


def _view(docs: list[Document]) -> list[tuple[str, int, Any, Any]]:
    return [(d.page_content, d.metadata["buffer_idx"], d.metadata["last_accessed_at"],
             d.metadata.get("importance")) for d in docs]


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=_steps, decay_rate=st.sampled_from([0.01, 0.3, 0.99]), k=st.integers(1, 4),
       search_k=st.integers(1, 6), default_salience=st.sampled_from([None, 0.25]),
       with_importance=st.booleans())
def test_same_documents_as_upstream(engine: MemoryEngine, steps: list[tuple[Any, ...]],
                                    decay_rate: float, k: int, search_k: int,
                                    default_salience: float | None,
                                    with_importance: bool) -> None:
    embeddings = DeterministicFakeEmbedding(size=384)
    common: dict[str, Any] = {
        "decay_rate": decay_rate, "k": k, "search_kwargs": {"k": search_k},
        "default_salience": default_salience,
        "other_score_keys": ["importance"] if with_importance else []}
    upstream = TimeWeightedVectorStoreRetriever(vectorstore=_CosineStore(embeddings), **common)
    ours = TimeWeightedHindsightRetriever(engine=engine, bank=f"diff-{uuid.uuid4().hex[:12]}",
                                          vectorstore=_CosineStore(embeddings), **common)
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
                        metadata["last_accessed_at"] = clock + datetime.timedelta(
                            hours=accessed_hours_ago)
                    if importance is not None:
                        metadata["importance"] = importance
                    docs.append(Document(page_content=f"{word} {n} memory {counter}",
                                         metadata=metadata))
                assert len(upstream.add_documents(docs)) == len(ours.add_documents(docs))
            else:
                want = upstream.invoke(step[1])
                got = ours.invoke(step[1])
                assert _view(got) == _view(want), step
    assert _view(ours.memory_stream) == _view(upstream.memory_stream)
