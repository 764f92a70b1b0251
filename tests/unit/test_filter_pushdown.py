"""Metadata filters reach every arm's SQL (and the fill), with their parameters (pure)."""

from __future__ import annotations

import datetime as dt

import numpy as np

from shared_core.recall.arms import ArmQuery
from shared_core.recall.arms.temporal import temporal_hop_statement
from shared_core.recall.filters import compile_filter
from shared_core.recall.hydrate import FILL
from shared_core.recall.pipeline import ARMS
from shared_core.recall.settings import RecallSettings
from shared_core.types import TimeWindow
from tests.fakes import statement_text


def _query(spec: dict[str, object] | None) -> ArmQuery:
    return ArmQuery(
        bank="b",
        vector=np.ones(4, dtype=np.float32),
        words=("zurich",),
        bigrams=(),
        types=("world",),
        tags=None,
        tags_match="any",
        n=10,
        window=TimeWindow(start=dt.datetime(2024, 1, 1), end=dt.datetime(2024, 2, 1)),
        settings=RecallSettings(),
        filter=compile_filter(spec),
    )


def test_every_arm_statement_carries_the_filter_and_its_parameters() -> None:
    q = _query({"team": "er", "year": {"$gte": 2020}})
    for name, arm in ARMS.items():
        query = arm.start(q)
        assert query is not None, name
        text = statement_text(query)
        assert '"u"."metadata" @? %(mf_0)s::jsonpath' in text, name
        assert '"u"."metadata" @? %(mf_1)s::jsonpath' in text, name
        assert query.params is not None
        assert query.params["mf_0"] == '$."team" ? (@ == "er")', name
    hop = temporal_hop_statement(q.where_sql, q.dimension).as_string(None)
    assert '"u"."metadata" @? %(mf_0)s::jsonpath' in hop
    assert "{where}" in FILL


def test_no_filter_is_true() -> None:
    q = _query(None)
    assert q.where_sql.as_string(None) == "(TRUE AND TRUE)"
    assert not any(k.startswith("mf_") for k in q.params())
