"""The metadata-filter compiler: PGVector syntax → filter tree → SQL (pure; no database)."""

from __future__ import annotations

import datetime as dt
import doctest
from typing import Any

import pytest
from psycopg import sql

import shared_core.recall.filters as filters_module
from shared_core.errors import InvalidQueryError
from shared_core.recall.filters import (
    And,
    Condition,
    InvalidFilterError,
    Not,
    Or,
    compile_filter,
    escape_like,
    parse_filter,
)


def test_doctests() -> None:
    failures, tried = doctest.testmod(filters_module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0


def test_plain_keys_are_anded_equalities() -> None:
    assert parse_filter({"team": "er", "year": 2021}) == And(
        (Condition(key="team", op="eq", value="er"), Condition(key="year", op="eq", value=2021))
    )
    assert parse_filter({"team": "er"}) == Condition(key="team", op="eq", value="er")


def test_every_pgvector_operator_parses() -> None:
    ops = {
        "$eq": 1,
        "$ne": 1,
        "$lt": 1,
        "$lte": 1,
        "$gt": 1,
        "$gte": 1,
        "$in": [1, "a"],
        "$nin": [2],
        "$between": [1, 3],
        "$like": "a%",
        "$ilike": "A%",
        "$exists": True,
    }
    for name, value in ops.items():
        tree = parse_filter({"k": {name: value}})
        assert isinstance(tree, Condition) and tree.op == name[1:]


def test_operator_names_are_case_insensitive_and_several_are_anded() -> None:
    assert parse_filter({"$AND": [{"a": 1}]}) == And((Condition(key="a", op="eq", value=1),))
    tree = parse_filter({"year": {"$gte": 2019, "$lt": 2022}})
    assert tree == And(
        (Condition(key="year", op="gte", value=2019), Condition(key="year", op="lt", value=2022))
    )


def test_logical_operators_nest() -> None:
    tree = parse_filter({"$or": [{"team": "er"}, {"$and": [{"a": 1}, {"$not": {"b": 2}}]}]})
    assert tree == Or(
        (
            Condition(key="team", op="eq", value="er"),
            And((Condition(key="a", op="eq", value=1), Not(Condition(key="b", op="eq", value=2)))),
        )
    )
    # $not with a list: none of them holds
    assert parse_filter({"$not": [{"a": 1}, {"b": 2}]}) == Not(
        Or((Condition(key="a", op="eq", value=1), Condition(key="b", op="eq", value=2)))
    )


def test_empty_and_none_mean_no_filter() -> None:
    assert parse_filter(None) is None and parse_filter({}) is None
    assert compile_filter({}).clause.as_string() == "TRUE"
    assert compile_filter(None).params == {}


def test_a_tree_passes_through_unchanged() -> None:
    tree = Condition(key=("a", "b"), op="exists", value=True)
    assert parse_filter(tree) is tree


def test_dates_become_iso_strings_and_dotted_keys_nest() -> None:
    tree = parse_filter({"meta.when": {"$gte": dt.date(2024, 1, 2)}})
    assert tree == Condition(key=("meta", "when"), op="gte", value="2024-01-02")
    compiled = compile_filter(tree)
    assert list(compiled.params.values()) == ['$."meta"."when" ? (@ >= "2024-01-02")']


@pytest.mark.parametrize(
    ("spec", "where", "fragment"),
    [
        ("team", "filter", "expected a dict"),
        ({"$foo": 1}, "filter['$foo']", "unknown operator '$foo'"),
        ({"team": {"$foo": 1}}, "filter['team']['$foo']", "unknown operator"),
        ({"team": {"$gt": [1]}}, "filter['team']['$gt']", "expected a string, number"),
        ({"team": ["a", "b"]}, "filter['team']", "use $in"),
        ({"team": {"$in": "er"}}, "filter['team']['$in']", "expects a list"),
        ({"year": {"$between": [1]}}, "filter['year']['$between']", "[low, high]"),
        ({"year": {"$between": [1, None]}}, "filter['year']['$between'][1]", "compare"),
        ({"f": {"$exists": "yes"}}, "filter['f']['$exists']", "True or False"),
        ({"$and": {}}, "filter['$and']", "non-empty list"),
        ({"$or": []}, "filter['$or']", "non-empty list"),
        ({"$and": [{"a": 1}, {"year": {"$gt": {}}}]}, "filter['$and'][1]['year']['$gt']", ""),
        ({"$and": [{}]}, "filter['$and'][0]", "non-empty filter"),
        ({"team": {}}, "filter['team']", "expected an operator"),
        ({"": 1}, "filter['']", "non-empty string"),
        ({"a..b": 1}, "filter['a..b']", "malformed"),
        ({"team": {"$gt": None}}, "filter['team']['$gt']", "compare"),
        ({"team": {"$gte": True}}, "filter['team']['$gte']", "compare"),
        ({"team": {"$like": 3}}, "filter['team']['$like']", "pattern"),
        ({"x": float("nan")}, "filter['x']", "finite"),
        ({"x": object()}, "filter['x']", "got object"),
        ({"x": "a\x00b"}, "filter['x']", "NUL"),
        ({1: "a"}, "filter[1]", "non-empty string"),
    ],
)
def test_malformed_filters_raise_typed_errors_naming_the_place(spec: Any, where: str, fragment: str) -> None:
    with pytest.raises(InvalidFilterError) as info:
        parse_filter(spec)
    assert info.value.path == where
    assert fragment in str(info.value)
    assert isinstance(info.value, InvalidQueryError) and isinstance(info.value, ValueError)


def test_unknown_tree_operator_is_rejected() -> None:
    with pytest.raises(InvalidFilterError, match="unknown operator 'near'"):
        Condition(key="a", op="near", value=1)  # type: ignore[arg-type]


def test_values_never_reach_the_sql_text() -> None:
    evil = 'er") || true || ("\'; DROP TABLE memory_units; --'
    compiled = compile_filter({"team": evil, "name": {"$like": evil}, "x": {"$in": [evil]}})
    text = compiled.clause.as_string()
    assert "DROP" not in text and "er" not in text
    assert all(isinstance(v, str | list) for v in compiled.params.values())
    # the jsonpath literal keeps the value a single, escaped string
    assert (
        compiled.params["mf_0"] == '$."team" ? (@ == ' + '"er\\") || true || (\\"\'; DROP '
        'TABLE memory_units; --")'
    )


def test_compiled_shapes() -> None:
    def params(spec: Any) -> list[Any]:
        return list(compile_filter(spec).params.values())

    assert params({"n": {"$between": [1, 2.5]}}) == ['$."n" ? (@ >= 1 && @ <= 2.5)']
    assert params({"n": {"$in": ["a", 1, True, None]}}) == [
        '$."n" ? (@ == "a" || @ == 1 || @ == true || @ == null)'
    ]
    assert params({"n": {"$nin": [1]}}) == ['$."n"', '$."n" ? (@ == 1)']
    assert params({"n": {"$exists": False}}) == ['$."n"']
    assert params(Condition(key="tags", op="contains", value="x")) == ['$."tags"[*] ? (@ == "x")']
    assert compile_filter({"n": {"$in": []}}).clause.as_string() == "FALSE"
    assert compile_filter(And(())).clause.as_string() == "TRUE"
    assert compile_filter(Or(())).clause.as_string() == "FALSE"
    assert compile_filter({"n": 1}, prefix="f").params == {"f_0": '$."n" ? (@ == 1)'}
    unicode = compile_filter({"ключ": "é😀"}).params["mf_0"]
    assert unicode == '$."\\u043a\\u043b\\u044e\\u0447" ? (@ == "\\u00e9\\ud83d\\ude00")'


def test_column_is_configurable() -> None:
    compiled = compile_filter({"a": 1}, column=sql.Identifier("m"))
    assert compiled.clause.as_string() == '"m" @? %(mf_0)s::jsonpath'
    default = compile_filter({"a": 1})
    assert default.clause.as_string() == '"u"."metadata" @? %(mf_0)s::jsonpath'


def test_escape_like() -> None:
    assert escape_like("50%_off\\") == "50\\%\\_off\\\\"
