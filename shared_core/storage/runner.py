"""Execute sans-I/O plans (:mod:`shared_core.storage.plan`) on psycopg pools, sync or async.

The connection is acquired lazily, at the plan's first statement, so CPU work a plan does
first (embedding a batch) does not hold a connection or an open transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg.rows import RowFactory, RowMaker, dict_row, kwargs_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from shared_core.slots import sequence_builder, slot_fields
from shared_core.storage.plan import (
    Collect,
    Compute,
    Concurrently,
    Copy,
    Launch,
    Launched,
    Pipeline,
    Plan,
    Query,
)
from shared_core.storage.statements import flat

__all__ = ["run_async", "run_sync"]

T = TypeVar("T")

_SET_CONFIG = sql.SQL("set_config({name}, {value}, true)")


def _setting_statements(query: Query) -> list[sql.SQL | sql.Composed]:
    """The statements applying ``query``'s settings: none, or one ``SELECT`` of every
    ``set_config`` (one round trip, not one per setting)."""
    items = dict(query.settings)
    if query.timeout_ms is not None:
        items["statement_timeout"] = str(int(query.timeout_ms))
    if not items:
        return []
    pairs = tuple(items.items())
    if all(_PLAIN.fullmatch(text) for pair in pairs for text in pair):
        return [_settings_statement(pairs)]
    return [_compose_settings(pairs)]


# Names and values that render alike with or without a connection (no quote, no backslash).
_PLAIN = re.compile(r"[\w.\-]*")


def _compose_settings(pairs: tuple[tuple[str, str], ...]) -> sql.Composed:
    calls = sql.SQL(", ").join(
        _SET_CONFIG.format(name=sql.Literal(k), value=sql.Literal(v)) for k, v in pairs
    )
    return sql.SQL("SELECT ") + calls


@functools.lru_cache(maxsize=256)
def _settings_statement(pairs: tuple[tuple[str, str], ...]) -> sql.SQL:
    """:func:`_compose_settings` composed once (shared_core.storage.statements): the graph
    statement's, on every recall's path, rendered four literals at every run."""
    return flat(_compose_settings(pairs))


def _row_factory(query: Query) -> RowFactory[Any]:
    if query.row_type is None:
        return dict_row
    fields = slot_fields(query.row_type)
    if fields is None or not isinstance(query.row_type, type):
        return kwargs_row(query.row_type)
    return functools.partial(_slots_row, query.row_type, fields)


def _slots_row(
    row_type: type, fields: frozenset[str], cursor: psycopg.Cursor[Any] | psycopg.AsyncCursor[Any]
) -> RowMaker[Any]:
    """psycopg's ``kwargs_row(row_type)`` for a slotted dataclass, faster (the same objects).
    Columns that are not exactly its fields fail as ``kwargs_row`` fails: at the first row."""
    if cursor.description is None:
        return kwargs_row(row_type)(cursor)
    names = tuple(c.name for c in cursor.description)
    if len(set(names)) != len(names) or set(names) != fields:
        return kwargs_row(row_type)(cursor)
    # Rows are built by the hundred per recall (the semantic arm's 300 ``MemoryRow``):
    # ``row_type(**dict(zip(names, values)))`` took 2.6 us a row, this 0.7 us (12 fields).
    return sequence_builder(row_type, names)


H = TypeVar("H")


def _take(inflight: dict[int, list[H]], launched: Launched) -> list[H]:
    """The futures or tasks of ``launched``, handed out once."""
    try:
        return inflight.pop(launched.key)
    except KeyError:
        raise ValueError(f"{launched!r} was not launched by this plan, or was collected already") from None


def _shape(cur: psycopg.Cursor[Any] | psycopg.AsyncCursor[Any], query: Query, rows: list[Any] | None) -> Any:
    if query.fetch == "none":
        return cur.rowcount
    if query.fetch == "one":
        return rows[0] if rows else None
    return rows or []


# --------------------------------------------------------------------------------------------
# sync


def _result_sync(cur: psycopg.Cursor[Any], query: Query) -> Any:
    """``query``'s result from its executed cursor, shaped by ``query.fetch``."""
    rows = cur.fetchall() if query.fetch != "none" and cur.description else None
    return _shape(cur, query, rows)


def _exec_sync(conn: psycopg.Connection[Any], query: Query) -> Any:
    with conn.cursor(row_factory=_row_factory(query), binary=query.binary) as cur:
        for stmt in _setting_statements(query):
            cur.execute(stmt)
        cur.execute(query.statement, query.params)
        return _result_sync(cur, query)


def _send_sync(conn: psycopg.Connection[Any], queries: Sequence[Query]) -> list[psycopg.Cursor[Any]]:
    cursors = []
    for query in queries:
        cur = conn.cursor(row_factory=_row_factory(query), binary=query.binary)
        for stmt in _setting_statements(query):
            cur.execute(stmt)
        cur.execute(query.statement, query.params)
        cursors.append(cur)
    return cursors


def _pipeline_sync(conn: psycopg.Connection[Any], op: Pipeline) -> list[Any]:
    with conn.pipeline():
        cursors = _send_sync(conn, op.queries)
    # Leaving the block synced: every result is in.
    out = []
    for cur, query in zip(cursors, op.queries, strict=True):
        with cur:
            out.append(_result_sync(cur, query))
    return out


def _copy_sync(conn: psycopg.Connection[Any], op: Copy) -> int:
    with conn.cursor() as cur, cur.copy(op.statement) as copy:
        for row in op.rows:
            copy.write_row(row)
    return len(op.rows)


def _alone(query: Query) -> bool:
    """Whether a concurrent query can run as its own transaction (autocommit): it has no
    transaction-local settings or timeout to apply first. A BEGIN and a COMMIT are two round
    trips of the connection on the recall's critical path, for one read-only statement
    (measured at 100k, the semantic statements of 50 bench queries x 4, load ~5: p50 10.07 ms
    in a transaction, 9.22 ms alone)."""
    return not query.settings and query.timeout_ms is None


def _framed_sync(conn: psycopg.Connection[Any], query: Query) -> Any:
    """``query`` with its settings in a transaction of its own, sent as one pipeline: BEGIN,
    the ``set_config`` statement, the statement and COMMIT in one round trip instead of four
    (the graph statement, on every recall's path, and the temporal entry; each round trip
    waits for the server process to be scheduled, milliseconds under load). A failed statement
    (a timeout) skips the COMMIT; the transaction is rolled back here and the error raised."""
    try:
        with conn.pipeline(), conn.transaction():
            (cur,) = _send_sync(conn, (query,))
    except psycopg.Error:
        if not conn.closed:
            conn.rollback()
        raise
    with cur:
        return _result_sync(cur, query)


# A statement whose wait in the executor used up the pool's timeout still takes a connection
# that is free: psycopg_pool raises at once for a timeout of 0, even with one idle.
_LAST_WAIT_S = 0.05


def _one_off_sync(pool: ConnectionPool[Any], query: Query, queued_at: float | None = None) -> Any:
    """``query`` on a pooled connection of its own; its result, or the exception it raised.
    ``queued_at``: when it was handed to the executor. The time it waited there for a thread is
    taken off the pool's timeout, so a statement that queued behind many callers' statements
    fails with the pool's timeout (typed as exhaustion) once that time is up, instead of
    waiting the whole timeout again for a connection after it."""
    timeout = None if queued_at is None else max(pool.timeout - (time.monotonic() - queued_at), _LAST_WAIT_S)
    try:
        with pool.connection(timeout) as conn:
            if not _alone(query):
                return _framed_sync(conn, query)
            conn.autocommit = True
            try:
                return _exec_sync(conn, query)
            finally:
                if not conn.broken:  # a broken one is discarded by the pool; the error is kept
                    conn.autocommit = False
    except Exception as exc:  # handed to the plan, which decides
        return exc


def _submit(
    executor: ThreadPoolExecutor, pool: ConnectionPool[Any], queries: Sequence[Query]
) -> list[Future[Any]]:
    """``queries`` handed to the executor's threads, each with the time it was handed over."""
    now = time.monotonic()
    return [executor.submit(_one_off_sync, pool, q, now) for q in queries]


def _concurrently_sync(
    pool: ConnectionPool[Any], executor: ThreadPoolExecutor, queries: Sequence[Query]
) -> list[Any]:
    """The one-off results of ``queries``, each on its own pooled connection: all but the last
    in the executor's threads, the last in this one, which would otherwise only wait for them
    (one thread hand-off less on the recall's path, and one task less queued for the
    executor's few threads when many clients recall at once)."""
    if not queries:
        return []
    futures = _submit(executor, pool, queries[:-1])
    last = _one_off_sync(pool, queries[-1])
    return [*(f.result() for f in futures), last]


def _savepoint(n: int) -> sql.Composed:
    return sql.SQL("SAVEPOINT {}").format(sql.Identifier(f"sp{n}"))


def _rollback_to(n: int) -> sql.Composed:
    return sql.SQL("ROLLBACK TO SAVEPOINT {}").format(sql.Identifier(f"sp{n}"))


def run_sync(pool: ConnectionPool[Any], plan: Plan[T], *, executor: ThreadPoolExecutor) -> T:
    """Run ``plan`` to completion; all its statements share one transaction (all or nothing)."""
    conn: psycopg.Connection[Any] | None = None
    ctx: Any = None
    sp = 0
    value: Any = None
    error: BaseException | None = None
    failed: psycopg.Error | None = None
    pending: Any = None  # an open pipeline of writes sent with wait=False
    inflight: dict[int, list[Future[Any]]] = {}  # launched, not collected yet
    launches = 0
    try:
        while True:
            try:
                op = plan.throw(error) if error is not None else plan.send(value)
            except StopIteration as stop:
                if failed is not None:
                    raise failed from None
                if conn is not None:
                    conn.commit()  # in the open pipeline, if any: one round trip for both
                if pending is not None:
                    pending, open_pipeline = None, pending
                    open_pipeline.__exit__(None, None, None)
                result: T = stop.value
                return result
            if failed is not None:  # the plan went on after a failed statement: never run more
                raise failed
            error = None
            try:
                if pending is not None:
                    pending, open_pipeline = None, pending
                    open_pipeline.__exit__(None, None, None)
                if isinstance(op, Compute):
                    value = op.fn(*op.args)
                elif isinstance(op, Concurrently):
                    value = _concurrently_sync(pool, executor, op.queries)
                elif isinstance(op, Launch):
                    launches += 1
                    inflight[launches] = _submit(executor, pool, op.queries)
                    value = Launched(launches)
                elif isinstance(op, Collect):
                    value = [f.result() for f in _take(inflight, op.launched)]
                else:
                    if conn is None:
                        ctx = pool.connection()
                        conn = ctx.__enter__()
                    if isinstance(op, Copy):
                        value = _copy_sync(conn, op)
                    elif isinstance(op, Pipeline) and not op.wait:
                        pending = conn.pipeline()
                        pending.__enter__()
                        _send_sync(conn, op.queries)
                        value = None
                    elif isinstance(op, Pipeline):
                        value = _pipeline_sync(conn, op)
                    else:
                        if op.timeout_ms is not None:
                            # A savepoint lets a timed-out statement fail without aborting the
                            # plan's transaction, so the plan can fall back.
                            sp += 1
                            conn.execute(_savepoint(sp))
                        value = _exec_sync(conn, op)
            except psycopg.errors.QueryCanceled as exc:
                if conn is not None and sp:
                    conn.execute(_rollback_to(sp))
                error = exc
            except psycopg.Error as exc:
                # The transaction is lost. The plan sees the error so that it can raise it as a
                # typed error it can explain (e.g. retain names the item a refused row came
                # from); it cannot carry on.
                error = failed = exc
    except BaseException:
        if pending is not None:
            with contextlib.suppress(psycopg.Error):
                pending.__exit__(None, None, None)
        if conn is not None:
            with contextlib.suppress(psycopg.Error):  # a lost connection cannot roll back
                conn.rollback()
        raise
    finally:
        # Launched and never collected (the plan ended early, or raised): not started yet,
        # dropped; running, waited for (a one-off hands its error back as a value).
        for futures in inflight.values():
            for future in futures:
                future.cancel()
            wait_futures(futures)
        if ctx is not None:
            ctx.__exit__(None, None, None)


# --------------------------------------------------------------------------------------------
# async


async def _result_async(cur: psycopg.AsyncCursor[Any], query: Query) -> Any:
    """Async twin of :func:`_result_sync`."""
    rows = await cur.fetchall() if query.fetch != "none" and cur.description else None
    return _shape(cur, query, rows)


async def _exec_async(conn: psycopg.AsyncConnection[Any], query: Query) -> Any:
    async with conn.cursor(row_factory=_row_factory(query), binary=query.binary) as cur:
        for stmt in _setting_statements(query):
            await cur.execute(stmt)
        await cur.execute(query.statement, query.params)
        return await _result_async(cur, query)


async def _send_async(
    conn: psycopg.AsyncConnection[Any], queries: Sequence[Query]
) -> list[psycopg.AsyncCursor[Any]]:
    cursors = []
    for query in queries:
        cur = conn.cursor(row_factory=_row_factory(query), binary=query.binary)
        for stmt in _setting_statements(query):
            await cur.execute(stmt)
        await cur.execute(query.statement, query.params)
        cursors.append(cur)
    return cursors


async def _pipeline_async(conn: psycopg.AsyncConnection[Any], op: Pipeline) -> list[Any]:
    async with conn.pipeline():
        cursors = await _send_async(conn, op.queries)
    out = []
    for cur, query in zip(cursors, op.queries, strict=True):
        async with cur:
            out.append(await _result_async(cur, query))
    return out


async def _copy_async(conn: psycopg.AsyncConnection[Any], op: Copy) -> int:
    async with conn.cursor() as cur, cur.copy(op.statement) as copy:
        for row in op.rows:
            await copy.write_row(row)
    return len(op.rows)


async def _framed_async(conn: psycopg.AsyncConnection[Any], query: Query) -> Any:
    """Async twin of :func:`_framed_sync`."""
    try:
        async with conn.pipeline(), conn.transaction():
            (cur,) = await _send_async(conn, (query,))
    except psycopg.Error:
        if not conn.closed:
            await conn.rollback()
        raise
    async with cur:
        return await _result_async(cur, query)


async def _one_off_async(pool: AsyncConnectionPool[Any], query: Query) -> Any:
    try:
        async with pool.connection() as conn:
            if not _alone(query):
                return await _framed_async(conn, query)
            await conn.set_autocommit(True)
            try:
                return await _exec_async(conn, query)
            finally:
                if not conn.broken:
                    await conn.set_autocommit(False)
    except Exception as exc:
        return exc


async def run_async(pool: AsyncConnectionPool[Any], plan: Plan[T]) -> T:
    """Async twin of :func:`run_sync`: the same plan, on an async pool."""
    conn: psycopg.AsyncConnection[Any] | None = None
    ctx: Any = None
    sp = 0
    value: Any = None
    error: BaseException | None = None
    failed: psycopg.Error | None = None
    pending: Any = None  # an open pipeline of writes sent with wait=False
    inflight: dict[int, list[asyncio.Task[Any]]] = {}  # launched, not collected yet
    launches = 0
    cancelled = False
    try:
        while True:
            try:
                op = plan.throw(error) if error is not None else plan.send(value)
            except StopIteration as stop:
                if failed is not None:
                    raise failed from None
                if conn is not None:
                    await conn.commit()  # in the open pipeline, if any: one round trip for both
                if pending is not None:
                    pending, open_pipeline = None, pending
                    await open_pipeline.__aexit__(None, None, None)
                result: T = stop.value
                return result
            if failed is not None:  # the plan went on after a failed statement: never run more
                raise failed
            error = None
            try:
                if pending is not None:
                    pending, open_pipeline = None, pending
                    await open_pipeline.__aexit__(None, None, None)
                if isinstance(op, Compute):
                    value = await asyncio.to_thread(op.fn, *op.args)
                elif isinstance(op, Concurrently):
                    value = list(await asyncio.gather(*(_one_off_async(pool, q) for q in op.queries)))
                elif isinstance(op, Launch):
                    launches += 1
                    inflight[launches] = [asyncio.ensure_future(_one_off_async(pool, q)) for q in op.queries]
                    value = Launched(launches)
                elif isinstance(op, Collect):
                    value = list(await asyncio.gather(*_take(inflight, op.launched)))
                else:
                    if conn is None:
                        ctx = pool.connection()
                        conn = await ctx.__aenter__()
                    if isinstance(op, Copy):
                        value = await _copy_async(conn, op)
                    elif isinstance(op, Pipeline) and not op.wait:
                        pending = conn.pipeline()
                        await pending.__aenter__()
                        await _send_async(conn, op.queries)
                        value = None
                    elif isinstance(op, Pipeline):
                        value = await _pipeline_async(conn, op)
                    else:
                        if op.timeout_ms is not None:
                            sp += 1
                            await conn.execute(_savepoint(sp))
                        value = await _exec_async(conn, op)
            except psycopg.errors.QueryCanceled as exc:
                if conn is not None and sp:
                    await conn.execute(_rollback_to(sp))
                error = exc
            except psycopg.Error as exc:
                # The transaction is lost. The plan sees the error so that it can raise it as a
                # typed error it can explain (e.g. retain names the item a refused row came
                # from); it cannot carry on.
                error = failed = exc
    except BaseException as exc:
        cancelled = isinstance(exc, asyncio.CancelledError)
        if pending is not None:
            with contextlib.suppress(psycopg.Error):
                await pending.__aexit__(None, None, None)
        if conn is not None:
            with contextlib.suppress(psycopg.Error):  # a lost connection cannot roll back
                await conn.rollback()
        raise
    finally:
        # Launched and never collected: waited for (a one-off hands its error back as a value),
        # or, when the recall itself is cancelled, cancelled too.
        for tasks in inflight.values():
            if cancelled:
                for task in tasks:
                    task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if ctx is not None:
            await ctx.__aexit__(None, None, None)
