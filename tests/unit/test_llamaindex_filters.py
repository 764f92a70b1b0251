"""LlamaIndex MetadataFilters → the neutral filter tree (pure)."""

from __future__ import annotations

import doctest

import pytest
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

import hindsight_llamaindex.metadata_filters as module
from hindsight_llamaindex.metadata_filters import to_filter_tree
from shared_core.recall.filters import And, Condition, InvalidFilterError, Not, Or


def mf(key: str, value: object, op: FilterOperator = FilterOperator.EQ) -> MetadataFilter:
    return MetadataFilter(key=key, value=value, operator=op)  # type: ignore[arg-type]


def test_doctests() -> None:
    failures, tried = doctest.testmod(module)
    assert tried > 0 and failures == 0


@pytest.mark.parametrize(
    ("op", "value", "expected"),
    [
        (FilterOperator.EQ, "er", Condition(key="k", op="eq", value="er")),
        (FilterOperator.NE, 1, Condition(key="k", op="ne", value=1)),
        (FilterOperator.GT, 1, Condition(key="k", op="gt", value=1)),
        (FilterOperator.GTE, 1.5, Condition(key="k", op="gte", value=1.5)),
        (FilterOperator.LT, "b", Condition(key="k", op="lt", value="b")),
        (FilterOperator.LTE, 2, Condition(key="k", op="lte", value=2)),
        (FilterOperator.IN, ["a", "b"], Condition(key="k", op="in", value=["a", "b"])),
        (FilterOperator.NIN, ["a"], Condition(key="k", op="nin", value=["a"])),
        (FilterOperator.CONTAINS, "x", Condition(key="k", op="contains", value="x")),
        (
            FilterOperator.ANY,
            ["x", "y"],
            Or((Condition(key="k", op="contains", value="x"), Condition(key="k", op="contains", value="y"))),
        ),
        (
            FilterOperator.ALL,
            ["x", "y"],
            And((Condition(key="k", op="contains", value="x"), Condition(key="k", op="contains", value="y"))),
        ),
        (FilterOperator.TEXT_MATCH, "50%", Condition(key="k", op="like", value="%50\\%%")),
        (FilterOperator.TEXT_MATCH_INSENSITIVE, "ab", Condition(key="k", op="ilike", value="%ab%")),
        (FilterOperator.IS_EMPTY, None, Condition(key="k", op="is_empty")),
    ],
)
def test_every_operator_maps(op: FilterOperator, value: object, expected: object) -> None:
    assert to_filter_tree(MetadataFilters(filters=[mf("k", value, op)])) == expected


def test_conditions_and_nesting() -> None:
    a, b, c = mf("a", 1), mf("b", 2), mf("c", 3)
    ca, cb, cc = (Condition(key=k, op="eq", value=v) for k, v in (("a", 1), ("b", 2), ("c", 3)))
    assert to_filter_tree(MetadataFilters(filters=[a, b])) == And((ca, cb))
    assert to_filter_tree(MetadataFilters(filters=[a, b], condition=FilterCondition.OR)) == Or((ca, cb))
    assert to_filter_tree(MetadataFilters(filters=[a, b], condition=FilterCondition.NOT)) == Not(Or((ca, cb)))
    nested = MetadataFilters(filters=[a, MetadataFilters(filters=[b, c], condition=FilterCondition.OR)])
    assert to_filter_tree(nested) == And((ca, Or((cb, cc))))
    assert to_filter_tree(None) is None
    assert to_filter_tree(MetadataFilters(filters=[])) is None


@pytest.mark.parametrize(
    ("filters", "where"),
    [
        (MetadataFilters(filters=[mf("a", 1), mf("b", [1, 2])]), "filters.filters[1]"),
        (MetadataFilters(filters=[mf("a", "x", FilterOperator.ANY)]), "filters.filters[0]"),
        (MetadataFilters(filters=[mf("a", [], FilterOperator.ALL)]), "filters.filters[0]"),
        (MetadataFilters(filters=[mf("a", 3, FilterOperator.TEXT_MATCH)]), "filters.filters[0]"),
        (
            MetadataFilters(filters=[MetadataFilters(filters=[mf("a", [1], FilterOperator.GT)])]),
            "filters.filters[0].filters[0]",
        ),
    ],
)
def test_malformed_filters_name_the_filter(filters: MetadataFilters, where: str) -> None:
    with pytest.raises(InvalidFilterError) as info:
        to_filter_tree(filters)
    assert info.value.path == where


def test_not_metadata_filters() -> None:
    with pytest.raises(InvalidFilterError, match="expected MetadataFilters"):
        to_filter_tree({"a": 1})  # type: ignore[arg-type]
