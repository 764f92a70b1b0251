"""Launch / Collect: statements that run while the plan computes, on the real server, through
both runners; and recall's keyword statement, launched before the query is embedded."""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
import uuid
from typing import Any

import psycopg
import pytest

from shared_core import MemoryEngine, MemoryItem, RecallResult
from shared_core.config import EngineConfig
from shared_core.errors import DatabaseError, HindsightError
from shared_core.recall import pipeline
from shared_core.recall.arms import ScoredRow
from shared_core.recall.arms.keyword import KEYWORD
from shared_core.storage.plan import Collect, Compute, Launch, Plan, Query
from tests.engines import sharing_models


def _running(dsn: str, marker: str) -> bool:
    """Whether a backend is running a statement that carries ``marker`` (polled for up to 10
    s: a launched statement is seen at once; one never sent is never seen)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(200):
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE %s "
                "AND pid <> pg_backend_pid()",
                (f"%{marker}%",),
            ).fetchone()
            if row and row[0]:
                return True
            time.sleep(0.05)
    return False


def _launched_meanwhile(dsn: str, marker: str) -> Plan[list[Any]]:
    # The marker is a column name: a statement's text, not a value, so pg_stat_activity shows it.
    launched = yield Launch(
        (
            Query(f"SELECT pg_sleep(0.3), 7 AS {marker}"),  # type: ignore[arg-type]
            Query("SELECT 1/0 AS boom"),
        )
    )
    seen = yield Compute(_running, (dsn, marker))
    slow, broken = yield Collect(launched)
    return [seen, slow[0][marker], type(broken).__name__]


def _marker() -> str:
    return f"launch_{uuid.uuid4().hex[:12]}"


async def test_launched_statements_run_while_the_plan_computes_and_one_failure_sinks_none(
    engine: MemoryEngine,
) -> None:
    expected = [True, 7, "DivisionByZero"]
    assert engine.run(_launched_meanwhile(engine.dsn, _marker())) == expected
    assert await engine.arun(_launched_meanwhile(engine.dsn, _marker())) == expected


class _Refused(HindsightError):
    """What a failing CPU step raises (an embedding model that cannot load, say)."""


def _raise_while_launched(dsn: str, marker: str) -> Plan[None]:
    yield Launch((Query(f"SELECT pg_sleep(0.3), 1 AS {marker}"),))  # type: ignore[arg-type]
    yield Compute(_refuse, (dsn, marker))


def _refuse(dsn: str, marker: str) -> None:
    assert _running(dsn, marker)
    raise _Refused("no model")


def _never_collected(marker: str) -> Plan[str]:
    yield Launch((Query(f"SELECT pg_sleep(0.2), 1 AS {marker}"),))  # type: ignore[arg-type]
    return "done"


def _idle(engine: MemoryEngine, marker: str) -> None:
    """Nothing carrying ``marker`` runs any more, and every pooled connection went back as it
    came (idle, not in autocommit)."""
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE %s "
            "AND pid <> pg_backend_pid()",
            (f"%{marker}%",),
        ).fetchone()
    assert row == (0,)
    pool = engine._pools._sync_pool()
    held = [pool.getconn() for _ in range(pool.max_size)]
    try:
        assert not any(conn.autocommit or conn.broken for conn in held)
    finally:
        for conn in held:
            pool.putconn(conn)


async def test_a_plan_that_raises_or_ends_before_collecting_waits_for_what_it_launched(
    engine: MemoryEngine,
) -> None:
    for run in (engine.run, engine.arun):
        marker = _marker()
        with pytest.raises(_Refused, match="no model"):  # the step's own error, unchanged
            result = run(_raise_while_launched(engine.dsn, marker))
            if not isinstance(result, type(None)):
                await result
        _idle(engine, marker)
        marker = _marker()
        result = run(_never_collected(marker))
        assert (result if isinstance(result, str) else await result) == "done"
        _idle(engine, marker)


def _collected_twice() -> Plan[None]:
    launched = yield Launch((Query("SELECT 1 AS n"),))
    yield Collect(launched)
    yield Collect(launched)


async def test_a_handle_is_collected_once(engine: MemoryEngine) -> None:
    with pytest.raises(ValueError, match="collected already"):
        engine.run(_collected_twice())
    with pytest.raises(ValueError, match="collected already"):
        await engine.arun(_collected_twice())


# --- recall ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_bank(engine: MemoryEngine) -> str:
    bank = f"launch-{uuid.uuid4().hex[:10]}"
    engine.retain(
        ["Alice works at Google in Zurich.", "Bob plays chess on Sundays.", "Carol moved to Lisbon."],
        bank=bank,
        progress=False,
    )
    return bank


def test_recall_starts_the_keyword_statement_before_the_query_is_embedded(
    engine: MemoryEngine, small_bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = _marker()
    start = KEYWORD.start

    def slow_keyword(q: Any) -> Query | None:
        query = start(q)
        assert query is not None
        # The same statement, behind a sleep that names it (so pg_stat_activity shows it).
        # (named first: pg_stat_activity keeps the first 1 kB of a statement's text).
        statement = psycopg.sql.SQL("SELECT k.id, k.score FROM pg_sleep(0.3) AS {}, ({}) k").format(
            psycopg.sql.Identifier(marker), query.statement
        )
        return dataclasses.replace(query, statement=statement)

    monkeypatch.setitem(pipeline.ARMS, "keyword", dataclasses.replace(KEYWORD, start=slow_keyword))  # type: ignore[arg-type]
    embed = engine.embedder.embed_query
    seen: list[bool] = []

    def embed_and_look(text: str) -> Any:
        seen.append(_running(engine.dsn, marker))
        return embed(text)

    monkeypatch.setattr(engine.embedder, "embed_query", embed_and_look)
    result = engine.recall("Where does Alice work?", bank=small_bank, reranker="none")
    assert seen == [True]
    assert "Alice works at Google in Zurich." in [m.text for m in result.memories]


@pytest.mark.parametrize("vector_free", [True, False])
async def test_a_failed_keyword_statement_raises_the_same_typed_error_launched_or_not(
    engine: MemoryEngine, small_bank: str, monkeypatch: pytest.MonkeyPatch, vector_free: bool
) -> None:
    def broken(q: Any) -> Query:
        return Query("SELECT 1/0 AS id, 0.0 AS score", row_type=ScoredRow)

    monkeypatch.setitem(
        pipeline.ARMS,
        "keyword",
        dataclasses.replace(KEYWORD, start=broken, vector_free=vector_free),  # type: ignore[arg-type]
    )
    with pytest.raises(DatabaseError, match="division by zero"):
        engine.recall("Where does Alice work?", bank=small_bank, reranker="none")
    with pytest.raises(DatabaseError, match="division by zero"):
        await engine.arecall("Where does Alice work?", bank=small_bank, reranker="none")
    # The semantic statement of the same recall was not left running; the pool is whole.
    _idle(engine, "1/0 AS id")


def test_more_concurrent_recalls_than_pooled_connections_all_finish(
    engine: MemoryEngine, small_bank: str
) -> None:
    """An undated recall waiting for its launched statements holds no pooled connection of its
    own meanwhile (a bank's embedder check runs on one of its own too): six threads on a pool of
    two all finish, none waiting out the pool's timeout, with the results one recall alone
    gives (a plan holding a connection while its graph statement waited for one stalled until
    the pool's timeout)."""
    from concurrent.futures import ThreadPoolExecutor

    from shared_core.config import EngineConfig

    alone = [m.id for m in engine.recall("Where does Alice work?", bank=small_bank, reranker="none").memories]
    with MemoryEngine(engine.dsn, config=EngineConfig(pool_max_size=2, connect_timeout=60.0)) as narrow:
        # No warm-up: the first recalls of the bank check its embedder concurrently too.

        def ask(_: int) -> list[str]:
            result = narrow.recall("Where does Alice work?", bank=small_bank, reranker="none", trace=True)
            assert result.trace is not None and "seeded_arms" in result.trace.timings_ms  # the graph ran
            return [m.id for m in result.memories]

        with ThreadPoolExecutor(max_workers=6) as pool:
            answers = list(pool.map(ask, range(18)))
        # No request for a connection timed out (a timed-out read is retried once, invisibly).
        assert narrow._pools._sync_pool().get_stats().get("requests_errors", 0) == 0
    assert answers == [alone] * 18


@pytest.fixture(scope="module")
def dated_bank(engine: MemoryEngine) -> str:
    """Memories dated days apart in May 2024, so retain links them temporally (each to its
    nearest dated ones) and a question naming May spreads from its entry points."""
    bank = f"launch-dated-{uuid.uuid4().hex[:10]}"
    days = [
        (3, "Alice started a pottery class in Zurich."),
        (5, "Alice fired her first bowl at the pottery studio."),
        (8, "Bob beat Alice at chess on Sunday."),
        (12, "Alice glazed three cups at the pottery studio."),
        (20, "Carol visited Alice in Zurich for the weekend."),
    ]
    engine.retain(
        [
            MemoryItem(
                text=text,
                occurred_start=dt.datetime(2024, 5, day, 12, tzinfo=dt.UTC),
                metadata={"user": "alice", "day": day},
            )
            for day, text in days
        ],
        bank=bank,
        progress=False,
    )
    return bank


_DATED_QUESTION = "What did Alice do at the pottery studio in May 2024?"


def _dated_alone(engine: MemoryEngine, bank: str) -> list[str]:
    """The ids one dated recall alone gives, checking it is the recall meant: one that spreads
    along temporal links while the graph statement is out."""
    alone = engine.recall(_DATED_QUESTION, bank=bank, reranker="none", trace=True)
    assert alone.trace is not None and alone.trace.arms["temporal"]
    assert {"temporal_spread", "seeded_arms"} <= set(alone.trace.timings_ms)
    return [m.id for m in alone.memories]


def _spread_ids(result: RecallResult) -> list[str]:
    assert result.trace is not None
    assert {"temporal_spread", "seeded_arms"} <= set(result.trace.timings_ms)
    return [m.id for m in result.memories]


# A short wait for a pooled connection, so that a stall fails in seconds: the recalls'
# statements take milliseconds, so a recall waiting its turn between them never nears it.
_NARROW = EngineConfig(pool_max_size=2, connect_timeout=5.0)


def test_more_concurrent_dated_recalls_than_pooled_connections_all_finish(
    engine: MemoryEngine, dated_bank: str
) -> None:
    """A dated recall's temporal spread (its hop statements, run while the graph statement is
    out) holds no pooled connection of its own meanwhile: six threads on a pool of two all
    finish with the results one recall alone gives, no request for a connection timing out
    (the hops ran on the plan's own connection, held while the graph statement waited for one
    of the two: a stall until the pool's timeout)."""
    from concurrent.futures import ThreadPoolExecutor

    expected = _dated_alone(engine, dated_bank)
    with MemoryEngine(engine.dsn, config=_NARROW) as narrow:

        def ask(_: int) -> list[str]:
            return _spread_ids(narrow.recall(_DATED_QUESTION, bank=dated_bank, reranker="none", trace=True))

        with ThreadPoolExecutor(max_workers=6) as pool:
            answers = list(pool.map(ask, range(18)))
        # No request for a connection timed out (a timed-out read is retried once, invisibly).
        assert narrow._pools._sync_pool().get_stats().get("requests_errors", 0) == 0
    assert answers == [expected] * 18


async def test_more_concurrent_dated_arecalls_than_pooled_connections_all_finish(
    engine: MemoryEngine, dated_bank: str
) -> None:
    """The same through the async runner: six recalls at a time on one loop, a pool of two."""
    import asyncio

    expected = _dated_alone(engine, dated_bank)
    async with MemoryEngine(engine.dsn, config=_NARROW) as narrow:
        turns = asyncio.Semaphore(6)

        async def ask() -> list[str]:
            async with turns:
                result = await narrow.arecall(_DATED_QUESTION, bank=dated_bank, reranker="none", trace=True)
            return _spread_ids(result)

        answers = await asyncio.gather(*(ask() for _ in range(18)))
        assert (await narrow._pools._async_pool()).get_stats().get("requests_errors", 0) == 0
    assert answers == [expected] * 18


@pytest.mark.parametrize(
    "question", [_DATED_QUESTION, "Where does Alice do pottery?"], ids=["dated", "undated"]
)
@pytest.mark.parametrize(
    "where",
    [{"user": "alice"}, {"day": {"$gte": 1}}],
    ids=["equality", "range"],  # a range's lookups go beside the estimate, sent together
)
def test_more_concurrent_filtered_recalls_than_pooled_connections_all_finish(
    engine: MemoryEngine, dated_bank: str, question: str, where: dict[str, Any]
) -> None:
    """A filtered recall's statements before its graph statement is collected (the filter's
    estimate, the seeding arms' follow-ups) hold no pooled connection of the plan's either:
    six threads on a pool of two all finish with the results one recall alone gives (the
    estimate took the plan's own connection, held while the graph statement waited for one)."""
    from concurrent.futures import ThreadPoolExecutor

    options: dict[str, Any] = {"bank": dated_bank, "reranker": "none", "filter": where}
    expected = [m.id for m in engine.recall(question, **options).memories]
    assert expected
    with MemoryEngine(engine.dsn, config=_NARROW) as narrow:

        def ask(_: int) -> list[str]:
            result = narrow.recall(question, trace=True, **options)
            assert result.trace is not None and "seeded_arms" in result.trace.timings_ms
            return [m.id for m in result.memories]

        with ThreadPoolExecutor(max_workers=6) as pool:
            answers = list(pool.map(ask, range(18)))
        assert narrow._pools._sync_pool().get_stats().get("requests_errors", 0) == 0
    assert answers == [expected] * 18


# --- retain ----------------------------------------------------------------------------------

# A longer wait than _NARROW's: a retain keeps its connection for all its statements (tens to
# hundreds of milliseconds on a loaded machine, a bulk retain several batches), so six writers
# on two connections may wait seconds for their turn; a stall (a writer waiting for a second
# connection while holding one) would still end in PoolExhaustedError, after this timeout.
_NARROW_WRITES = EngineConfig(pool_max_size=2, connect_timeout=30.0)
_JOBS = 18


def _writer(engine: MemoryEngine) -> MemoryEngine:
    """A pool-of-two engine sharing the session engine's loaded models (NER, dates)."""
    return sharing_models(engine, config=_NARROW_WRITES)


def _retain_job(j: int, bank: str) -> tuple[str, dict[str, Any]]:
    """Job ``j`` of the mixed load: which call, and its arguments. Single memories, batches,
    documents (two ids, one retained twice by jobs that may run at once: the later replaces the
    earlier), bulk retains in batches of two, and recalls, all into one bank."""
    kind = j % 6
    if kind == 0:
        return "retain", {"items": [f"Writer {j} saw a heron in Oslo."]}
    if kind == 1:
        return "retain", {"items": [f"Writer {j} batch note {i} about Dana and Eli." for i in range(4)]}
    if kind == 2:
        doc = f"d{(j // 6) % 2}"
        return "retain", {"items": [f"Document {doc} line {i} by {j}." for i in range(2)], "document_id": doc}
    if kind == 3:
        return "retain_bulk", {"items": [f"Bulk {j} item {i} on chess." for i in range(5)], "batch_size": 2}
    return "recall", {"query": "Who saw a heron in Oslo?"}


def _expected_memories() -> int:
    """The bank's memories once every job has run: a document counts once (its last retain
    replaced the others)."""
    jobs = [_retain_job(j, "") for j in range(_JOBS)]
    documents = {args["document_id"]: len(args["items"]) for _, args in jobs if "document_id" in args}
    written = sum(len(args["items"]) for _, args in jobs if "items" in args and "document_id" not in args)
    return written + sum(documents.values())


def test_more_concurrent_retains_than_pooled_connections_all_finish(engine: MemoryEngine) -> None:
    """Six threads on a pool of two, retains of every shape mixed with recalls into one bank:
    every call finishes (none waits for a second connection while it holds one), no request for
    a connection times out, and the bank holds exactly what was written."""
    from concurrent.futures import ThreadPoolExecutor

    bank = f"launch-writes-{uuid.uuid4().hex[:10]}"
    with _writer(engine) as narrow:

        def job(j: int) -> Any:
            call, args = _retain_job(j, bank)
            if call == "recall":
                return narrow.recall(args["query"], bank=bank, reranker="none")
            method = narrow.retain if call == "retain" else narrow.retain_bulk
            items = args.pop("items")
            return method(items, bank=bank, progress=False, **args)

        with ThreadPoolExecutor(max_workers=6) as pool:
            results = list(pool.map(job, range(_JOBS)))
        assert narrow._pools._sync_pool().get_stats().get("requests_errors", 0) == 0
        assert narrow.stats(bank).memories == _expected_memories()
    assert all(isinstance(r, RecallResult) if j % 6 >= 4 else len(r) for j, r in enumerate(results))


async def test_more_concurrent_aretains_than_pooled_connections_all_finish(engine: MemoryEngine) -> None:
    """The same through the async runner: six calls at a time on one loop, a pool of two."""
    import asyncio

    bank = f"launch-awrites-{uuid.uuid4().hex[:10]}"
    async with _writer(engine) as narrow:
        turns = asyncio.Semaphore(6)

        async def job(j: int) -> Any:
            call, args = _retain_job(j, bank)
            async with turns:
                if call == "recall":
                    return await narrow.arecall(args["query"], bank=bank, reranker="none")
                method = narrow.aretain if call == "retain" else narrow.aretain_bulk
                items = args.pop("items")
                return await method(items, bank=bank, progress=False, **args)

        results = await asyncio.gather(*(job(j) for j in range(_JOBS)))
        assert (await narrow._pools._async_pool()).get_stats().get("requests_errors", 0) == 0
        assert (await narrow.astats(bank)).memories == _expected_memories()
    assert all(isinstance(r, RecallResult) if j % 6 >= 4 else len(r) for j, r in enumerate(results))
