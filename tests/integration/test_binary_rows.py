"""Rows in the binary format (``Query(binary=True)``): the same Python values as the text
format's, through both runners, and a recall whose plain-typed statements (keyword, semantic,
hydration, graph, temporal entry, dated evidence) read binary rows returns the same memories,
field for field, as one reading every row as text. A ``real`` column is the exception: its
text form is rounded (why the temporal hop statement, whose link weights are reals, reads text).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import shared_core.storage.runner as runner
from shared_core import MemoryEngine
from shared_core.storage.plan import Plan, Query
from tests.integration.arm_banks import dated_notes


@dataclass(frozen=True, slots=True, kw_only=True)
class _Row:
    id: str
    score: float
    count: int
    at: _dt.datetime | None
    grain: str | None
    tags: list[str]


_ROWS = """
SELECT gen_random_uuid()::text AS id, x / 7.0::float8 AS score, x * 1000 AS count,
       CASE WHEN x = 2 THEN NULL ELSE timestamptz '2024-01-01 00:00Z' + x * interval '1 day 3 min' END AS at,
       CASE WHEN x = 3 THEN NULL ELSE 'day' END AS grain, ARRAY['t' || x] AS tags
FROM generate_series(1, 4) AS x ORDER BY x"""


def _fetch(statement: str, *, binary: bool, row_type: Any = _Row) -> Plan[list[Any]]:
    rows: list[Any] = yield Query(statement, row_type=row_type, binary=binary)
    return rows


def _same(text: list[Any], binary: list[Any]) -> None:
    assert [dataclasses.replace(r, id="") for r in binary] == [dataclasses.replace(r, id="") for r in text]
    # the same types and time zones, not only equal values
    assert repr([dataclasses.replace(r, id="") for r in binary]) == repr(
        [dataclasses.replace(r, id="") for r in text]
    )


async def test_binary_rows_are_the_text_rows_through_both_runners(engine: MemoryEngine) -> None:
    text = engine.run(_fetch(_ROWS, binary=False))
    assert len(text) == 4 and text[0].at is not None and text[0].at.tzinfo is _dt.UTC
    _same(text, engine.run(_fetch(_ROWS, binary=True)))
    _same(await engine.arun(_fetch(_ROWS, binary=False)), await engine.arun(_fetch(_ROWS, binary=True)))


@dataclass(frozen=True, slots=True, kw_only=True)
class _Weight:
    weight: float


def test_a_real_column_is_rounded_in_text_only(engine: MemoryEngine) -> None:
    statement = "SELECT 0.9644676::real AS weight"
    (text,) = engine.run(_fetch(statement, binary=False, row_type=_Weight))
    (binary,) = engine.run(_fetch(statement, binary=True, row_type=_Weight))
    assert text.weight == 0.9644676
    assert binary.weight != text.weight  # the float32's exact value, 0.9644675850868225


@pytest.fixture
def text_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Every recall statement read as text (its ``binary`` flag recorded, then dropped)."""
    flags: list[bool] = []
    one_off = runner._one_off_sync

    def as_text(pool: Any, query: Query, queued_at: float | None = None) -> Any:
        flags.append(query.binary)
        return one_off(pool, dataclasses.replace(query, binary=False), queued_at)

    monkeypatch.setattr(runner, "_one_off_sync", as_text)
    yield flags


def test_a_recall_reading_binary_rows_returns_what_one_reading_text_returns(
    engine: MemoryEngine, bank: str, request: pytest.FixtureRequest
) -> None:
    engine.retain(dated_notes(), bank=bank, progress=False)
    now = _dt.datetime(2025, 1, 1, tzinfo=_dt.UTC)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("hiking in the alps with a friend", {}),
        ("What did I do in March 2023?", {}),  # a window: the temporal entry and its spread
        ("When was the pottery class?", {}),  # a "when" question: the dated evidence
        ("jazz concerts", {"tags": ["odd"], "k": 5}),
        ("a new puppy", {"filter": {"team": "b"}}),
    ]

    def recall_all() -> list[list[Any]]:
        return [
            engine.recall(q, bank=bank, query_timestamp=now, reranker=reranker, **o).memories
            for reranker in ("none", "learned")
            for q, o in calls
        ]

    binary = recall_all()
    flags = request.getfixturevalue("text_only")
    text = recall_all()
    assert any(flags) and not all(flags)  # binary statements (and text ones) were run as text
    assert all(binary), "every recall returned memories"
    assert repr(binary) == repr(text)
