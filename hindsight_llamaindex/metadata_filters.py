"""LlamaIndex ``MetadataFilters`` translated to the engine's neutral filter tree.

Recall applies the tree inside every arm's SQL (see :mod:`shared_core.recall.filters`), so a
filtered retrieval returns ``similarity_top_k`` matching nodes, not the matches among what an
unfiltered recall happened to return.

Operators map as follows (``key`` may be dotted to reach into nested metadata):

==========================  =======================================================
``FilterOperator``          meaning
==========================  =======================================================
``EQ NE GT GTE LT LTE``     comparison; numbers as numbers, strings as text
``IN NIN``                  equal to one (none) of a list of values
``ANY`` / ``ALL``           a list field contains any / all of the values
``CONTAINS``                a list field contains the value
``TEXT_MATCH``              a string field contains the text (``_INSENSITIVE``: any case)
``IS_EMPTY``                missing, null, ``[]`` or ``""``
==========================  =======================================================

``FilterCondition.AND`` / ``OR`` combine, ``NOT`` holds when none of its filters does;
``MetadataFilters`` nest. As in PGVector, a memory missing a key never matches a comparison,
``NE`` or ``NIN`` on it.

>>> from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters
>>> to_filter_tree(MetadataFilters(filters=[MetadataFilter(key="team", value="er")]))
Condition(key=('team',), op='eq', value='er')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from shared_core.recall.filters import (
    And,
    Condition,
    FilterExpr,
    FilterOp,
    InvalidFilterError,
    Not,
    Or,
    escape_like,
)

__all__ = ["to_filter_tree"]

_DIRECT: dict[FilterOperator, FilterOp] = {
    FilterOperator.EQ: "eq",
    FilterOperator.NE: "ne",
    FilterOperator.GT: "gt",
    FilterOperator.GTE: "gte",
    FilterOperator.LT: "lt",
    FilterOperator.LTE: "lte",
    FilterOperator.IN: "in",
    FilterOperator.NIN: "nin",
    FilterOperator.CONTAINS: "contains",
}


def _values(value: Any, path: str, op: FilterOperator) -> Sequence[Any]:
    if isinstance(value, list | tuple):
        return value
    raise InvalidFilterError(path, f"{op.name} expects a list of values, got {type(value).__name__}")


def _one(f: MetadataFilter, path: str) -> FilterExpr:
    op = FilterOperator(f.operator)
    if op in _DIRECT:
        return Condition(key=f.key, op=_DIRECT[op], value=f.value, path=path)
    if op in (FilterOperator.ANY, FilterOperator.ALL):
        values = _values(f.value, path, op)
        if not values:
            raise InvalidFilterError(path, f"{op.name} expects a non-empty list of values")
        parts = tuple(
            Condition(key=f.key, op="contains", value=v, path=f"{path}[{i}]") for i, v in enumerate(values)
        )
        return Or(parts) if op == FilterOperator.ANY else And(parts)
    if op in (FilterOperator.TEXT_MATCH, FilterOperator.TEXT_MATCH_INSENSITIVE):
        if not isinstance(f.value, str):
            raise InvalidFilterError(path, f"{op.name} expects a string, got {f.value!r}")
        like: FilterOp = "like" if op == FilterOperator.TEXT_MATCH else "ilike"
        return Condition(key=f.key, op=like, value=f"%{escape_like(f.value)}%", path=path)
    if op == FilterOperator.IS_EMPTY:
        return Condition(key=f.key, op="is_empty", path=path)
    raise InvalidFilterError(path, f"filter operator {op.name} is not supported")


def to_filter_tree(filters: MetadataFilters | None, path: str = "filters") -> FilterExpr | None:
    """``MetadataFilters`` (nested to any depth) as a filter tree; ``None`` or an empty
    ``MetadataFilters`` mean no filter. A malformed filter raises
    :class:`~shared_core.recall.filters.InvalidFilterError` naming it, e.g.
    ``filters.filters[1]``."""
    if filters is None:
        return None
    if not isinstance(filters, MetadataFilters):
        raise InvalidFilterError(path, f"expected MetadataFilters, got {type(filters).__name__}")
    parts: list[FilterExpr] = []
    for i, f in enumerate(filters.filters):
        where = f"{path}.filters[{i}]"
        if isinstance(f, MetadataFilters):
            inner = to_filter_tree(f, where)
            if inner is not None:
                parts.append(inner)
        else:
            parts.append(_one(f, where))
    condition = FilterCondition(filters.condition or FilterCondition.AND)
    if not parts:
        return None
    if condition == FilterCondition.NOT:
        return Not(parts[0] if len(parts) == 1 else Or(tuple(parts)))
    if len(parts) == 1:
        return parts[0]
    return Or(tuple(parts)) if condition == FilterCondition.OR else And(tuple(parts))
