"""The temporal arm's hop under a filter reads each link's memory by primary key (a LATERAL
fence), so a selective filter cannot turn it into a scan of every matching memory per frontier
memory; an unfiltered recall spreads in one call (recall_temporal_spread, migration 0026), whose
hop is the plain join it always ran (pure)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np

from shared_core.recall.arms import ArmQuery
from shared_core.recall.arms.temporal import DatedHit, _spread, temporal_hop_statement
from shared_core.recall.filters import compile_filter
from shared_core.recall.settings import RecallSettings
from shared_core.schema import load_migrations
from shared_core.storage.dimensions import Dimension
from shared_core.types import TimeWindow
from tests.fakes import statement_text

WINDOW = TimeWindow(start=dt.datetime(2024, 1, 1, tzinfo=dt.UTC), end=dt.datetime(2024, 2, 1, tzinfo=dt.UTC))
PLAIN = "JOIN memory_units u ON u.bank_id = l.bank_id AND u.id = l.to_id"
FENCED = "WHERE u.bank_id = l.bank_id AND u.id = l.to_id OFFSET 0) u"


def _query(spec: dict[str, Any] | None, tags: tuple[str, ...] | None = None) -> ArmQuery:
    return ArmQuery(
        bank="b",
        vector=np.ones(4, dtype=np.float32),
        words=(),
        bigrams=(),
        types=("world",),
        tags=tags,
        tags_match="any",
        n=10,
        window=WINDOW,
        settings=RecallSettings(),
        filter=compile_filter(spec, gin_only=True),
    )


def _first_hop(q: ArmQuery) -> str:
    entry = DatedHit(
        id="00000000-0000-0000-0000-000000000001",
        similarity=0.9,
        occurred_start=dt.datetime(2024, 1, 15, tzinfo=dt.UTC),
        occurred_end=None,
        mentioned_at=None,
        date_grain="day",
    )
    return statement_text(next(_spread(q, [entry], WINDOW, 10)))


def test_the_hop_statement_has_both_forms() -> None:
    dims = Dimension(4)
    plain = temporal_hop_statement(compile_filter(None).clause, dims).as_string(None)
    fenced = temporal_hop_statement(compile_filter(None).clause, dims, filtered=True).as_string(None)
    assert PLAIN in plain and FENCED not in plain
    assert FENCED in fenced and PLAIN not in fenced


def test_a_filtered_recall_hops_through_the_fence_an_unfiltered_one_does_not() -> None:
    assert "FROM recall_temporal_spread(" in _first_hop(_query(None))
    spread = next(m.text for m in load_migrations() if m.name == "recall_temporal_spread")
    assert PLAIN in spread and FENCED not in spread
    assert FENCED in _first_hop(_query({"user": "user-017"}))
    assert FENCED in _first_hop(_query(None, tags=("travel",)))
