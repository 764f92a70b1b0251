"""The pools' checkout check: a healthy idle connection is vouched for without a round trip to
the server, and one whose server side is gone is still caught before a plan uses it, so a
write (never retried) succeeds after every pooled backend was terminated, on both pools."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from shared_core import MemoryEngine
from shared_core.storage import pools
from tests.engines import sharing_models


@pytest.fixture
def tagged(engine: MemoryEngine) -> Iterator[tuple[MemoryEngine, str]]:
    """An engine on the test server whose connections carry an application name of their own,
    so its backends (and only its) can be terminated; shares the session engine's models."""
    name = f"poolcheck-{uuid.uuid4().hex[:8]}"
    dsn = make_conninfo(engine.dsn, application_name=name)
    eng = sharing_models(engine, dsn)
    yield eng, name
    eng.close()


@pytest.fixture
def full_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every full (round-trip) check the pools run, by pool kind."""
    seen: list[str] = []
    sync_check, async_check = ConnectionPool.check_connection, AsyncConnectionPool.check_connection

    def counted_sync(conn: Any) -> None:
        seen.append("sync")
        sync_check(conn)

    async def counted_async(conn: Any) -> None:
        seen.append("async")
        await async_check(conn)

    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(counted_sync))
    monkeypatch.setattr(AsyncConnectionPool, "check_connection", staticmethod(counted_async))
    return seen


def _terminate(engine: MemoryEngine, name: str) -> int:
    """Terminate every backend of the connections named ``name``; wait until they are gone."""
    with psycopg.connect(engine.dsn, autocommit=True, application_name="poolcheck-admin") as conn:
        row = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
            [name],
        ).fetchone()
        assert row is not None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            left = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [name]
            ).fetchone()
            if left is not None and left[0] == 0:
                break
            time.sleep(0.05)
    return int(row[0])


def test_a_healthy_connection_is_checked_without_a_round_trip(
    tagged: tuple[MemoryEngine, str], bank: str, full_checks: list[str]
) -> None:
    eng, _ = tagged
    eng.retain(["Alice joined Google in March 2021."], bank=bank, progress=False)
    asyncio.run(eng.aretain(["Bob moved to Paris."], bank=bank, progress=False))
    full_checks.clear()
    assert eng.recall("Where does Alice work?", bank=bank).memories
    assert asyncio.run(eng.arecall("Where does Bob live?", bank=bank)).memories
    assert full_checks == []


def test_a_terminated_connection_is_caught_before_a_write(
    tagged: tuple[MemoryEngine, str], bank: str, full_checks: list[str]
) -> None:
    eng, name = tagged
    ids = eng.retain(["Alice joined Google in March 2021."], bank=bank, progress=False)
    assert eng.recall("Alice", bank=bank).memories  # several pooled connections, now idle
    full_checks.clear()
    assert _terminate(eng, name) >= 1
    # A retain is not retried: it works only if no terminated connection reaches it.
    ids += eng.retain(["Carol fed the herons."], bank=bank, progress=False)
    assert "sync" in full_checks
    assert eng.stats(bank).memories == len(ids) == 2


def test_a_terminated_async_connection_is_caught_before_a_write(
    tagged: tuple[MemoryEngine, str], bank: str, full_checks: list[str]
) -> None:
    eng, name = tagged

    async def run() -> None:
        await eng.aretain(["Alice joined Google in March 2021."], bank=bank, progress=False)
        assert (await eng.arecall("Alice", bank=bank)).memories
        full_checks.clear()
        assert await asyncio.to_thread(_terminate, eng, name) >= 1
        await eng.aretain(["Carol fed the herons."], bank=bank, progress=False)
        assert "async" in full_checks

    asyncio.run(run())
    assert eng.stats(bank).memories == 2


def test_quiet_reads_the_socket(engine: MemoryEngine) -> None:
    """Unit of the check: an idle open connection is quiet; one whose backend was terminated is
    not (its socket turns readable); one in a transaction is not vouched for."""
    with psycopg.connect(engine.dsn) as conn:
        conn.commit()
        assert pools._quiet(conn)
        conn.execute("SELECT 1")
        assert not pools._quiet(conn)  # in a transaction
        conn.rollback()
        pid = conn.info.backend_pid
        with psycopg.connect(engine.dsn, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", [pid])
        deadline = time.monotonic() + 10
        while pools._quiet(conn) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not pools._quiet(conn)
    assert "application_name" not in conninfo_to_dict(engine.dsn)
