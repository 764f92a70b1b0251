"""Metadata filters: one neutral filter tree, parsed from PGVector's filter syntax and compiled to
parameterised SQL over a ``metadata`` jsonb column.

The tree (:class:`Condition`, :class:`And`, :class:`Or`, :class:`Not`) is what the engine
takes; the LangChain adapter hands it PGVector-style dicts (:func:`parse_filter`), the
LlamaIndex adapter translates ``MetadataFilters`` into it. :func:`compile_filter` turns a tree
into a :class:`psycopg.sql.Composable` plus named parameters, which every recall arm adds to its
``WHERE`` before fusion, so a filtered recall fills its ``k`` from matching memories only.

Semantics (those of langchain-postgres ``PGVector``, with types respected):

- numbers compare as numbers, strings as text (code-point order), booleans and null by
  equality; a value of another JSON type than the filter's never matches (``{"year": "2021"}``
  is not ``$gt 2020``);
- a list in metadata matches when any element does (``{"tags": "a"}`` matches
  ``["a", "b"]``), like jsonpath's lax mode that PGVector uses;
- a key missing from a memory's metadata never matches a comparison, ``$in``, ``$nin``,
  ``$ne``, ``$like`` or ``$ilike`` (PGVector's ``NULL`` semantics); ``$exists: False`` and
  ``$not`` are how to select memories that lack a key;
- dates and datetimes given as values compare as the ISO strings retain stores them as;
- a dotted key (``"author.name"``) reaches into nested objects.

Indexes: equality (``$eq``, ``$in``, a list's element) is served by the ``jsonb_path_ops`` GIN
index of migration 0008; a range (``$lt $lte $gt $gte $between``) by the same index, as "equals
one of the values under the key that pass it", read from ``metadata_values`` (migration 0018)
before the arms run (:func:`range_values_plan`); every other test is a recheck of the rows
those select.

>>> tree = parse_filter({"team": "er", "year": {"$gte": 2020}})
>>> tree.clauses[1]
Condition(key=('year',), op='gte', value=2020)
>>> compiled = compile_filter(tree)
>>> sorted(compiled.params.items())
[('mf_0', '$."team" ? (@ == "er")'), ('mf_1', '$."year" ? (@ >= 2020)')]
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, get_args

from psycopg import sql

from shared_core.errors import InvalidQueryError
from shared_core.storage.plan import Plan, Query

__all__ = [
    "FILTER_OPS",
    "MATCH_ALL",
    "MAX_FILTER_DEPTH",
    "RANGE_VALUES_MAX",
    "And",
    "CompiledFilter",
    "Condition",
    "FilterExpr",
    "FilterOp",
    "InvalidFilterError",
    "Not",
    "Or",
    "compile_filter",
    "escape_like",
    "has_unindexed_tests",
    "parse_filter",
    "range_conditions",
    "range_value_queries",
    "range_values_plan",
    "range_values_statement",
    "with_range_values",
]

FilterOp = Literal[
    "eq",
    "ne",
    "lt",
    "lte",
    "gt",
    "gte",
    "in",
    "nin",
    "between",
    "like",
    "ilike",
    "exists",
    "contains",
    "is_empty",
]
FILTER_OPS: tuple[FilterOp, ...] = get_args(FilterOp)

_ORDERED_OPS = frozenset({"lt", "lte", "gt", "gte"})
_SCALAR_OPS = frozenset({"eq", "ne", "contains"})
_LIST_OPS = frozenset({"in", "nin"})
_TEXT_OPS = frozenset({"like", "ilike"})
_JSONPATH_COMPARATORS = {"eq": "==", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}
# PGVector's operator names ($-prefixed) for the ops its grammar has.
_PGVECTOR_OPS: dict[str, FilterOp] = {
    "$eq": "eq",
    "$ne": "ne",
    "$lt": "lt",
    "$lte": "lte",
    "$gt": "gt",
    "$gte": "gte",
    "$in": "in",
    "$nin": "nin",
    "$between": "between",
    "$like": "like",
    "$ilike": "ilike",
    "$exists": "exists",
}
_REAL_DATETIME = _dt.datetime  # bound at import: langchain's mock_now patches the module attribute


MAX_FILTER_DEPTH = 32
"""How many ``$and`` / ``$or`` / ``$not`` levels a filter may nest."""


class InvalidFilterError(InvalidQueryError):
    """A metadata filter is malformed. ``path`` locates the offending part, e.g.
    ``filter['$and'][1]['year']``; nothing has been queried."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


Scalar: TypeAlias = "str | int | float | bool | None"


def _scalar(value: Any, path: str, *, ordered: bool = False) -> Scalar:
    """A filter value as a JSON scalar (dates as ISO strings), or an InvalidFilterError."""
    if isinstance(value, _REAL_DATETIME | _dt.date):
        value = value.isoformat()
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidFilterError(path, "a string value cannot contain a NUL byte")
        return value
    if isinstance(value, bool) or value is None:
        if ordered:
            raise InvalidFilterError(
                path, f"expected a number, a string or a date to compare with, got {value!r}"
            )
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidFilterError(path, f"expected a finite number, got {value!r}")
        return value
    raise InvalidFilterError(
        path, f"expected a string, number, bool, None or date, got {type(value).__name__}"
    )


def _key(key: object, path: str) -> tuple[str, ...]:
    if isinstance(key, tuple) and key and all(isinstance(k, str) and k for k in key):
        return key
    if not isinstance(key, str) or not key:
        raise InvalidFilterError(path, f"a metadata key must be a non-empty string, got {key!r}")
    if key.startswith("$"):
        raise InvalidFilterError(path, f"expected a metadata key, got the operator {key!r}")
    parts = tuple(key.split("."))
    if any(not p or "\x00" in p for p in parts):
        raise InvalidFilterError(path, f"malformed metadata key {key!r}")
    return parts


@dataclass(frozen=True, slots=True, kw_only=True)
class Condition:
    """One test of the memory metadata at ``key`` (a path: ``("author", "name")``).

    ``value`` by ``op``: a scalar for ``eq ne lt lte gt gte contains``; a sequence of scalars
    for ``in nin``; ``(low, high)`` for ``between``; a LIKE pattern for ``like ilike``; a bool
    for ``exists``; ignored for ``is_empty`` (missing, null, ``[]`` or ``""``).

    >>> Condition(key="year", op="between", value=[2019, 2021]).value
    (2019, 2021)
    """

    key: tuple[str, ...]
    op: FilterOp
    value: Any = None

    def __init__(
        self, *, key: str | tuple[str, ...], op: FilterOp, value: Any = None, path: str = "filter"
    ) -> None:
        object.__setattr__(self, "key", _key(key, path))
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "value", _check_value(op, value, path))


def _check_value(op: str, value: Any, path: str) -> Any:
    if op not in FILTER_OPS:
        raise InvalidFilterError(path, f"unknown operator {op!r}; expected one of {list(FILTER_OPS)}")
    if op in _SCALAR_OPS:
        if isinstance(value, list | tuple | set | frozenset | Mapping):
            hint = " (use $in for a list of values)" if op == "eq" else ""
            raise InvalidFilterError(path, f"{op} expects a single value, got {type(value).__name__}{hint}")
        return _scalar(value, path)
    if op in _ORDERED_OPS:
        return _scalar(value, path, ordered=True)
    if op in _LIST_OPS:
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, list | tuple | set | frozenset):
            raise InvalidFilterError(path, f"{op} expects a list of values, got {type(value).__name__}")
        return tuple(_scalar(v, f"{path}[{i}]") for i, v in enumerate(value))
    if op == "between":
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, list | tuple) or len(value) != 2:
            raise InvalidFilterError(path, f"between expects [low, high], got {value!r}")
        low = _scalar(value[0], f"{path}[0]", ordered=True)
        high = _scalar(value[1], f"{path}[1]", ordered=True)
        # Bounds that would match nothing, silently, are a typed error saying why (as a
        # reversed temporal_window is): jsonpath compares a number with a string as unknown.
        if isinstance(low, str) != isinstance(high, str):
            raise InvalidFilterError(
                path,
                f"$between bounds are a number and a string ({low!r}, {high!r}), which match "
                "nothing: give both as numbers or both as strings",
            )
        if low > high:  # type: ignore[operator]
            raise InvalidFilterError(path, f"$between bounds are reversed: {low!r} > {high!r}")
        return (low, high)
    if op in _TEXT_OPS:
        if not isinstance(value, str) or "\x00" in value:
            raise InvalidFilterError(path, f"{op} expects a pattern string, got {value!r}")
        return value
    if op == "exists":
        if not isinstance(value, bool):
            raise InvalidFilterError(path, f"exists expects True or False, got {value!r}")
        return value
    return None  # is_empty


@dataclass(frozen=True, slots=True)
class And:
    """Every clause holds (an empty ``And`` matches everything)."""

    clauses: tuple[FilterExpr, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """At least one clause holds (an empty ``Or`` matches nothing)."""

    clauses: tuple[FilterExpr, ...]


@dataclass(frozen=True, slots=True)
class Not:
    """The clause does not hold (a memory the clause cannot judge, e.g. one missing the key of a
    ``like``, counts as not matching it, so ``Not`` keeps it)."""

    clause: FilterExpr


FilterExpr: TypeAlias = Condition | And | Or | Not


# --------------------------------------------------------------------------- PGVector syntax
def parse_filter(
    spec: Mapping[str, Any] | FilterExpr | None, path: str = "filter", *, depth: int = 0
) -> FilterExpr | None:
    """PGVector's filter dict (or an already built tree, returned as is) as a filter tree.

    ``{"key": value}`` is ``$eq``; ``{"key": {"$op": value, ...}}`` (several operators are
    AND-ed); several keys are AND-ed; ``$and`` / ``$or`` take lists of filters, ``$not`` a
    filter or a list (none may hold). ``None`` and ``{}`` mean no filter.

    >>> tree = parse_filter({"$or": [{"team": "er"}, {"year": {"$in": [2020, 2021]}}]})
    >>> type(tree).__name__, tree.clauses[1]
    ('Or', Condition(key=('year',), op='in', value=(2020, 2021)))
    >>> parse_filter({"year": {"$gte": "x", "$foo": 1}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    shared_core.recall.filters.InvalidFilterError: filter['year']['$foo']: unknown operator ...
    """
    if spec is None or isinstance(spec, Condition | And | Or | Not):
        return spec
    if depth > MAX_FILTER_DEPTH:
        # Python's recursion limit would stop a deeper one mid-parse (a RecursionError), and
        # the SQL compiler and Postgres' own stack after it; no real filter comes near.
        raise InvalidFilterError(path, f"filter is nested more than {MAX_FILTER_DEPTH} levels deep")
    if not isinstance(spec, Mapping):
        raise InvalidFilterError(
            path, f"expected a dict such as {{'key': 'value'}}, got {type(spec).__name__}"
        )
    if not spec:
        return None
    clauses: list[FilterExpr] = []
    for key, value in spec.items():
        where = f"{path}[{key!r}]"
        if isinstance(key, str) and key.lower() in ("$and", "$or"):
            clauses.append(_parse_list(key.lower(), value, where, depth + 1))
        elif isinstance(key, str) and key.lower() == "$not":
            if isinstance(value, list | tuple):
                inner = _parse_list("$or", value, where, depth + 1)
            else:
                inner = _parse_required(value, where, depth + 1)
            clauses.append(Not(inner))
        elif isinstance(key, str) and key.startswith("$"):
            raise InvalidFilterError(
                where,
                f"unknown operator {key!r} at the top of a filter; "
                "expected a metadata key, $and, $or or $not",
            )
        else:
            clauses.append(_parse_field(key, value, where))
    return clauses[0] if len(clauses) == 1 else And(tuple(clauses))


def _parse_required(value: Any, path: str, depth: int) -> FilterExpr:
    parsed = parse_filter(value, path, depth=depth)
    if parsed is None:
        raise InvalidFilterError(path, "expected a non-empty filter")
    return parsed


def _parse_list(op: str, value: Any, path: str, depth: int) -> FilterExpr:
    if not isinstance(value, list | tuple) or not value:
        raise InvalidFilterError(path, f"{op} expects a non-empty list of filters, got {value!r}")
    clauses = tuple(_parse_required(v, f"{path}[{i}]", depth) for i, v in enumerate(value))
    return And(clauses) if op == "$and" else Or(clauses)


def _parse_field(key: Any, value: Any, path: str) -> FilterExpr:
    if not isinstance(value, Mapping):
        return Condition(key=_key(key, path), op="eq", value=value, path=path)
    if not value:
        raise InvalidFilterError(path, "expected an operator such as {'$eq': value}, got {}")
    parts: list[FilterExpr] = []
    for name, operand in value.items():
        where = f"{path}[{name!r}]"
        op = _PGVECTOR_OPS.get(name.lower()) if isinstance(name, str) else None
        if op is None:
            raise InvalidFilterError(
                where, f"unknown operator {name!r}; expected one of {sorted(_PGVECTOR_OPS)}"
            )
        parts.append(Condition(key=_key(key, path), op=op, value=operand, path=where))
    return parts[0] if len(parts) == 1 else And(tuple(parts))


# --------------------------------------------------------------------------- compilation
@dataclass(frozen=True, slots=True, kw_only=True)
class CompiledFilter:
    """A filter as a boolean SQL expression over the metadata column, and its parameters
    (named ``{prefix}_{n}``: merge them into the statement's parameters)."""

    clause: sql.Composable
    params: Mapping[str, Any] = field(default_factory=dict)
    #: The tree compiled (None for :data:`MATCH_ALL`): what :func:`range_values_plan` recompiles.
    tree: FilterExpr | None = None
    #: Whether the tests the GIN index cannot narrow by are kept out of index scans
    #: (``compile_filter``'s ``gin_only``).
    gin_only: bool = False
    #: Whether compiled with the values of its ranges (:func:`with_range_values`): the arms'
    #: final form.
    indexed: bool = False


MATCH_ALL = CompiledFilter(clause=sql.SQL("TRUE"))


def escape_like(text: str) -> str:
    r"""``text`` with LIKE's wildcards escaped (backslash is Postgres' default escape).

    >>> escape_like("100%_sure\\")
    '100\\%\\_sure\\\\'
    """
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _json_literal(value: Scalar) -> str:
    """A scalar as a jsonpath literal (jsonpath's literals are JSON's)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value)  # ASCII-only, escapes included: a valid jsonpath string


def _jsonpath(key: tuple[str, ...]) -> str:
    return "$" + "".join("." + json.dumps(part) for part in key)


class _Compiler:
    def __init__(
        self,
        column: sql.Composable,
        prefix: str,
        value_sets: Mapping[Condition, Sequence[str]] | None = None,
        gin_only: bool = False,
    ) -> None:
        self.column = column
        self.prefix = prefix
        self.params: dict[str, Any] = {}
        self.value_sets = value_sets or {}
        self.gin_only = gin_only

    def param(self, value: Any, cast: str | None = None) -> sql.Composable:
        name = f"{self.prefix}_{len(self.params)}"
        self.params[name] = value
        placeholder: sql.Composable = sql.Placeholder(name)
        if cast is not None:
            placeholder = sql.SQL("{}::{}").format(placeholder, sql.SQL(cast))
        return placeholder

    def matches(self, jsonpath: str) -> sql.Composable:
        # @? with a filter expression: true when some item at the path passes, false (never
        # NULL) otherwise, including for items of another type. A GIN index can serve it.
        return sql.SQL("{} @? {}").format(self.column, self.param(jsonpath, "jsonpath"))

    def any_equal(self, key: tuple[str, ...], values: Sequence[Scalar]) -> sql.Composable:
        return self.any_json_equal(key, [_json_literal(v) for v in values])

    def unindexed(self, jsonpath: str) -> sql.Composable:
        """A test the GIN index cannot narrow by (an order, a key's existence: jsonb_path_ops
        hashes a path with its value). As ``@?`` the planner still hands it to a bitmap scan of
        the index, which then reads every entry (at 100k: 12-22 ms under load for a range
        beside an equality, against ~2 ms for the equality alone); with ``gin_only`` it is
        the same test as a function call (``jsonb_path_exists`` with ``silent``, which
        suppresses the errors ``@?`` does), a recheck of the rows the other tests select."""
        if not self.gin_only:
            return self.matches(jsonpath)
        return sql.SQL("jsonb_path_exists({}, {}, '{{}}'::jsonb, true)").format(
            self.column, self.param(jsonpath, "jsonpath")
        )

    def exists(self, key: tuple[str, ...]) -> sql.Composable:
        return self.unindexed(_jsonpath(key))

    def compile(self, node: FilterExpr) -> sql.Composable:
        if isinstance(node, And):
            if not node.clauses:
                return sql.SQL("TRUE")
            return sql.SQL("({})").format(sql.SQL(" AND ").join(self.compile(c) for c in node.clauses))
        if isinstance(node, Or):
            if not node.clauses:
                return sql.SQL("FALSE")
            return sql.SQL("({})").format(sql.SQL(" OR ").join(self.compile(c) for c in node.clauses))
        if isinstance(node, Not):
            return sql.SQL("(NOT coalesce({}, FALSE))").format(self.compile(node.clause))
        return self.condition(node)

    def condition(self, c: Condition) -> sql.Composable:
        values = self.value_sets.get(c)
        if values is None:
            return self.test(c)
        if not values:
            # No value under the key passes the range: nothing matches.
            return sql.SQL("FALSE")
        # "Equals one of the values that pass the range" (the GIN index serves equality, not
        # order) in place of the range: every item the range accepts is one of them, and an
        # item equal to one of them passes the range (the lookup ran the range's own jsonpath
        # test on each value; the two tests see the same items at the key, lax mode both), so
        # it selects the same memories. The range itself was rechecked on every row too until
        # 2026-12-02: a third jsonpath call per row for `$and` (source, year >= 2024) at 100k,
        # 47 -> 42 ms (min of 12) for the statement reading its 12,448 matches (load ~4).
        return self.any_json_equal(c.key, values)

    @staticmethod
    def range_predicate(c: Condition) -> str:
        """The jsonpath filter of range ``c`` (``lt lte gt gte between``), as applied to the
        items at its key by the memories' test and to a value itself by :meth:`value_test`."""
        if c.op == "between":
            low, high = c.value
            return f"(@ >= {_json_literal(low)} && @ <= {_json_literal(high)})"
        return f"(@ {_JSONPATH_COMPARATORS[c.op]} {_json_literal(c.value)})"

    @staticmethod
    def value_test(c: Condition) -> str:
        """The jsonpath of range ``c`` applied to a value itself (``$``), as the memories'
        test applies it to the items at its key."""
        return f"$ ? {_Compiler.range_predicate(c)}"

    def any_json_equal(self, key: tuple[str, ...], json_texts: Sequence[str]) -> sql.Composable:
        # JSON texts as jsonb prints them are valid jsonpath literals (same escapes).
        test = " || ".join(f"@ == {text}" for text in json_texts)
        return self.matches(f"{_jsonpath(key)} ? ({test})")

    def test(self, c: Condition) -> sql.Composable:
        path = _jsonpath(c.key)
        op = c.op
        if op == "eq":
            return self.matches(f"{path} ? (@ == {_json_literal(c.value)})")
        if op in _JSONPATH_COMPARATORS or op == "between":
            return self.unindexed(f"{path} ? {self.range_predicate(c)}")
        if op == "ne":
            return sql.SQL("({} AND NOT {})").format(self.exists(c.key), self.any_equal(c.key, [c.value]))
        if op == "in":
            return self.any_equal(c.key, c.value) if c.value else sql.SQL("FALSE")
        if op == "nin":
            if not c.value:
                return self.exists(c.key)
            return sql.SQL("({} AND NOT {})").format(self.exists(c.key), self.any_equal(c.key, c.value))
        if op == "contains":
            return self.matches(f"{path}[*] ? (@ == {_json_literal(c.value)})")
        if op == "exists":
            found = self.exists(c.key)
            return found if c.value else sql.SQL("(NOT {})").format(found)
        text_path = self.param(list(c.key), "text[]")
        if op in _TEXT_OPS:
            # Text of the value, as PGVector's ->> (a missing key is NULL: no match).
            return sql.SQL("(({} #>> {}) {} {})").format(
                self.column, text_path, sql.SQL("LIKE" if op == "like" else "ILIKE"), self.param(c.value)
            )
        # is_empty: missing, null, [] or "".
        return sql.SQL(
            "(coalesce({} #> {}, 'null'::jsonb) IN ('null'::jsonb, '[]'::jsonb, '\"\"'::jsonb))"
        ).format(self.column, text_path)


def compile_filter(
    node: FilterExpr | Mapping[str, Any] | None,
    *,
    column: sql.Composable | None = None,
    prefix: str = "mf",
    value_sets: Mapping[Condition, Sequence[str]] | None = None,
    gin_only: bool = False,
) -> CompiledFilter:
    """Compile a filter tree (or a PGVector-style dict) to SQL over ``column`` (default
    ``u.metadata``: the recall statements alias ``memory_units`` as ``u``).

    ``value_sets`` gives range conditions (:func:`range_conditions`) the JSON texts of every
    value under their key that passes them (:func:`range_values_plan` reads them): such a
    condition is tested as "equals one of these" instead, which the GIN index serves; an empty set
    compiles to ``FALSE``. ``gin_only`` writes the tests the GIN index cannot narrow by
    (orders, ``exists``, also inside ``ne`` / ``nin``) as function calls the planner keeps
    out of index scans (the same rows: see ``_Compiler.unindexed``); the default keeps them
    as ``@?``, which the planner's estimates read from its statistics' sample.

    >>> from psycopg import sql
    >>> compile_filter(None).clause.as_string()
    'TRUE'
    >>> c = compile_filter({"tag": {"$like": "a%"}}, column=sql.Identifier("metadata"))
    >>> c.clause.as_string(), c.params
    ('(("metadata" #>> %(mf_0)s::text[]) LIKE %(mf_1)s)', {'mf_0': ['tag'], 'mf_1': 'a%'})
    """
    tree = parse_filter(node) if not isinstance(node, Condition | And | Or | Not) else node
    if tree is None:
        return MATCH_ALL
    compiler = _Compiler(
        column if column is not None else sql.Identifier("u", "metadata"), prefix, value_sets, gin_only
    )
    clause = compiler.compile(tree)
    return CompiledFilter(
        clause=clause,
        params=dict(compiler.params),
        tree=tree,
        gin_only=gin_only,
        indexed=value_sets is not None,
    )


# --------------------------------------------------------------------------- indexed ranges
_RANGE_OPS = frozenset({"lt", "lte", "gt", "gte", "between"})
# Keys longer than this are not counted in metadata_values (migration 0018: a btree entry has
# a size limit), so their ranges are never rewritten.
_MAX_KEY_BYTES = 256
# A value whose JSON text is longer is counted under this marker (0018): its key's list of
# values is incomplete, so its ranges are not rewritten.
_LONG_VALUE = '{"long": true}'
RANGE_VALUES_MAX = 256
"""The most values a range may pass to be rewritten as "equals one of them": a speed guard,
not a semantic one (a range over more distinct values, e.g. timestamps, stays a recheck of the
rows the other conditions select; its GIN test would read as many posting lists)."""


_UNINDEXED_OPS = frozenset({"lt", "lte", "gt", "gte", "between", "exists", "ne", "nin"})


def has_unindexed_tests(node: FilterExpr | None) -> bool:
    """Whether a tree holds a test the GIN index cannot narrow by (see ``_Compiler.unindexed``).

    >>> has_unindexed_tests(parse_filter({"team": "er"}))
    False
    >>> has_unindexed_tests(parse_filter({"team": {"$ne": "er"}}))
    True
    """
    if isinstance(node, And | Or):
        return any(has_unindexed_tests(c) for c in node.clauses)
    if isinstance(node, Not):
        return has_unindexed_tests(node.clause)
    return isinstance(node, Condition) and node.op in _UNINDEXED_OPS


def range_conditions(node: FilterExpr | None) -> tuple[Condition, ...]:
    """The range conditions (``lt lte gt gte between``) of a tree that an index could serve:
    those not under a :class:`Not` (a negated range selects what the range does not), on keys
    :func:`range_values_plan` can look up. Each once, in tree order.

    >>> range_conditions(parse_filter({"team": "er", "year": {"$gte": 2024}}))
    (Condition(key=('year',), op='gte', value=2024),)
    >>> range_conditions(parse_filter({"$not": {"year": {"$lt": 2024}}}))
    ()
    """
    found: dict[Condition, None] = {}

    def walk(n: FilterExpr) -> None:
        if isinstance(n, And | Or):
            for clause in n.clauses:
                walk(clause)
        elif isinstance(n, Condition) and n.op in _RANGE_OPS and len(n.key[0].encode()) <= _MAX_KEY_BYTES:
            found.setdefault(n)

    if node is not None:
        walk(node)
    return tuple(found)


# The values under a top-level key of the bank (metadata_values, migration 0018) that pass one
# range: a btree range scan over the typed column (bounds made inclusive: a superset), then the
# filter's own jsonpath test on each value (exact: the same comparison as on the memories).
# The marker of a value too long to be listed comes back too (``listed`` false): then the list
# is incomplete and the range is left as it was. At most RANGE_VALUES_MAX + 1 rows.
_RANGE_VALUES = sql.SQL("""
SELECT v.value::text AS value, v.value <> %(long)s::jsonb AS listed
FROM metadata_values v
WHERE v.bank_id = %(bank)s AND v.key = %(key)s AND v.memories > 0
  AND (({range} AND jsonb_path_exists(v.value, %(test)s::jsonpath)) OR v.value = %(long)s::jsonb)
LIMIT %(cap)s + 1""")


@dataclass(frozen=True, slots=True, kw_only=True)
class _ValueRow:
    """One row of :data:`_RANGE_VALUES`: a value's JSON text, and whether it is a real value
    (false: the marker of values too long to be listed)."""

    value: str
    listed: bool


def _bounds(c: Condition) -> tuple[Scalar | None, Scalar | None]:
    if c.op == "between":
        low, high = c.value
        return low, high
    if c.op in ("gt", "gte"):
        return c.value, None
    return None, c.value


def range_values_statement(c: Condition) -> sql.Composed | None:
    """The statement listing the values under ``c``'s top-level key that pass ``c`` (a range),
    or None when its bounds are not of one type, number or string (such a range is left as it
    was: nothing to narrow by)."""
    low, high = _bounds(c)
    kinds = {isinstance(v, str) for v in (low, high) if v is not None}
    if len(kinds) != 1:
        return None
    column = sql.Identifier("v", "txt" if kinds == {True} else "num")
    cast = sql.SQL("" if kinds == {True} else "::numeric")
    parts: list[sql.Composable] = [sql.SQL("{} IS NOT NULL").format(column)]
    if low is not None:
        parts.append(sql.SQL("{} >= {}{}").format(column, sql.Placeholder("low"), cast))
    if high is not None:
        parts.append(sql.SQL("{} <= {}{}").format(column, sql.Placeholder("high"), cast))
    return _RANGE_VALUES.format(range=sql.SQL(" AND ").join(parts))


def _bound_param(value: Scalar) -> str:
    return value if isinstance(value, str) else _json_literal(value)


def _range_params(bank: str, c: Condition) -> dict[str, Any]:
    low, high = _bounds(c)
    # Numbers go over as their jsonpath literal's text, cast to numeric: the same decimal the
    # jsonpath test parses (a float8 parameter would be rounded to 15 digits by the cast).
    params: dict[str, Any] = {
        "bank": bank,
        "key": c.key[0],
        "long": _LONG_VALUE,
        "cap": RANGE_VALUES_MAX,
        "test": _Compiler.value_test(c),
    }
    if low is not None:
        params["low"] = _bound_param(low)
    if high is not None:
        params["high"] = _bound_param(high)
    return params


def range_value_queries(bank: str, compiled: CompiledFilter) -> tuple[tuple[Condition, Query], ...]:
    """The lookups :func:`range_values_plan` runs (independent statements: a caller may send
    them together, with others, in one :class:`~shared_core.storage.plan.Pipeline`), each
    with the range condition it serves. None for a filter already given its values."""
    if compiled.indexed:
        return ()
    out = []
    for c in range_conditions(compiled.tree):
        statement = range_values_statement(c)
        if statement is not None:
            out.append((c, Query(statement, _range_params(bank, c), row_type=_ValueRow)))
    return tuple(out)


def with_range_values(
    compiled: CompiledFilter, found: Mapping[Condition, Sequence[_ValueRow]]
) -> CompiledFilter:
    """``compiled`` recompiled for the arms' statements (``gin_only``) with the values
    ``found`` by :func:`range_value_queries` (a range passing more than
    :data:`RANGE_VALUES_MAX` values, or on a key whose values are not all listed, is left a
    recheck); ``compiled`` itself when that changes nothing (no range, no test the index
    cannot serve, or compiled so already)."""
    if compiled.indexed or not has_unindexed_tests(compiled.tree):
        return compiled
    sets = {
        c: tuple(r.value for r in rows)
        for c, rows in found.items()
        if len(rows) <= RANGE_VALUES_MAX and all(r.listed for r in rows)
    }
    return compile_filter(compiled.tree, value_sets=sets, gin_only=True)


def range_values_plan(bank: str, compiled: CompiledFilter) -> Plan[CompiledFilter]:
    """``compiled`` with each range condition of its tree tested as "equals one of the
    values under its key that pass it" (:func:`compile_filter`'s ``value_sets``), which the
    GIN index of migration 0008 serves: one lookup in ``metadata_values`` per range. A range
    passing more than :data:`RANGE_VALUES_MAX` values, or on a key whose values are not all
    listed, is left as it was. Returns ``compiled`` itself when nothing changes.

    The lookup and the recall's statements are separate statements: a memory retained in
    between with a new value in the range is not seen, as if it had been retained after."""
    found: dict[Condition, Sequence[_ValueRow]] = {}
    for c, query in range_value_queries(bank, compiled):
        found[c] = yield query
    return with_range_values(compiled, found)
