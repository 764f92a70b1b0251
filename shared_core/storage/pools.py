"""The engine's connections: one sync pool, one async pool per event loop, and their closing.

Pools open lazily, at the first plan run, after ``bootstrap`` (schema migrations) has run
once. Every connection is configured the same way (pgvector types, HNSW session settings).
"""

from __future__ import annotations

import asyncio
import math
import select
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, Self, TypeVar

import psycopg
from pgvector.psycopg import register_vector, register_vector_async
from psycopg import pq, sql
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from shared_core.errors import DatabaseUnavailableError, HindsightError, PoolExhaustedError
from shared_core.quiet import install_pool_filter
from shared_core.storage.errors import map_database_error
from shared_core.storage.jsonb import FastJsonbLoader
from shared_core.storage.plan import Plan
from shared_core.storage.runner import run_async, run_sync

__all__ = ["Pools"]

T = TypeVar("T")

# plan_cache_mode: psycopg prepares a statement from its fifth run on a connection, and after
# five more runs Postgres may switch a prepared statement to a generic plan, planned without
# the parameters' values. For recall's statements that plan is worse: the keyword arm's,
# not knowing the bank's share of the table, ANDs a bitmap of every row of the bank (100,000
# at 100k) with the full-text match; measured at 100k (bench bank, 60 statements
# interleaved, load 11): keyword statement p50 39 ms generic vs 20 ms custom, the other
# recall statements within noise, rows identical. Custom plans keep psycopg's parse-once.
# TimeZone UTC: psycopg then loads timestamptz values with ``datetime.UTC`` as their tzinfo
# (any other zone name, the embedded server's 'Etc/UTC' included, gives a ZoneInfo), and
# ``types.as_utc`` returns such a value as is instead of converting it: the library's times are
# UTC throughout, so only the tzinfo object changes, never an instant. Measured at 100k (300
# hydrated candidates of a bench query, 100 runs each way x 3, load ~3.7): HYDRATE fetched in
# 3.19-3.37 ms instead of 3.58-3.88 (minimum), the boosts of a dated query 3.30-3.39 instead of
# 3.72-3.77 ms. The server's own default zone is left alone for other clients.
_SESSION_SETTINGS = sql.SQL(
    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false), "
    "set_config('hnsw.ef_search', {ef}, false), "
    "set_config('hnsw.max_scan_tuples', {tuples}, false), "
    "set_config('plan_cache_mode', 'force_custom_plan', false), "
    "set_config('TimeZone', 'UTC', false)"
)
# Threads running the statements a plan hands off (Launch, all but the last of Concurrently), for
# every caller of the engine. With 4, eight clients' statements queued 72-108 ms a recall for a
# thread while the pool (8 connections) waited ~2 ms; with 8 the queue moves to the pool (19-28
# ms) and 8 clients' throughput at 100k rose +12, +6, -6, +7.5, +6% in five interleaved runs
# (benchmarks/concurrency_ab.py --setup-b, 2026-12-03 09:31-10:33, load 4-10; the two on the
# least loaded host +7.5 and +6%, B ahead in 7 of 8 rounds each), one client unchanged, CPU per
# recall unchanged, the same memories (docs/benchmarks/conc_throughput.md). 16 threads with 16
# connections: no further gain.
_CONCURRENT_WORKERS = 8


def _quiet(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether a pooled connection is known to be usable without a round trip: libpq holds it
    open and idle, and the server has sent nothing since the last result.

    A server that goes away (a restart or shutdown, ``pg_terminate_backend``, an
    ``idle_session_timeout``, its process killed) sends a FATAL message and closes the socket,
    or the kernel closes it: either way the socket turns readable, and the pool's full check
    (an empty query) runs and discards the connection. A healthy idle connection has nothing
    to read (this library never LISTENs), so its check costs one ``poll`` instead of a round
    trip to the server. That round trip ran at every checkout, ~4 per recall on its critical
    path (the keyword, semantic and graph statements' connections and the plan's own), and
    under load each one waits for the server process to be scheduled.
    """
    pgconn = conn.pgconn
    if pgconn.status != pq.ConnStatus.OK or pgconn.transaction_status != pq.TransactionStatus.IDLE:
        return False
    try:
        fd = pgconn.socket
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            return not poller.poll(0)
        readable, _, _ = select.select([fd], [], [], 0)  # Windows: no poll()
        return not readable
    except (OSError, ValueError, psycopg.Error):
        return False  # the full check decides


def _check_sync(conn: psycopg.Connection[Any]) -> None:
    """The sync pool's check at checkout: the full check only when :func:`_quiet` cannot
    vouch for the connection."""
    if not _quiet(conn):
        ConnectionPool.check_connection(conn)


async def _check_async(conn: psycopg.AsyncConnection[Any]) -> None:
    """Async twin of :func:`_check_sync`."""
    if not _quiet(conn):
        await AsyncConnectionPool.check_connection(conn)


def _finish(connections: weakref.WeakSet[psycopg.AsyncConnection[Any]]) -> None:
    """Close, without an event loop, the async connections a pool lost track of.

    When ``asyncio.run`` ends, it cancels the pool's workers together with its closer; a
    connection a worker was adding to, or returning into, the pool at that moment is in no
    queue ``close()`` empties, and stayed open on the server (2 per ``asyncio.run`` cycle).
    ``pgconn.finish()`` is libpq's synchronous close.
    """
    for conn in list(connections):
        if not conn.closed:
            conn.pgconn.finish()


async def _close_at_loop_shutdown(
    pool: AsyncConnectionPool[Any], connections: weakref.WeakSet[psycopg.AsyncConnection[Any]]
) -> None:
    """Close ``pool`` when its event loop shuts down (``asyncio.run`` ending cancels every
    task). The pool's own workers may be cancelled mid-connect and go back to waiting for work
    (psycopg_pool retries a failed connection), which hung ``asyncio.run``'s exit; closing the
    pool sends them their stop message. A no-op once the pool is closed by ``aclose``."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        if not pool.closed:
            await pool.close(timeout=1.0)
        _finish(connections)
        raise


def _typed(exc: Exception) -> Exception:
    mapped = map_database_error(exc)
    return mapped if isinstance(mapped, Exception) else exc


def _timed_out_waiting(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was raised from, a pool's timeout (a plan may have typed it
    already: retain raises ``DatabaseUnavailableError`` from the driver's error)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, PoolTimeout):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _full(pool: ConnectionPool[Any] | AsyncConnectionPool[Any]) -> bool:
    """Whether ``pool`` counts all the connections it may open (in use, idle, or being
    connected: psycopg_pool counts a connection from its first attempt)."""
    return not pool.closed and pool.get_stats().get("pool_size", 0) >= pool.max_size


class _NotedConnection(psycopg.Connection[Any]):
    """A sync pooled connection whose failed connection attempts are noted (``failed``, set
    per :class:`Pools` on a subclass): a pool timeout during an outage is no exhausted pool."""

    failed: ClassVar[Callable[[Exception], None]]
    # Starts the server again when it stopped (the embedded one), True when it runs again at
    # the pool's address: set per Pools, None for a server someone else runs.
    revive: ClassVar[Callable[[], bool] | None] = None
    # psycopg's noise about this connection is dropped (shared_core.quiet.OwnConnectionFilter):
    # its errors reach the caller typed.
    hindsight_owned: ClassVar[bool] = True

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs: Any) -> Self:
        # Nothing was sent on a connection that never opened: once the server runs again, the
        # call waiting for it goes on as if nothing had happened, writes included. Each failed
        # attempt is noted, the retry's too (the outage's time and reason are the last ones).
        for retry in (False, True):
            try:
                return super().connect(conninfo, **kwargs)
            except Exception as exc:
                cls.failed(exc)
                if retry or cls.revive is None or not cls.revive():
                    raise
        raise AssertionError("unreachable: the retry returns or raises")


class _NotedAsyncConnection(psycopg.AsyncConnection[Any]):
    """Async twin of :class:`_NotedConnection`."""

    failed: ClassVar[Callable[[Exception], None]]
    revive: ClassVar[Callable[[], bool] | None] = None
    hindsight_owned: ClassVar[bool] = True

    @classmethod
    async def connect(cls, conninfo: str = "", **kwargs: Any) -> Self:
        for retry in (False, True):
            try:
                return await super().connect(conninfo, **kwargs)
            except Exception as exc:
                cls.failed(exc)
                # Starting a server blocks for a few hundred ms: not on the event loop.
                if retry or cls.revive is None or not await asyncio.to_thread(cls.revive):
                    raise
        raise AssertionError("unreachable: the retry returns or raises")


async def _close_soon(
    pool: AsyncConnectionPool[Any],
    connections: weakref.WeakSet[psycopg.AsyncConnection[Any]],
    closer: asyncio.Task[None] | None,
) -> None:
    """Close ``pool`` on its own loop (scheduled there by :meth:`Pools.close` called from
    elsewhere), then any connection it lost track of, then stop its closer."""
    try:
        await pool.close()
    finally:
        _finish(connections)
        if closer is not None:
            closer.cancel()


class Pools:
    """Run plans on this DSN's connections, sync or async.

    Args:
        dsn: a libpq DSN.
        bootstrap: run once, before the first pool opens (extensions, migrations).
        min_size, max_size: pool bounds (each pool).
        ef_search, max_scan_tuples: pgvector HNSW session settings.
        connect_timeout: seconds to wait for a new connection, or for a free pooled one,
            before a call fails with :class:`~shared_core.errors.DatabaseUnavailableError`.
        outage_hint: what to add to that error (who runs the server, how to start it).
        revive: called when a connection attempt fails, for a server this process runs (the
            embedded one): starts it again if it stopped; True when it runs again at ``dsn``,
            and the attempt is made once more.

    Pooled connections are checked before use (locally when their socket is quiet:
    :func:`_quiet`), so a server restart between calls is not seen; :meth:`run_read` retries
    a read once when the connection breaks during it. Every database failure leaves as a
    :class:`~shared_core.errors.HindsightError`.
    """

    def __init__(
        self,
        dsn: str,
        *,
        bootstrap: Callable[[], None],
        min_size: int,
        max_size: int,
        ef_search: int,
        max_scan_tuples: int,
        connect_timeout: float = 5.0,
        outage_hint: Callable[[], str | None] | None = None,
        revive: Callable[[], bool] | None = None,
    ) -> None:
        self.dsn = dsn
        self._outage_hint = outage_hint
        self._connect_timeout = float(connect_timeout)
        # libpq takes whole seconds (and treats 1 as 2). The pools give up a failing connection
        # attempt after the same time (psycopg_pool's default is 5 minutes of growing back-off),
        # so that the first call after an outage connects at once instead of waiting for the
        # next scheduled attempt.
        self._connect_kwargs: dict[str, Any] = {"connect_timeout": max(2, math.ceil(connect_timeout))}
        self._bootstrap = bootstrap
        self._min_size = min_size
        self._max_size = max_size
        # Iterative scans let a filtered ANN query (bank, fact type, tags) return its full LIMIT
        # instead of stopping at ef_search candidates.
        self._session = _SESSION_SETTINGS.format(
            ef=sql.Literal(str(int(ef_search))), tuples=sql.Literal(str(int(max_scan_tuples)))
        )
        self._lock = threading.Lock()
        self._pool: ConnectionPool[Any] | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._async_pools: dict[asyncio.AbstractEventLoop, AsyncConnectionPool[Any]] = {}
        self._async_connections: dict[
            asyncio.AbstractEventLoop, weakref.WeakSet[psycopg.AsyncConnection[Any]]
        ] = {}
        self._closers: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}
        self._opening: dict[asyncio.AbstractEventLoop, asyncio.Future[AsyncConnectionPool[Any]]] = {}
        # Closes scheduled on loops still running elsewhere, held until done (a loop keeps only
        # a weak reference to a task).
        self._closing_elsewhere: set[asyncio.Task[None]] = set()
        # Set when a close starts (close() or aclose(), so whenever ``closed`` is): no pool opens
        # from then on (see aclose).
        self._closing = False
        self.closed = False
        # When a connection attempt last failed: a pool timeout near it is an outage, not an
        # exhausted pool. psycopg_pool counts a connection that is being retried (its attempts
        # back off over connect_timeout) in its size, so a pool of broken connections being
        # replaced looks as full as one whose connections are all in use.
        self._last_connect_failure = -math.inf
        # Why it failed (the driver's first line): the typed error of a call that timed out
        # during an outage says it, since psycopg_pool's own warnings are kept off stderr.
        self._last_connect_error = ""
        self._revive = revive
        # Set by a failed connection attempt: the next call first makes sure the server runs
        # again (waiting for a start already under way) before it asks the pool for a
        # connection, so that a start slower than the wait of the call that saw the failure
        # costs that one call only.
        self._revive_due = False
        noted = {
            "failed": staticmethod(self._note_connect_failure),
            "revive": staticmethod(revive) if revive is not None else None,
        }
        self._sync_class = type("HindsightConnection", (_NotedConnection,), noted)
        self._async_class = type("HindsightAsyncConnection", (_NotedAsyncConnection,), noted)

    # ---------------------------------------------------------------- running plans
    def run(self, plan: Plan[T]) -> T:
        """Run ``plan`` on the sync pool, in one transaction."""
        pool: ConnectionPool[Any] | None = None
        try:
            if self._revive_due and self._revive is not None:
                self._revive_due = False
                self._revive()
            pool = self._sync_pool()
            assert self._executor is not None
            return run_sync(pool, plan, executor=self._executor)
        except Exception as exc:
            typed = self._failure(exc, pool)
            if typed is exc:
                raise
            raise typed from exc

    async def arun(self, plan: Plan[T]) -> T:
        """Run ``plan`` on this event loop's async pool, in one transaction."""
        pool: AsyncConnectionPool[Any] | None = None
        try:
            if self._revive_due and self._revive is not None:
                self._revive_due = False
                await asyncio.to_thread(self._revive)
            pool = await self._async_pool()
            return await run_async(pool, plan)
        except Exception as exc:
            typed = self._failure(exc, pool)
            if typed is exc:
                raise
            raise typed from exc

    def _failure(
        self, exc: Exception, pool: ConnectionPool[Any] | AsyncConnectionPool[Any] | None
    ) -> Exception:
        """``exc`` as the typed error to raise: a wait for a connection that timed out while
        every connection of the pool was in use says so, and what to raise."""
        if (
            pool is not None
            and _timed_out_waiting(exc)
            and _full(pool)
            # No attempt failed during the wait (or a wait before it: a margin of one more).
            and time.monotonic() - self._last_connect_failure > 2 * self._connect_timeout
        ):
            return PoolExhaustedError(pool_max_size=pool.max_size, timeout_s=self._connect_timeout)
        if self._closing and not isinstance(exc, HindsightError):
            # close() raced this call: the executor it shut down refuses the plan's statements
            # ("cannot schedule new futures after shutdown"), or the pool went mid-statement.
            return HindsightError("this engine is closed")
        typed = _typed(exc)
        if type(typed) is DatabaseUnavailableError:
            return self._outage(typed)
        return typed

    def _note_connect_failure(self, exc: Exception) -> None:
        self._last_connect_failure = time.monotonic()
        self._revive_due = self._revive is not None
        self._last_connect_error = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]

    def _outage(self, typed: DatabaseUnavailableError) -> DatabaseUnavailableError:
        """``typed`` saying why the server cannot be reached, when a connection attempt failed
        lately (its reason, and the hint of whoever runs the server: an embedded server that
        is not running says so)."""
        if time.monotonic() - self._last_connect_failure > 2 * self._connect_timeout + 1:
            return typed
        hint = self._outage_hint() if self._outage_hint is not None else None
        reason = f"; the last connection attempt failed: {self._last_connect_error}"
        return DatabaseUnavailableError(
            f"{typed}{reason}" + (f"; {hint}" if hint else ""), sqlstate=typed.sqlstate
        )

    def run_read(self, make_plan: Callable[[], Plan[T]]) -> T:
        """Run a read-only plan, once more if the database went away during it (a restart):
        reads are idempotent, so the retry is invisible. Not after :class:`PoolExhaustedError`:
        the pool is busy, not broken, and a second wait would double the pool's timeout."""
        try:
            return self.run(make_plan())
        except PoolExhaustedError:
            raise
        except DatabaseUnavailableError:
            return self.run(make_plan())

    async def arun_read(self, make_plan: Callable[[], Plan[T]]) -> T:
        """Async twin of :meth:`run_read`."""
        try:
            return await self.arun(make_plan())
        except PoolExhaustedError:
            raise
        except DatabaseUnavailableError:
            return await self.arun(make_plan())

    # ---------------------------------------------------------------- opening
    def _configure_sync(self, conn: psycopg.Connection[Any]) -> None:
        register_vector(conn)
        conn.adapters.register_loader("jsonb", FastJsonbLoader)
        conn.execute(self._session)
        conn.commit()

    async def _configure_async(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self._async_connections.setdefault(asyncio.get_running_loop(), weakref.WeakSet()).add(conn)
        await register_vector_async(conn)
        conn.adapters.register_loader("jsonb", FastJsonbLoader)
        await conn.execute(self._session)
        await conn.commit()

    def _sync_pool(self) -> ConnectionPool[Any]:
        if self._closing:
            raise HindsightError("this engine is closed")
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    self._bootstrap()
                    install_pool_filter()  # psycopg's noise about our connections (see quiet)
                    self._executor = ThreadPoolExecutor(
                        max_workers=_CONCURRENT_WORKERS, thread_name_prefix="hindsight"
                    )
                    self._pool = ConnectionPool(
                        self.dsn,
                        connection_class=self._sync_class,
                        min_size=self._min_size,
                        max_size=self._max_size,
                        configure=self._configure_sync,
                        kwargs=self._connect_kwargs,
                        timeout=self._connect_timeout,
                        reconnect_timeout=self._connect_timeout,
                        check=_check_sync,
                        open=True,
                        name="hindsight",
                    )
        return self._pool

    async def _async_pool(self) -> AsyncConnectionPool[Any]:
        loop = asyncio.get_running_loop()
        pool = self._async_pools.get(loop)
        if pool is not None:
            return pool
        if self._closing:
            # A call racing aclose() (a read retried after a timeout, say) used to open a new
            # pool while aclose awaited the old one's close; close() then left it to its loop
            # and dropped its closer, and at the loop's shutdown its workers, cancelled in the
            # middle of a task, went back to waiting for work: the loop never finished closing.
            raise HindsightError("this engine is closed")
        # Concurrent first calls on one loop (gather of arecalls) must share one pool: each
        # used to open its own, and the orphans' workers hung asyncio.run's exit.
        opening = self._opening.get(loop)
        if opening is not None:
            return await asyncio.shield(opening)
        opening = loop.create_future()
        self._opening[loop] = opening
        try:
            pool = await self._open_async_pool(loop)
        except asyncio.CancelledError:
            opening.cancel()
            raise
        except BaseException as exc:
            opening.set_exception(exc)
            opening.exception()  # mark it retrieved: the waiters, if any, get it too
            raise
        finally:
            self._opening.pop(loop, None)
        opening.set_result(pool)
        return pool

    async def _open_async_pool(self, loop: asyncio.AbstractEventLoop) -> AsyncConnectionPool[Any]:
        # Bootstrapping (models, migrations) is blocking work: keep it off the loop.
        await asyncio.to_thread(self._sync_pool)
        for stale in [lp for lp in self._async_pools if lp.is_closed()]:
            del self._async_pools[stale]
            self._closers.pop(stale, None)
        install_pool_filter()  # psycopg_pool's empty "error connecting" at loop shutdown, and more
        pool = AsyncConnectionPool(
            self.dsn,
            connection_class=self._async_class,
            min_size=self._min_size,
            max_size=self._max_size,
            configure=self._configure_async,
            kwargs=self._connect_kwargs,
            timeout=self._connect_timeout,
            reconnect_timeout=self._connect_timeout,
            check=_check_async,
            open=False,
            name="hindsight-async",
        )
        await pool.open()
        if self._closing:  # closed while this pool opened: it must not outlive it
            await pool.close()
            raise HindsightError("this engine is closed")
        self._async_pools[loop] = pool
        # The loop keeps only a weak reference to a task: hold this one.
        self._closers[loop] = loop.create_task(
            _close_at_loop_shutdown(pool, self._async_connections.setdefault(loop, weakref.WeakSet())),
            name="hindsight-async-pool-closer",
        )
        return pool

    # ---------------------------------------------------------------- closing
    def close(self) -> None:
        """Close every pool; an async pool whose loop still runs (elsewhere, or this thread's
        inside a coroutine) is closed on that loop, soon after."""
        if self.closed:
            return
        self._closing = True
        self.closed = True
        if self._pool is not None:
            self._pool.close()
        scheduled: set[asyncio.AbstractEventLoop] = set()
        for loop, pool in list(self._async_pools.items()):
            connections = self._async_connections.get(loop, weakref.WeakSet())
            closer = self._closers.get(loop)
            if not loop.is_closed() and loop.is_running():
                # A pool is closed on its own loop: scheduled there (this may be another thread,
                # or that loop's own, inside a coroutine: nothing here waits for it). Left to
                # the loop's shutdown, its closer task, dropped with the rest below, was
                # collected, and the pool's workers could keep the shutdown waiting for ever.
                # The scheduled call holds the closer until then: should the loop shut down
                # first, the closer still closes the pool.
                try:
                    loop.call_soon_threadsafe(self._close_on_loop, pool, connections, closer)
                    scheduled.add(loop)
                    continue
                except RuntimeError:  # it closed meanwhile
                    pass
            if not loop.is_closed():
                loop.run_until_complete(pool.close())
        # Every loop's lost connections, those of pools already forgotten (a finished
        # asyncio.run's) included; a running loop's, once its pool has closed there.
        for loop, connections in self._async_connections.items():
            if loop not in scheduled:
                _finish(connections)
        self._async_pools.clear()
        self._async_connections.clear()
        self._closers.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=False)

    async def aclose(self) -> None:
        """Close this loop's async pool here, then the rest (off the loop)."""
        loop = asyncio.get_running_loop()
        self._closing = True  # before the first await: a call meanwhile opens no new pool
        pool = self._async_pools.pop(loop, None)
        closer = self._closers.pop(loop, None)
        if pool is not None:
            await pool.close()
        if closer is not None:
            closer.cancel()
        await asyncio.to_thread(self.close)

    def _close_on_loop(
        self,
        pool: AsyncConnectionPool[Any],
        connections: weakref.WeakSet[psycopg.AsyncConnection[Any]],
        closer: asyncio.Task[None] | None,
    ) -> None:
        """Start closing ``pool`` on the running loop (called there by :meth:`close`)."""
        task = asyncio.get_running_loop().create_task(
            _close_soon(pool, connections, closer), name="hindsight-async-pool-close"
        )
        self._closing_elsewhere.add(task)
        task.add_done_callback(self._closing_elsewhere.discard)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return (
            f"<Pools {state}: sync {'open' if self._pool else 'not opened'}, {len(self._async_pools)} async>"
        )
