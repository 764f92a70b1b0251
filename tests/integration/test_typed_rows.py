"""Typed rows (``Query(row_type=...)``) on the real server, through both runners: a slotted
dataclass is built without its ``__init__`` (the runner stores the columns through its slots),
and must come out equal to what calling it with the columns by name gives, whatever the column
order; a column the type lacks, or a field no column fills, fails at the first row as before;
other callables are still called by keyword."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

import pytest

from shared_core import MemoryEngine
from shared_core.storage.plan import Plan, Query


@dataclass(frozen=True, slots=True, kw_only=True)
class _Row:
    id: str
    score: float
    at: _dt.datetime | None
    tags: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Checked:
    """A row type with a ``__post_init__``: it must still run."""

    n: int
    seen: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.seen.append(self.n)


_ROWS = """
SELECT x::text AS id, x / 4.0::float8 AS score,
       CASE WHEN x = 2 THEN NULL ELSE timestamptz '2024-01-01 00:00Z' + x * interval '1 day' END AS at,
       ARRAY['t' || x] AS tags
FROM generate_series(1, 3) AS x ORDER BY x"""
_REORDERED = "SELECT tags, at, score, id FROM (" + _ROWS + ") r"


def _fetch(statement: Any, row_type: Any) -> Plan[list[Any]]:
    rows: list[Any] = yield Query(statement, row_type=row_type)
    return rows


def _expected() -> list[_Row]:
    day = _dt.datetime(2024, 1, 1, tzinfo=_dt.UTC)
    return [
        _Row(id="1", score=0.25, at=day + _dt.timedelta(days=1), tags=["t1"]),
        _Row(id="2", score=0.5, at=None, tags=["t2"]),
        _Row(id="3", score=0.75, at=day + _dt.timedelta(days=3), tags=["t3"]),
    ]


async def test_a_slotted_dataclass_row_equals_the_one_its_init_builds_in_any_column_order(
    engine: MemoryEngine,
) -> None:
    for statement in (_ROWS, _REORDERED):
        rows = engine.run(_fetch(statement, _Row))
        assert rows == _expected()
        assert all(type(r) is _Row for r in rows)
        assert await engine.arun(_fetch(statement, _Row)) == _expected()
    with pytest.raises(AttributeError):  # still frozen
        rows[0].score = 1.0  # type: ignore[misc]


async def test_a_column_the_row_type_lacks_or_a_missing_field_fails_at_the_first_row(
    engine: MemoryEngine,
) -> None:
    extra = "SELECT 1 AS n, 2 AS other"
    missing = "SELECT '1' AS id, 0.5::float8 AS score"  # no ``at``: it has no default
    for statement in (extra, missing):
        with pytest.raises(TypeError):
            engine.run(_fetch(statement, _Row if statement is missing else _Checked))
        with pytest.raises(TypeError):
            await engine.arun(_fetch(statement, _Row if statement is missing else _Checked))
    # A field with a default may be left out, as with a call by keyword.
    assert engine.run(_fetch("SELECT '1' AS id, 0.5::float8 AS score, NULL::timestamptz AS at", _Row)) == [
        _Row(id="1", score=0.5, at=None)
    ]


def test_a_row_type_with_post_init_or_a_plain_callable_is_called_by_keyword(engine: MemoryEngine) -> None:
    (checked,) = engine.run(_fetch("SELECT 4 AS n", _Checked))
    assert checked.seen == [4]

    def pair(**columns: Any) -> tuple[Any, ...]:
        return tuple(sorted(columns.items()))

    assert engine.run(_fetch("SELECT 1 AS b, 2 AS a", pair)) == [(("a", 2), ("b", 1))]
