"""A LangChain vector store's own relevance: the distance it ranks by, and its relevance function.

``TimeWeightedVectorStoreRetriever`` scores with ``similarity_search_with_relevance_scores``:
the store ranks by its distance, then maps each distance through
``_select_relevance_score_fn()``. To give the same numbers from Postgres, the retriever asks the
core stream for the same distance (computed with pgvector's matching operator) and applies the
store's own function to it. This module only translates a store into that pair.

>>> store = FAISS(embeddings, faiss.IndexFlatL2(1536), InMemoryDocstore(), {})  # doctest: +SKIP
>>> relevance = store_relevance(store)  # doctest: +SKIP
>>> relevance.metric, relevance.normalise  # doctest: +SKIP
('l2_squared', False)
>>> relevance.fn(0.5)  # FAISS's Euclidean relevance, 1 - d / sqrt(2)  # doctest: +SKIP
0.646...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shared_core.storage.stream import Metric

__all__ = ["StoreRelevance", "store_relevance"]

# FAISS metric_type values (faiss.METRIC_INNER_PRODUCT, faiss.METRIC_L2).
_FAISS_METRICS: dict[int, Metric] = {0: "inner_product", 1: "l2_squared"}

# A store's ``distance_strategy`` (langchain_community's DistanceStrategy names, and
# langchain_postgres's values) -> the distance such stores return.
_STRATEGIES: dict[str, Metric] = {
    "euclidean_distance": "l2",
    "l2": "l2",
    "euclidean": "l2",
    "cosine": "cosine_distance",
    "cosine_distance": "cosine_distance",
    "max_inner_product": "negative_inner_product",
    "inner": "negative_inner_product",
    "inner_product": "negative_inner_product",
    "dot_product": "inner_product",
}


def _identity(score: float) -> float:
    return score


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreRelevance:
    """The distance a store ranks by (``metric``, on unit vectors when ``normalise``) and the
    function turning it into relevance."""

    metric: Metric
    normalise: bool
    fn: Callable[[float], float]


def _metric(store: Any) -> tuple[Metric, bool]:
    index = getattr(store, "index", None)
    metric_type = getattr(index, "metric_type", None)
    if metric_type in _FAISS_METRICS and hasattr(store, "index_to_docstore_id"):
        # FAISS returns what its index computes (IndexFlatL2: squared L2), on unit vectors
        # when the store was built with normalize_L2=True.
        return _FAISS_METRICS[metric_type], bool(getattr(store, "_normalize_L2", False))
    strategy = getattr(store, "distance_strategy", None)
    name = str(getattr(strategy, "value", strategy) or "").lower()
    if name in _STRATEGIES:
        return _STRATEGIES[name], False
    # InMemoryVectorStore and stores we do not know: cosine similarity (higher is nearer).
    return "cosine_similarity", False


def store_relevance(store: Any, *, metric: Metric | None = None) -> StoreRelevance:
    """The relevance ``store`` gives (``metric`` overrides the distance for a store this
    function does not know). A store without a relevance function (``InMemoryVectorStore``
    raises ``NotImplementedError`` upstream) scores by its similarity as is."""
    found, normalise = _metric(store) if store is not None else ("cosine_similarity", False)
    fn: Callable[[float], float] = _identity
    if store is not None:
        try:
            selected = store._select_relevance_score_fn()
        except NotImplementedError:
            selected = None
        if selected is not None:
            fn = selected
    return StoreRelevance(metric=metric or found, normalise=normalise, fn=fn)
