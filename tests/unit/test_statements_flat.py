"""Statements composed once (shared_core.storage.statements): the same statements, token for
token, as those composed at every recall, and only for the queries they were composed for."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re

import numpy as np
import pytest
from psycopg import sql

from shared_core.recall.arms import TYPES_TEST, ArmQuery
from shared_core.recall.arms import graph as graph_arm
from shared_core.recall.arms import keyword as keyword_arm
from shared_core.recall.arms import semantic as semantic_arm
from shared_core.recall.arms import temporal as temporal_arm
from shared_core.recall.filters import compile_filter
from shared_core.recall.settings import RecallSettings
from shared_core.storage import runner
from shared_core.storage.dimensions import Dimension
from shared_core.storage.plan import GENERIC_PLAN, Query
from shared_core.storage.statements import compact, flat
from shared_core.types import FACT_TYPES, TimeWindow

_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|[^\s'\"]+")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _query(**changes: object) -> ArmQuery:
    q = ArmQuery(
        bank="b",
        vector=np.zeros(384, np.float32),
        words=("alice", "went"),
        bigrams=(),
        types=FACT_TYPES,
        tags=None,
        tags_match="any",
        n=300,
        window=None,
        settings=RecallSettings(),
    )
    return dataclasses.replace(q, **changes)  # type: ignore[arg-type]


def test_compact_keeps_quoted_text_and_every_token() -> None:
    text = "SELECT  'a  b''  c',\n     \"x  y\"\n  -- a  comment\n  FROM t  WHERE a - b > 1"
    out = compact(text)
    assert out == "SELECT 'a  b''  c',\n\"x  y\"\n-- a  comment\nFROM t WHERE a - b > 1"
    assert _tokens(out) == _tokens(text)
    for kept in ("SELECT $$ a  b $$", "SELECT E'a\\'  b'", "SELECT 'unclosed  x"):
        assert compact(kept) == kept


@pytest.mark.parametrize(
    "changes",
    [{}, {"tags": ()}, {"tags_match": "all"}, {"tags_match": "any_strict"}, {"types": ("world",)}],
)
def test_the_unfiltered_where_is_every_unfiltered_querys(changes: dict[str, object]) -> None:
    q = _query(**changes)
    assert not q.filtered
    assert q.where_sql == ArmQuery.unfiltered_where()


@pytest.mark.parametrize(
    "changes",
    [{"tags": ("x",)}, {"tags_match": "exact"}, {"filter": compile_filter({"team": "er"})}],
)
def test_filtered_queries_compose_their_statements(changes: dict[str, object]) -> None:
    q = _query(**changes)
    assert q.filtered
    for start in (semantic_arm._start, keyword_arm._start):
        query = start(q)
        assert query is not None
        assert isinstance(query.statement, sql.Composed)


def test_the_arms_send_the_statements_they_composed() -> None:
    q = _query()
    where = q.where_sql
    composed = {
        "semantic": semantic_arm.semantic_rows_statement(where, Dimension(384)),
        "keyword": keyword_arm.keyword_statement(
            where, "bm25", grouped=True, postings=True, types=TYPES_TEST
        ),
        "graph": graph_arm.graph_statement(where, with_entities=True, types=TYPES_TEST),
    }
    sent = {
        "semantic": semantic_arm._start(q),
        "keyword": keyword_arm._start(q),
        "graph": graph_arm._start(
            dataclasses.replace(q, prior={"semantic": [], "keyword": []}, words=("alice",))
        ),
    }
    for arm, statement in composed.items():
        query = sent[arm]
        assert query is not None, arm
        assert isinstance(query.statement, sql.SQL), arm
        assert _tokens(query.statement.as_string()) == _tokens(statement.as_string()), arm
    assert semantic_arm._start(q).statement is semantic_arm._start(q).statement  # composed once


def test_settings_statements_render_as_composed() -> None:
    query = Query("SELECT 1", settings=GENERIC_PLAN, timeout_ms=250)
    (statement,) = runner._setting_statements(query)
    assert isinstance(statement, sql.SQL)
    assert statement.as_string() == (
        "SELECT set_config('plan_cache_mode', 'force_generic_plan', true), "
        "set_config('statement_timeout', '250', true)"
    )
    assert runner._setting_statements(query)[0] is statement
    (odd,) = runner._setting_statements(Query("SELECT 1", settings={"application_name": "it's"}))
    assert isinstance(odd, sql.Composed)  # a quote: composed (and quoted) at each run, as before


def test_flat_renders_literals() -> None:
    assert flat(sql.SQL("SELECT {}").format(sql.Literal(384))).as_string() == "SELECT 384"


def _first_hop(q: ArmQuery) -> Query:
    """The first statement of the temporal arm's spread from one entry point."""
    window = TimeWindow(
        start=_dt.datetime(2024, 1, 1, tzinfo=_dt.UTC), end=_dt.datetime(2024, 2, 1, tzinfo=_dt.UTC)
    )
    entry = temporal_arm.DatedHit(
        id="00000000-0000-0000-0000-000000000001",
        similarity=0.5,
        occurred_start=window.start,
        occurred_end=None,
        mentioned_at=None,
        date_grain="day",
    )
    best = {entry.id: temporal_arm.temporal_proximity(entry.date, window)}
    # The hops an unfiltered recall runs in one call (migration 0026) are still the statement
    # of a 4,001-d one (halfvec, the loop); the statement is the same for every dimension.
    hop = next(temporal_arm._spread_by_hops(q, best))
    assert isinstance(hop, Query)
    return hop


def test_the_temporal_arm_sends_the_statements_it_composed() -> None:
    q = _query()
    window = TimeWindow(
        start=_dt.datetime(2024, 1, 1, tzinfo=_dt.UTC), end=_dt.datetime(2024, 2, 1, tzinfo=_dt.UTC)
    )
    where, dim = q.where_sql, Dimension(384)
    sent = {
        "entry": temporal_arm._start(dataclasses.replace(q, window=window)),
        "dated evidence": temporal_arm._start(dataclasses.replace(q, asks_when=True)),
        "hop": _first_hop(q),
    }
    composed = {
        "entry": temporal_arm.temporal_entry_statement(where, dim),
        "dated evidence": temporal_arm.dated_evidence_statement(where, dim),
        "hop": temporal_arm.temporal_hop_statement(where, dim, filtered=False, types=TYPES_TEST),
    }
    for name, statement in composed.items():
        query = sent[name]
        assert query is not None, name
        assert isinstance(query.statement, sql.SQL), name
        assert _tokens(query.statement.as_string()) == _tokens(statement.as_string()), name
    assert _first_hop(q).statement is _first_hop(q).statement  # composed once
    filtered = _query(tags=("x",))
    assert isinstance(_first_hop(filtered).statement, sql.Composed)
    entry = temporal_arm._start(dataclasses.replace(filtered, window=window))
    assert entry is not None and isinstance(entry.statement, sql.Composed)
