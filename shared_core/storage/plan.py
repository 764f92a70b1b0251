"""Sans-I/O plans: the pipeline's logic as generators that *describe* I/O.

A plan is a generator that yields operations (:class:`Query`, :class:`Copy`,
:class:`Concurrently`, :class:`Compute`) and receives their results. It never touches a
connection or a thread. :mod:`shared_core.storage.runner` executes the same plan with a sync
pool or an async pool, which is how ``MemoryEngine`` and its async twin share one
implementation (the habit psycopg itself uses for its I/O-free generators).

>>> @dataclass(frozen=True, slots=True, kw_only=True)
... class CountRow:
...     n: int
>>> def count_units(bank: str) -> Plan[int]:
...     row = yield Query(COUNT_SQL, {"bank": bank}, fetch="one", row_type=CountRow)
...     return row.n
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, LiteralString, TypeAlias, TypeVar

from psycopg import sql

__all__ = [
    "GENERIC_PLAN",
    "Collect",
    "Compute",
    "Concurrently",
    "Copy",
    "Launch",
    "Launched",
    "Operation",
    "Pipeline",
    "Plan",
    "Query",
    "Statement",
]

T = TypeVar("T")

GENERIC_PLAN: Mapping[str, str] = MappingProxyType({"plan_cache_mode": "force_generic_plan"})
"""``Query.settings`` of a statement whose plan does not depend on its parameters' values, run
with a generic plan: once psycopg has prepared it on a connection (from its fifth run), the
server reuses one plan instead of planning each run (recall's connections force custom plans,
``storage/pools.py``, for the keyword arm's sake). Only for a statement framed in a transaction
of its own anyway (a timeout, other settings): there the setting costs nothing and ends with
the transaction. Framing a statement for it alone cost more than planning did (recall's reads
ahead, hydration and details: per recall 14 more network waits and +2.7 ms of client CPU
against -0.8 ms of server CPU, 2026-12-02). Check the statement with ``EXPLAIN (GENERIC_PLAN)``
against its custom plans: a bank's share of a table is then estimated from the number of
banks, and the plan must not hinge on it (the keyword arm's did)."""

Statement: TypeAlias = "LiteralString | sql.SQL | sql.Composed"
"""SQL text written in the code (a literal: never built from values), or composed with
:mod:`psycopg.sql`. Values always travel as parameters. Of the ``sql.Composable`` kinds only
``SQL`` and ``Composed`` are statements (a lone ``Identifier`` or ``Literal`` is not), which is
exactly what psycopg's ``execute`` accepts besides a literal."""


@dataclass(frozen=True, slots=True)
class Query:
    """Run one statement. The plan receives a list of rows (``fetch="all"``), one row or
    ``None`` (``"one"``), or the affected row count (``"none"``). Rows are dicts, or what
    ``row_type`` makes of the columns passed by name (psycopg's ``kwargs_row``): a frozen row
    dataclass beside the statement, wherever the code reads fields by name.

    ``timeout_ms`` bounds the statement (``SET LOCAL statement_timeout``); on timeout the runner
    throws ``psycopg.errors.QueryCanceled`` into the plan, which may recover. ``settings`` are
    applied with ``set_config(..., true)`` in the same transaction (e.g. pgvector's
    ``hnsw.ef_search``).

    ``binary``: the rows come in Postgres's binary format, which psycopg decodes faster than
    the text format for numbers, timestamps and uuids (the same Python values); for the
    statements whose rows are such plain types that a recall reads by the hundred (not jsonb,
    whose binary form decoded slower: docs/benchmarks/cpu18_recall_cpu.md).
    """

    statement: Statement
    params: Mapping[str, Any] | None = None
    fetch: Literal["all", "one", "none"] = "all"
    timeout_ms: int | None = None
    settings: Mapping[str, str] = field(default_factory=dict)
    row_type: Callable[..., Any] | None = None
    binary: bool = False


@dataclass(frozen=True, slots=True)
class Copy:
    """``COPY ... FROM STDIN`` the given rows (binary-safe, fastest bulk load)."""

    statement: Statement
    rows: Sequence[Sequence[Any]]


@dataclass(frozen=True, slots=True)
class Concurrently:
    """Run several queries at once, each on its own pooled connection, outside any transaction
    the plan holds (each its own transaction: autocommit, unless it has settings or a timeout
    to apply first). The plan receives the results in order; a failed query yields its exception
    object instead of a result, so one slow or broken arm cannot sink the others."""

    queries: tuple[Query, ...]


@dataclass(frozen=True, slots=True)
class Launch:
    """Start several queries as :class:`Concurrently` does, without waiting for them: the plan
    receives a :class:`Launched` handle at once and goes on (CPU work, other statements) while
    they run, then yields :class:`Collect` of the handle for their results, shaped as
    Concurrently's (in order; a failed query's exception object instead of its result, so one
    failure cannot sink the others). What a plan launched and did not collect by the time it
    ends (returns or raises) is waited for by the runner and dropped: no statement outlives its
    plan, and every connection goes back to the pool.

    For statements that do not need the plan's CPU work: recall starts its keyword statement
    before the query is embedded.
    """

    queries: tuple[Query, ...]


@dataclass(frozen=True, slots=True)
class Launched:
    """The handle of a :class:`Launch`, valid for one :class:`Collect` in the same plan."""

    key: int


@dataclass(frozen=True, slots=True)
class Collect:
    """Wait for the queries of a :class:`Launch` and receive their results (once per handle)."""

    launched: Launched


@dataclass(frozen=True, slots=True)
class Pipeline:
    """Run several queries in order, in the plan's transaction, sent together (psycopg's
    pipeline mode: one network round trip instead of one per statement). The plan receives
    their results in order, each shaped as a lone :class:`Query`'s. For statements that do not
    need each other's results: a later one sees what an earlier one wrote, but the plan sees
    nothing until all have run. If one fails, the transaction is lost as with a lone query.
    ``timeout_ms`` is not supported here (a timed-out statement needs a savepoint of its own).

    ``wait=False``: for writes whose results the plan does not need (it receives ``None`` at
    once). They are sent now and their results read with the next operation's, or with the
    commit when the plan ends: no round trip of their own. If one fails, the error reaches the
    plan at its next operation, or the caller at the commit.
    """

    queries: tuple[Query, ...]
    wait: bool = True

    def __post_init__(self) -> None:
        if any(q.timeout_ms is not None for q in self.queries):
            raise ValueError("a Pipeline cannot run queries with timeout_ms")


@dataclass(frozen=True, slots=True)
class Compute:
    """CPU-bound work (embedding, NER, reranking): run inline by the sync runner and in a worker
    thread by the async runner so it never blocks the event loop."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()


Operation: TypeAlias = Query | Copy | Concurrently | Launch | Collect | Pipeline | Compute
Plan: TypeAlias = Generator[Operation, Any, T]
