"""``search_type`` and ``search_kwargs`` as LangChain's ``VectorStoreRetriever`` takes them,
validated up front: an unknown key, a value of the wrong type or an option the search type
does not use is a :class:`~shared_core.ConfigurationError`, never silently ignored.

=================================  ==========================================================
``search_type``                    uses
=================================  ==========================================================
``"similarity"`` (default)         ``k``, ``filter``, ``score_threshold`` (optional)
``"similarity_score_threshold"``   ``k``, ``filter``, ``score_threshold`` (required)
``"mmr"``                          ``k``, ``filter``, ``fetch_k``, ``lambda_mult``
=================================  ==========================================================

>>> spec = search_spec("mmr", {"k": 2, "fetch_k": 10})
>>> spec.k, spec.fetch_k, spec.lambda_mult
(2, 10, 0.5)
>>> search_spec("similarity", {"kk": 1})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
shared_core.errors.ConfigurationError: unknown search_kwargs key 'kk'; expected some of [...]
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from shared_core.errors import ConfigurationError
from shared_core.recall.filters import FilterExpr, parse_filter
from shared_core.recall.mmr import DEFAULT_FETCH_K, DEFAULT_LAMBDA_MULT

__all__ = ["DEFAULT_K", "SEARCH_KWARGS", "SEARCH_TYPES", "SearchSpec", "SearchType", "check_k", "search_spec"]

SearchType = Literal["similarity", "similarity_score_threshold", "mmr"]
SEARCH_TYPES: tuple[SearchType, ...] = get_args(SearchType)
SEARCH_KWARGS: tuple[str, ...] = ("fetch_k", "filter", "k", "lambda_mult", "score_threshold")
#: VectorStoreRetriever's default number of documents.
DEFAULT_K = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchSpec:
    """One validated search: how many documents, which filter, which threshold, MMR or not."""

    search_type: SearchType = "similarity"
    k: int = DEFAULT_K
    filter: FilterExpr | None = None
    score_threshold: float | None = None
    fetch_k: int = DEFAULT_FETCH_K
    lambda_mult: float = DEFAULT_LAMBDA_MULT


def check_k(value: Any, name: str = "k") -> int:
    """``value`` as a count of documents: an int >= 0 (not a bool, not a string)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"{name} must be an integer >= 0, got {value!r}")
    return value


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigurationError(f"{name} must be a number, got {value!r}")
    return float(value)


def search_spec(
    search_type: Any = "similarity",
    search_kwargs: Mapping[str, Any] | None = None,
    *,
    base: SearchSpec | None = None,
) -> SearchSpec:
    """Validate ``search_type`` / ``search_kwargs`` (over ``base``, e.g. the retriever's own
    settings when ``invoke`` passes per-call options)."""
    if search_type not in SEARCH_TYPES:
        raise ConfigurationError(f"unknown search_type {search_type!r}; expected one of {list(SEARCH_TYPES)}")
    kwargs = dict(search_kwargs or {})
    if not isinstance(search_kwargs, Mapping | None):
        raise ConfigurationError(f"search_kwargs must be a dict, got {type(search_kwargs).__name__}")
    for key in kwargs:
        if key not in SEARCH_KWARGS:
            raise ConfigurationError(
                f"unknown search_kwargs key {key!r}; expected some of {list(SEARCH_KWARGS)}"
            )
    spec = dataclasses.replace(base or SearchSpec(), search_type=search_type)
    changes: dict[str, Any] = {}
    if "k" in kwargs:
        changes["k"] = check_k(kwargs["k"])
    if "fetch_k" in kwargs:
        changes["fetch_k"] = check_k(kwargs["fetch_k"], "fetch_k")
    if "lambda_mult" in kwargs:
        lam = _number(kwargs["lambda_mult"], "lambda_mult")
        if not 0.0 <= lam <= 1.0:
            raise ConfigurationError(f"lambda_mult must be between 0 and 1, got {lam}")
        changes["lambda_mult"] = lam
    if "score_threshold" in kwargs:
        threshold = kwargs["score_threshold"]
        changes["score_threshold"] = None if threshold is None else _number(threshold, "score_threshold")
    if "filter" in kwargs:
        changes["filter"] = parse_filter(kwargs["filter"])
    if search_type != "mmr":
        for key in ("fetch_k", "lambda_mult"):
            if key in kwargs:
                raise ConfigurationError(
                    f"{key} applies only to search_type='mmr' (search_type is {search_type!r})"
                )
    spec = dataclasses.replace(spec, **changes)
    if search_type == "similarity_score_threshold" and spec.score_threshold is None:
        raise ConfigurationError(
            "search_type='similarity_score_threshold' needs search_kwargs={'score_threshold': ...}"
        )
    if search_type == "mmr" and spec.fetch_k < spec.k:
        raise ConfigurationError(f"fetch_k ({spec.fetch_k}) must be at least k ({spec.k})")
    return spec
