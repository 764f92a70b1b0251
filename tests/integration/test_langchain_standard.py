"""LangChain's standard retriever suite (langchain_tests) against HindsightRetriever."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from hindsight_langchain import HindsightRetriever
from shared_core import MemoryEngine

BANK = "langchain-standard-suite"
QUERY = "Which city did the astronomer move to?"


@pytest.fixture(scope="module", autouse=True)
def _seeded(engine: MemoryEngine) -> Iterator[None]:
    # One document id: re-running the seeding replaces it (idempotent on a persistent server).
    HindsightRetriever(engine=engine, bank=BANK).add_documents(
        [
            Document(id="standard-suite", page_content=text)
            for text in [
                "The astronomer moved to Paris in 2019.",
                "The astronomer later moved to the city of Lyon.",
                "The astronomer's sister moved to Berlin, a city she loves.",
                "The astronomer visited the city of Rome last spring.",
            ]
        ]
    )
    yield


class TestHindsightRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _engine(self, engine: MemoryEngine) -> None:
        self._session_engine = engine

    @property
    def retriever_constructor(self) -> type[HindsightRetriever]:
        return HindsightRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"engine": self._session_engine, "bank": BANK}

    @property
    def retriever_query_example(self) -> str:
        return QUERY
