"""Send / Receive: statements sent in the plan's transaction that run while the plan computes,
their results received later, on the real server, through both runners (retain/small.py sends
its bank statements and semantic searches before the NER)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from shared_core import MemoryEngine
from shared_core.errors import DatabaseError
from shared_core.storage.plan import Compute, Pipeline, Plan, Query, Receive, Send
from tests.integration.test_launch import _marker, _running


def _sent_meanwhile(dsn: str, marker: str) -> Plan[list[Any]]:
    sent = yield Send(
        (
            Query("SELECT set_config('hindsight.send_test', 'mine', true)", fetch="none"),
            Query(f"SELECT pg_sleep(0.3), 7 AS {marker}", fetch="one"),  # type: ignore[arg-type]
        )
    )
    seen = yield Compute(_running, (dsn, marker))
    # A pipeline goes in the Send's round trip; it runs in the same transaction, after it.
    [setting] = yield Pipeline((Query("SELECT current_setting('hindsight.send_test') AS s", fetch="one"),))
    _, row = yield Receive(sent)
    return [seen, row[marker], setting["s"]]


async def test_sent_statements_run_while_the_plan_computes_in_its_transaction(engine: MemoryEngine) -> None:
    assert engine.run(_sent_meanwhile(engine.dsn, _marker())) == [True, 7, "mine"]
    assert await engine.arun(_sent_meanwhile(engine.dsn, _marker())) == [True, 7, "mine"]


def _received_alone() -> Plan[list[Any]]:
    sent = yield Send((Query("SELECT 3 AS n", fetch="one"),))
    yield Compute(int, ("4",))
    [row] = yield Receive(sent)
    again = yield Query("SELECT 5 AS n", fetch="one")
    return [row["n"], again["n"]]


async def test_a_receive_alone_waits_for_the_sent_results(engine: MemoryEngine) -> None:
    assert engine.run(_received_alone()) == [3, 5]
    assert await engine.arun(_received_alone()) == [3, 5]


def _failing_send(bank: str) -> Plan[None]:
    sent = yield Send(
        (
            Query(
                "INSERT INTO banks (bank_id, embedding_model, embedding_dimension) VALUES (%(b)s, 'm', 3)",
                {"b": bank},
                fetch="none",
            ),
            Query("SELECT 1/0 AS boom", fetch="one"),
        )
    )
    yield Compute(int, ("4",))
    yield Receive(sent)


async def test_a_failed_sent_statement_reaches_the_plan_and_nothing_lands(
    engine: MemoryEngine, bank: str
) -> None:
    with pytest.raises(DatabaseError, match="division by zero"):
        engine.run(_failing_send(bank))
    with pytest.raises(DatabaseError, match="division by zero"):
        await engine.arun(_failing_send(bank))
    with psycopg.connect(engine.dsn) as conn:
        row = conn.execute("SELECT count(*) FROM banks WHERE bank_id = %s", (bank,)).fetchone()
    assert row == (0,)


def _received_twice() -> Plan[None]:
    sent = yield Send((Query("SELECT 1 AS n", fetch="one"),))
    yield Receive(sent)
    yield Receive(sent)


def test_results_are_received_once(engine: MemoryEngine) -> None:
    with pytest.raises(ValueError, match="received already"):
        engine.run(_received_twice())
