"""More callers than pooled connections, on the real server: every call finishes, or fails with
:class:`~shared_core.errors.PoolExhaustedError` after the pool's timeout, on the sync and the
async path; and an engine's async pools never outlive it, so the event loop can shut down.

Every wait here has an outer guard (a thread joined, ``asyncio.wait_for``) far above the pool's
timeout: the guard only turns a hang into a failure, it asserts no duration.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from psycopg_pool import PoolTimeout

from shared_core import MemoryEngine
from shared_core.config import EngineConfig
from shared_core.errors import DatabaseUnavailableError, HindsightError, PoolExhaustedError
from shared_core.storage.plan import Compute, Concurrently, Plan, Query
from tests.engines import sharing_models

# The pool's wait, short so that each exhausted call fails in about a second.
_TIMEOUT_S = 1.0
_POOL = 2
# How long a guard lets a call run before calling it a hang: far above any pool timeout here.
_GUARD_S = 60.0


def _engine(engine: MemoryEngine, **config: Any) -> MemoryEngine:
    """An engine on the session's server, sharing its loaded models."""
    return sharing_models(engine, config=EngineConfig(**config))


def _guarded(call: Callable[[], Any]) -> Any:
    """``call()`` in a thread of its own, its result or its error; a call still running after
    the guard fails the test instead of hanging it."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(call)
        try:
            return future.result(timeout=_GUARD_S)
        except TimeoutError:
            pytest.fail(f"still running after {_GUARD_S} s: a wait the pool's timeout does not bound")


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Bank:
    name: str
    memory_id: str
    document_id: str


@pytest.fixture(scope="module")
def narrow(engine: MemoryEngine) -> Iterator[MemoryEngine]:
    eng = _engine(engine, pool_min_size=1, pool_max_size=_POOL, connect_timeout=_TIMEOUT_S)
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def stocked(narrow: MemoryEngine) -> _Bank:
    name = f"exhaust-{uuid.uuid4().hex[:10]}"
    (memory_id,) = narrow.retain(["Alice works at Google in Zurich."], bank=name, progress=False)
    narrow.retain(
        ["Bob plays chess.", "Carol moved to Lisbon."], bank=name, document_id="doc", progress=False
    )
    narrow.recall("Where does Alice work?", bank=name)  # the bank's embedder check, done
    return _Bank(name=name, memory_id=memory_id, document_id="doc")


# Every public call that takes a connection: (name, sync call, async call) on (engine, bank).
_Call = Callable[[MemoryEngine, _Bank], Any]
_ACall = Callable[[MemoryEngine, _Bank], Awaitable[Any]]
_CALLS: list[tuple[str, _Call, _ACall]] = [
    (
        "recall",
        lambda e, b: e.recall("Where does Alice work?", bank=b.name),
        lambda e, b: e.arecall("Where does Alice work?", bank=b.name),
    ),
    ("get", lambda e, b: e.get(b.memory_id, bank=b.name), lambda e, b: e.aget(b.memory_id, bank=b.name)),
    ("stats", lambda e, b: e.stats(b.name), lambda e, b: e.astats(b.name)),
    ("banks", lambda e, b: e.banks(), lambda e, b: e.abanks()),
    (
        "retain one",
        lambda e, b: e.retain(["Dana flew to Oslo."], bank=b.name, progress=False),
        lambda e, b: e.aretain(["Dana flew to Oslo."], bank=b.name, progress=False),
    ),
    (
        "retain a document",
        lambda e, b: e.retain(["Eli paints.", "Eli sings."], bank=b.name, document_id="d2", progress=False),
        lambda e, b: e.aretain(["Eli paints.", "Eli sings."], bank=b.name, document_id="d2", progress=False),
    ),
    (
        "retain_bulk",
        lambda e, b: e.retain_bulk([f"Note {i} on herons." for i in range(5)], bank=b.name, batch_size=2),
        lambda e, b: e.aretain_bulk([f"Note {i} on herons." for i in range(5)], bank=b.name, batch_size=2),
    ),
    (
        "delete",
        lambda e, b: e.delete([b.memory_id], bank=b.name),
        lambda e, b: e.adelete([b.memory_id], bank=b.name),
    ),
    (
        "delete a document",
        lambda e, b: e.delete(bank=b.name, document_id=b.document_id),
        lambda e, b: e.adelete(bank=b.name, document_id=b.document_id),
    ),
    (
        "get_documents",
        lambda e, b: e.get_documents([b.document_id], bank=b.name),
        lambda e, b: e.aget_documents([b.document_id], bank=b.name),
    ),
    (
        "vectors",
        lambda e, b: e.vectors([b.memory_id], bank=b.name),
        lambda e, b: e.avectors([b.memory_id], bank=b.name),
    ),
    (
        "stream append",
        lambda e, b: e.stream(b.name).append(["Fay rows."]),
        lambda e, b: e.stream(b.name).aappend(["Fay rows."]),
    ),
]


def _assert_exhausted(error: BaseException) -> None:
    """The typed error of an exhausted pool: retryable, naming what to raise, the pool's own
    timeout as its cause (never the raw one, never another error)."""
    assert isinstance(error, PoolExhaustedError), repr(error)
    assert isinstance(error, DatabaseUnavailableError) and error.retryable
    assert (error.pool_max_size, error.timeout_s) == (_POOL, _TIMEOUT_S)
    assert "pool_max_size" in str(error) and "connect_timeout" in str(error)
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, PoolTimeout):
        cause = cause.__cause__
    assert cause is not None, "raised from the pool's timeout"


@pytest.mark.parametrize(("name", "call", "acall"), _CALLS, ids=[c[0] for c in _CALLS])
def _count_runs(engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A list that gets one entry per plan the engine's pools run, sync or async."""
    runs: list[str] = []
    pools = engine._pools
    run, arun = pools.run, pools.arun

    def counted(plan: Any) -> Any:
        runs.append("run")
        return run(plan)

    async def acounted(plan: Any) -> Any:
        runs.append("arun")
        return await arun(plan)

    monkeypatch.setattr(pools, "run", counted)
    monkeypatch.setattr(pools, "arun", acounted)
    return runs


@pytest.mark.parametrize(("name", "call", "acall"), _CALLS, ids=[c[0] for c in _CALLS])
def test_a_call_on_a_sync_pool_whose_connections_are_all_held_raises_pool_exhausted(
    narrow: MemoryEngine,
    stocked: _Bank,
    name: str,
    call: _Call,
    acall: _ACall,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = narrow._pools._sync_pool()
    runs = _count_runs(narrow, monkeypatch)
    held = [pool.getconn() for _ in range(_POOL)]
    try:

        def attempt() -> BaseException | None:
            try:
                call(narrow, stocked)
            except Exception as exc:  # returned, to be checked in the test's thread
                return exc
            return None

        _assert_exhausted(_guarded(attempt))
    finally:
        for conn in held:
            pool.putconn(conn)
    # One wait only: a read is not run again after an exhausted pool (the retry meant for a
    # restart would double the wait, for a pool that is busy, not broken).
    assert runs == ["run"]


@pytest.mark.parametrize(("name", "call", "acall"), _CALLS, ids=[c[0] for c in _CALLS])
async def test_a_call_on_an_async_pool_whose_connections_are_all_held_raises_pool_exhausted(
    narrow: MemoryEngine,
    stocked: _Bank,
    name: str,
    call: _Call,
    acall: _ACall,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = await narrow._pools._async_pool()
    runs = _count_runs(narrow, monkeypatch)
    held = [await pool.getconn() for _ in range(_POOL)]
    try:
        with pytest.raises(PoolExhaustedError) as caught:
            await asyncio.wait_for(acall(narrow, stocked), _GUARD_S)
        _assert_exhausted(caught.value)
    finally:
        for conn in held:
            await pool.putconn(conn)
    assert runs == ["arun"]


# --- a plan holding its connection while a statement of its own waits for another ------------


def _holds_then_waits() -> Plan[None]:
    """The shape of the old recall stall: the plan's own connection taken (its transaction
    open), then a statement on a pooled connection of its own, which waits for one."""
    yield Query("SELECT 1 AS one", fetch="one")
    (result,) = yield Concurrently((Query("SELECT 2 AS two", fetch="one"),))
    if isinstance(result, BaseException):
        raise result


@pytest.fixture(scope="module")
def single(engine: MemoryEngine) -> Iterator[MemoryEngine]:
    eng = _engine(engine, pool_min_size=1, pool_max_size=1, connect_timeout=_TIMEOUT_S)
    yield eng
    eng.close()


async def test_a_plan_waiting_for_a_second_connection_of_a_pool_of_one_raises_pool_exhausted(
    single: MemoryEngine,
) -> None:
    def attempt() -> BaseException | None:
        try:
            single.run(_holds_then_waits())
        except Exception as exc:
            return exc
        return None

    error = _guarded(attempt)
    assert isinstance(error, PoolExhaustedError) and error.pool_max_size == 1
    with pytest.raises(PoolExhaustedError):
        await asyncio.wait_for(single.arun(_holds_then_waits()), _GUARD_S)
    # Both pools whole again: a plan runs.
    assert single.stats(f"none-{uuid.uuid4().hex[:6]}").memories == 0
    assert (await single.astats(f"none-{uuid.uuid4().hex[:6]}")).memories == 0


def _holding(started: threading.Event, release: threading.Event) -> Plan[int]:
    """A plan that takes its connection and keeps it until ``release`` is set (a caller's long
    transaction: an engine API holding a connection)."""
    row = yield Query("SELECT 1 AS one", fetch="one")
    yield Compute(started.set, ())
    yield Compute(release.wait, (_GUARD_S,))
    return int(row["one"])


async def test_calls_while_an_engine_plan_holds_a_pool_of_one_raise_pool_exhausted_then_work(
    single: MemoryEngine, stocked: _Bank
) -> None:
    """Sync: a plan in another thread holds the only connection; async: a task does. Calls
    meanwhile fail typed, after the pool's timeout; once it is released they work."""
    bank = stocked.name
    started, release = threading.Event(), threading.Event()
    with ThreadPoolExecutor(max_workers=1) as holder:
        held = holder.submit(single.run, _holding(started, release))
        assert started.wait(_GUARD_S)
        for call in (
            lambda: single.recall("Alice", bank=bank),
            lambda: single.get(stocked.memory_id, bank=bank),
        ):
            with pytest.raises(PoolExhaustedError):
                _guarded(call)
        release.set()
        assert held.result(timeout=_GUARD_S) == 1
    assert single.get(stocked.memory_id, bank=bank) is not None

    started, release = threading.Event(), threading.Event()
    task = asyncio.ensure_future(single.arun(_holding(started, release)))
    try:
        assert await asyncio.to_thread(started.wait, _GUARD_S)
        with pytest.raises(PoolExhaustedError):
            await asyncio.wait_for(single.arecall("Alice", bank=bank), _GUARD_S)
        with pytest.raises(PoolExhaustedError):
            await asyncio.wait_for(single.aretain(["Gus sails."], bank=bank, progress=False), _GUARD_S)
    finally:
        release.set()
    assert await asyncio.wait_for(task, _GUARD_S) == 1
    assert await single.aget(stocked.memory_id, bank=bank) is not None


@pytest.mark.parametrize("size", [1, 8])
def test_a_server_out_of_reach_is_not_called_an_exhausted_pool(engine: MemoryEngine, size: int) -> None:
    """A timeout while no connection can be made stays a plain DatabaseUnavailableError: the
    advice to raise the pool size would be wrong there. With a pool of one the connection
    being retried is the pool's whole size, so the pool looks full: the failed attempts tell."""
    bad = psycopg.conninfo.make_conninfo(engine.dsn, dbname=f"missing_{uuid.uuid4().hex[:8]}")
    config = EngineConfig(pool_min_size=1, pool_max_size=size, connect_timeout=_TIMEOUT_S)
    eng = MemoryEngine(bad, embedder=engine.embedder, config=config)
    try:
        eng._pools._bootstrap = lambda: None  # the database does not exist: no schema to make
        with pytest.raises(DatabaseUnavailableError) as caught:
            _guarded(lambda: eng.stats("x"))
        assert not isinstance(caught.value, PoolExhaustedError)
    finally:
        eng.close()


# --- an engine's async pools never outlive it -------------------------------------------------


def _in_own_loop(scenario: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``scenario`` on a fresh event loop in a thread, and shut the loop down as
    ``asyncio.run`` does (every task left is cancelled and waited for): returns what it
    returned; fails the test if the loop's shutdown does not finish."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            with asyncio.Runner() as runner:
                out["value"] = runner.run(scenario())
        except BaseException as exc:
            out["error"] = exc

    thread = threading.Thread(target=run, name="own-loop", daemon=True)
    thread.start()
    thread.join(_GUARD_S)
    assert not thread.is_alive(), "the event loop's shutdown never finished"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def _pool_tasks() -> list[str]:
    """The names of the tasks of any hindsight async pool still pending on this loop."""
    return sorted(
        t.get_name()
        for t in asyncio.all_tasks()
        if t.get_name().startswith("hindsight-async") and not t.done()
    )


def test_a_call_racing_aclose_opens_no_new_pool(engine: MemoryEngine, stocked: _Bank) -> None:
    """A call made while ``aclose`` waits for the pool's close (a read retried after a
    timeout, as in the dated-recall stall) used to open a new pool; close() then left it open
    and dropped its closer, and its workers could keep the loop's shutdown waiting for ever
    (the 'async recalls hung past 8 minutes' of the pool-stall fix: the calls had failed, the
    test's event loop never closed)."""

    async def scenario() -> list[str]:
        eng = _engine(engine, pool_max_size=_POOL, connect_timeout=_TIMEOUT_S)
        await eng.arecall("Alice", bank=stocked.name)
        closing = asyncio.ensure_future(eng.aclose())
        await asyncio.sleep(0)  # aclose has started: it waits for the pool's close
        with pytest.raises(HindsightError, match="closed"):
            await eng.arecall("Alice", bank=stocked.name)
        await closing
        await asyncio.sleep(0.1)  # a close's last steps
        assert not eng._pools._async_pools
        return _pool_tasks()

    assert _in_own_loop(scenario) == []


def test_close_from_another_thread_closes_a_running_loops_pool(engine: MemoryEngine, stocked: _Bank) -> None:
    """``close()`` while the loop of an async pool still runs (in another thread) closes that
    pool on its loop, instead of leaving it and its workers to the loop's shutdown."""
    eng = _engine(engine, pool_max_size=_POOL, connect_timeout=_TIMEOUT_S)
    opened, closed = threading.Event(), threading.Event()

    async def scenario() -> list[str]:
        await eng.arecall("Alice", bank=stocked.name)
        pool = eng._pools._async_pools[asyncio.get_running_loop()]
        opened.set()
        assert await asyncio.to_thread(closed.wait, _GUARD_S)
        for _ in range(200):  # scheduled on this loop: it runs at its next turns
            if pool.closed and not _pool_tasks():
                break
            await asyncio.sleep(0.05)
        assert pool.closed
        return _pool_tasks()

    def close_when_opened() -> None:
        assert opened.wait(_GUARD_S)
        eng.close()
        closed.set()

    closer = threading.Thread(target=close_when_opened, daemon=True)
    closer.start()
    assert _in_own_loop(scenario) == []
    closer.join(_GUARD_S)


def test_failed_calls_then_aclose_then_loop_shutdown_finish(engine: MemoryEngine, stocked: _Bank) -> None:
    """The dated-recall stall's ending, on purpose: more recalls than connections fail after
    the pool's timeout (the test holds both), the first error ends the gather while the rest
    still run, the engine is closed with them running, and the loop shuts down."""

    async def scenario() -> tuple[str, list[str]]:
        eng = _engine(engine, pool_max_size=_POOL, connect_timeout=_TIMEOUT_S)
        await eng.arecall("Alice", bank=stocked.name)
        pool = await eng._pools._async_pool()
        held = [await pool.getconn() for _ in range(_POOL)]
        turns = asyncio.Semaphore(6)

        async def ask() -> None:
            async with turns:
                await eng.arecall("Alice", bank=stocked.name)

        try:
            async with eng:
                try:
                    await asyncio.wait_for(asyncio.gather(*(ask() for _ in range(18))), _GUARD_S)
                except PoolExhaustedError as exc:
                    first = type(exc).__name__
                for conn in held:
                    await pool.putconn(conn)
        finally:
            await asyncio.sleep(0.1)
        return first, _pool_tasks()

    assert _in_own_loop(scenario) == ("PoolExhaustedError", [])
