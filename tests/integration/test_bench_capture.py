"""The statement what-ifs' capture (``benchmarks/_capture.py``) on the real server: a recall's
statements are recorded with their parameters, only the kinds asked for, and the rebuilt scope's
filtered statement accepts the captured parameters and returns the rows the recall's arm did."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import psycopg
import pytest
from pgvector.psycopg import register_vector

from shared_core import MemoryEngine, MemoryItem
from shared_core.recall.arms import semantic, type_clause

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import _capture as C


def _semantic_kind(text: str) -> str | None:
    return "semantic" if "matching AS" in text else None


def test_a_filtered_recall_is_captured_and_its_statement_rebuilt(engine: MemoryEngine, bank: str) -> None:
    items = [
        MemoryItem(text=f"Note {i}: the team reviewed the {topic} plan", metadata={"team": team})
        for i, (topic, team) in enumerate(
            [("budget", "a"), ("hiring", "b"), ("budget", "b"), ("travel", "a"), ("launch", "b")]
        )
    ]
    engine.retain(items, bank=bank)
    execute = psycopg.Cursor.execute
    with C.capturing(_semantic_kind) as captured:
        result = engine.recall("budget plan", bank=bank, filter={"team": "b"}, reranker="none")
    assert psycopg.Cursor.execute is execute  # restored
    assert captured and {kind for kind, _, _ in captured} == {"semantic"}
    args = argparse.Namespace(filter={"team": "b"}, tags=None, tags_match="any")
    q = C.scope_arm_query(engine, bank, args)
    statement = semantic.filtered_semantic_rows_statement(q.where_sql, q.dimension, types=type_clause(q))
    _, text, params = captured[0]
    assert statement.as_string(None) == text
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        register_vector(conn)
        ids = {str(row[0]) for row in conn.execute(statement, params).fetchall()}
    teams = {m.id: m.metadata.get("team") for m in result.memories}
    assert ids and ids >= set(teams) and set(teams.values()) == {"b"}


def test_capturing_restores_the_cursor_after_an_error() -> None:
    execute = psycopg.Cursor.execute
    with pytest.raises(RuntimeError), C.capturing(_semantic_kind):
        raise RuntimeError("boom")
    assert psycopg.Cursor.execute is execute
