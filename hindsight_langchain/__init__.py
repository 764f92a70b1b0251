"""LangChain adapters for hindsight-retrievers.

>>> from hindsight_langchain import HindsightRetriever, TimeWeightedHindsightRetriever

Classes are imported lazily, so importing this package (or :mod:`shared_core`) stays light
until an adapter is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hindsight_langchain._import import aimport_pgvector_collection, import_pgvector_collection
    from hindsight_langchain.retriever import HindsightRetriever
    from hindsight_langchain.time_weighted import TimeWeightedHindsightRetriever

__all__ = [
    "HindsightRetriever",
    "TimeWeightedHindsightRetriever",
    "aimport_pgvector_collection",
    "import_pgvector_collection",
]

_WHERE = {
    "HindsightRetriever": "hindsight_langchain.retriever",
    "import_pgvector_collection": "hindsight_langchain._import",
    "aimport_pgvector_collection": "hindsight_langchain._import",
    "TimeWeightedHindsightRetriever": "hindsight_langchain.time_weighted",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'hindsight_langchain' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
