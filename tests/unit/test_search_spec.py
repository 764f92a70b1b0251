"""search_type / search_kwargs validation and MMR selection (pure)."""

from __future__ import annotations

import doctest
from typing import Any

import numpy as np
import pytest

import hindsight_langchain.search as search_module
import shared_core.recall.mmr as mmr_module
from hindsight_langchain.search import SearchSpec, check_k, search_spec
from shared_core.errors import ConfigurationError
from shared_core.recall.filters import Condition, InvalidFilterError
from shared_core.recall.mmr import mmr_select


@pytest.mark.parametrize("module", [search_module, mmr_module])
def test_doctests(module: Any) -> None:
    failures, tried = doctest.testmod(module)
    assert tried > 0 and failures == 0


def test_defaults_are_vectorstoreretrievers() -> None:
    spec = search_spec()
    assert spec == SearchSpec(
        search_type="similarity", k=4, filter=None, score_threshold=None, fetch_k=20, lambda_mult=0.5
    )


def test_kwargs_apply_over_a_base() -> None:
    base = search_spec("similarity", {"k": 2, "filter": {"team": "er"}})
    assert base.filter == Condition(key="team", op="eq", value="er")
    call = search_spec("similarity", {"score_threshold": 0.4}, base=base)
    assert (call.k, call.filter, call.score_threshold) == (2, base.filter, 0.4)
    assert search_spec("similarity_score_threshold", {"score_threshold": 0}).score_threshold == 0.0


@pytest.mark.parametrize(
    ("search_type", "kwargs", "fragment"),
    [
        ("nearest", {}, "unknown search_type 'nearest'"),
        ("similarity", {"kk": 1}, "unknown search_kwargs key 'kk'"),
        ("similarity", {"k": -1}, "k must be an integer >= 0"),
        ("similarity", {"k": "3"}, "k must be an integer"),
        ("similarity", {"k": True}, "k must be an integer"),
        ("similarity", {"lambda_mult": 0.5}, "only to search_type='mmr'"),
        ("similarity_score_threshold", {"fetch_k": 5}, "only to search_type='mmr'"),
        ("similarity_score_threshold", {}, "needs search_kwargs={'score_threshold'"),
        ("similarity", {"score_threshold": "high"}, "score_threshold must be a number"),
        ("mmr", {"lambda_mult": 2}, "between 0 and 1"),
        ("mmr", {"k": 10, "fetch_k": 5}, "fetch_k (5) must be at least k (10)"),
    ],
)
def test_bad_values_are_configuration_errors(search_type: str, kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        search_spec(search_type, kwargs)
    assert fragment in str(info.value)


def test_bad_filter_is_a_filter_error() -> None:
    with pytest.raises(InvalidFilterError, match=r"filter\['a'\]\['\$x'\]"):
        search_spec("similarity", {"filter": {"a": {"$x": 1}}})


def test_check_k() -> None:
    assert check_k(0) == 0
    with pytest.raises(ConfigurationError, match="similarity_top_k"):
        check_k("3", "similarity_top_k")


def test_mmr_prefers_diverse_candidates() -> None:
    rng = np.random.default_rng(0)
    base = rng.standard_normal(16)
    twin = base + 0.01 * rng.standard_normal(16)
    other = rng.standard_normal(16)
    query = base + 0.5 * other
    cands = np.stack([base, twin, other])
    assert mmr_select(query, cands, k=2, lambda_mult=0.5) == [0, 2]
    assert mmr_select(query, cands, k=2, lambda_mult=1.0) == [0, 1]
    assert mmr_select(query, cands, k=5, lambda_mult=0.5) == [0, 2, 1]
    assert mmr_select(query, cands[:0], k=2) == [] and mmr_select(query, cands, k=0) == []
