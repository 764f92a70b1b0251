"""Leaks found by the second careless-user probe (session 19): each call below used to escape
as a raw ``ValueError`` from numpy, write NaN vectors, ignore an argument silently, return
nothing for a filter that cannot match, or print psycopg's noise; each must be a typed
:class:`~shared_core.errors.HindsightError` naming the field, with nothing written, or quiet."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document

from shared_core import AsyncMemoryEngine, MemoryEngine
from shared_core.errors import (
    ConfigurationError,
    DimensionMismatchError,
    EmbeddingDimensionError,
    HindsightError,
    InvalidItemError,
    InvalidQueryError,
)

_Q = "Where does Alice work?"
_DIM = 8


def _ragged(text: str) -> list[float]:
    return [0.1] * (_DIM - 1 if "short" in text else _DIM)


def _nan(text: str) -> list[float]:
    return [float("nan")] * _DIM


@pytest.mark.parametrize(("embeddings", "problem"), [(_ragged, "shape|dimension"), (_nan, "finite")])
def test_an_embedding_function_returning_bad_vectors_is_a_typed_error(
    engine: MemoryEngine, pg_data_dir: Path, bank: str, embeddings: Any, problem: str
) -> None:
    with MemoryEngine(data_dir=pg_data_dir, embeddings=embeddings) as own:
        with pytest.raises(ConfigurationError, match=problem):
            own.retain(["one", "two short", "three"], bank=bank)
        assert engine.stats(bank).memories == 0
        with pytest.raises(ConfigurationError, match=problem):
            own.retain_bulk([f"text {i} short" if i == 5 else f"text {i}" for i in range(20)], bank=bank)
        assert engine.stats(bank).memories == 0


def test_an_embedding_function_returning_nan_for_a_query_is_a_typed_error(
    pg_data_dir: Path, bank: str
) -> None:
    with (
        MemoryEngine(data_dir=pg_data_dir, embeddings=_nan) as own,
        pytest.raises(ConfigurationError, match="finite"),
    ):
        own.recall(_Q, bank=bank)


@pytest.mark.parametrize("option", ["filter", "bogus"])
def test_time_weighted_invoke_rejects_an_option_it_does_not_take(
    engine: MemoryEngine, bank: str, option: str
) -> None:
    from hindsight_langchain import TimeWeightedHindsightRetriever

    retriever = TimeWeightedHindsightRetriever(engine=engine, bank=bank)
    retriever.add_documents([Document(page_content="Alice works at Google.", metadata={"team": "x"})])
    with pytest.raises(InvalidQueryError, match=option):
        retriever.invoke(_Q, **{option: {"team": "nope"}})
    with pytest.raises(InvalidQueryError, match=option):
        asyncio.run(retriever.ainvoke(_Q, **{option: {"team": "nope"}}))
    assert len(retriever.invoke(_Q, k=1)) == 1  # k= is still taken


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"year": {"$between": [2021, 2019]}}, "reversed"),
        ({"day": {"$between": ["2021-03-01", "2021-01-01"]}}, "reversed"),
        # jsonpath compares a number with a string as unknown: such bounds match nothing
        ({"year": {"$between": [2020, "2030"]}}, "a number and a string"),
        ({"year": {"$between": ["2020", 2030.5]}}, "a number and a string"),
    ],
)
def test_a_between_that_cannot_match_is_a_typed_error(
    engine: MemoryEngine, bank: str, spec: dict[str, Any], problem: str
) -> None:
    from shared_core.recall.filters import InvalidFilterError

    with pytest.raises(InvalidFilterError, match=rf"\$between.*{problem}"):
        engine.recall(_Q, bank=bank, filter=spec)


@pytest.mark.parametrize("k", [True, "3", 2.0])
def test_langchain_constructors_reject_a_k_of_the_wrong_type(engine: MemoryEngine, bank: str, k: Any) -> None:
    from hindsight_langchain import HindsightRetriever, TimeWeightedHindsightRetriever

    with pytest.raises(ConfigurationError, match="k must be"):
        HindsightRetriever(engine, bank=bank, k=k)
    with pytest.raises(ConfigurationError, match="k must be"):
        TimeWeightedHindsightRetriever(engine=engine, bank=bank, k=k)


@pytest.mark.parametrize("where", ["item", "call"])
def test_an_empty_document_id_is_a_typed_error(engine: MemoryEngine, bank: str, where: str) -> None:
    with pytest.raises(InvalidItemError, match=f"item {1 if where == 'item' else 0}: document_id"):
        if where == "item":
            engine.retain(["Alice works at Google.", {"text": "Bob too.", "document_id": ""}], bank=bank)
        else:
            engine.retain(["Alice works at Google.", "Bob too."], bank=bank, document_id="")
    assert engine.stats(bank).memories == 0


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.records.append(record)


def test_pipeline_noise_of_our_connections_is_dropped(engine: MemoryEngine) -> None:
    """psycopg logs "error ignored terminating <Pipeline>" when a pipeline cannot end after an
    error in its block (the connection was closed under it): that error reaches the caller,
    typed, so the record is noise for our connections (and still shown for others)."""
    import psycopg

    from shared_core.quiet import install_pool_filter

    install_pool_filter()
    seen = _Records()
    logger = logging.getLogger("psycopg")
    logger.addHandler(seen)
    try:
        ours = engine._pools._sync_class.connect(engine.dsn)  # the engine's own connection class
        theirs = psycopg.connect(engine.dsn)
        try:
            for conn in (ours, theirs):
                pipeline = psycopg.Pipeline(conn)
                logger.warning("error ignored terminating %r: %s", pipeline, "the connection is closed")
        finally:
            ours.close()
            theirs.close()
    finally:
        logger.removeHandler(seen)
    assert [r.args[0]._conn for r in seen.records] == [theirs]  # type: ignore[index,union-attr]


def test_async_close_during_recalls_is_quiet(
    pg_data_dir: Path, bank: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = _Records()
    for name in ("psycopg", "psycopg.pool"):
        logging.getLogger(name).addHandler(seen)

    async def race(pause: float) -> list[BaseException | None]:
        eng = AsyncMemoryEngine(data_dir=pg_data_dir)
        await eng.recall("warm up", bank=bank)

        async def loop() -> None:
            for _ in range(50):
                await eng.recall(_Q, bank=bank)

        tasks = [asyncio.create_task(loop()) for _ in range(3)]
        await asyncio.sleep(pause)
        await eng.close()
        return list(await asyncio.gather(*tasks, return_exceptions=True))

    try:
        for pause in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7):
            outcomes = asyncio.run(race(pause))
            assert all(isinstance(o, HindsightError) for o in outcomes), outcomes
    finally:
        for name in ("psycopg", "psycopg.pool"):
            logging.getLogger(name).removeHandler(seen)
    assert [r.getMessage() for r in seen.records] == []
    assert "error ignored" not in capsys.readouterr().err


def _kill_postmaster(data: Path) -> None:
    import os
    import signal
    import time

    from shared_core.server import _read_postmaster

    os.kill(int((data / "postmaster.pid").read_text().split()[0]), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _read_postmaster(data) is not None and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.mark.slow
def test_an_open_engine_starts_its_killed_embedded_server_again_quietly(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """The embedded server killed (SIGKILL) between calls: the engine's next connection
    attempt starts it again, so the next recall and retain (sync and async) simply work when
    the start fits in the connect timeout (a killed postmaster's pid can stay a zombie for
    seconds, and crash recovery follows), with nothing of psycopg's reconnection noise on
    stderr, and every memory is still there."""
    import shutil
    import tempfile

    from shared_core.config import EngineConfig

    root = Path(tempfile.mkdtemp(prefix="hindsight-kill-"))
    root.chmod(0o711)
    data = root / "pgdata"
    seen = _Records()
    for name in ("psycopg", "psycopg.pool"):
        logging.getLogger(name).addHandler(seen)
    try:
        with MemoryEngine(data_dir=data, config=EngineConfig(connect_timeout=30.0)) as eng:
            eng.retain(["Alice works at Google."], bank="kill")
            _kill_postmaster(data)
            assert [m.text for m in eng.recall(_Q, bank="kill").memories] == ["Alice works at Google."]
            _kill_postmaster(data)
            eng.retain(["Bob works at Novabank."], bank="kill")
            assert eng.stats("kill").memories == 2

        async def killed_between_async_calls() -> int:
            async with AsyncMemoryEngine(data_dir=data, config=EngineConfig(connect_timeout=30.0)) as aeng:
                await aeng.recall(_Q, bank="kill")
                _kill_postmaster(data)
                found = await aeng.recall(_Q, bank="kill")
                assert found.memories
                _kill_postmaster(data)
                await aeng.retain(["Carol works at Acme."], bank="kill")
                return (await aeng.stats("kill")).memories

        assert asyncio.run(killed_between_async_calls()) == 3

        # A start slower than the connect timeout: that call raises the typed error naming the
        # stopped server, and the one after it waits for the start and works.
        from shared_core.errors import DatabaseUnavailableError

        with MemoryEngine(data_dir=data, config=EngineConfig(connect_timeout=1.0)) as short:
            short.recall(_Q, bank="kill")
            _kill_postmaster(data)
            try:
                short.recall(_Q, bank="kill")
            except DatabaseUnavailableError as exc:
                assert "the engine's next call starts it again" in str(exc)
            assert short.stats("kill").memories == 3
    finally:
        for name in ("psycopg", "psycopg.pool"):
            logging.getLogger(name).removeHandler(seen)
        shutil.rmtree(root, ignore_errors=True)
    assert [r.getMessage() for r in seen.records] == []
    assert capsys.readouterr().err.strip() == ""


@pytest.mark.parametrize("call", ["retain", "retain_bulk"])
def test_a_supplied_embedding_of_another_dimension_is_refused_before_the_bank_is_made(
    engine: MemoryEngine, bank: str, call: str
) -> None:
    """A supplied vector of another size than the engine model's used to create a bank recorded
    as that model at that size: nothing could recall from it, nor retain into it."""
    dimension = engine.embedder.dimension
    items = [
        {"text": "Alice likes tea.", "embedding": [0.1] * (dimension - 1)},
        {"text": "Bob likes jam.", "embedding": [0.1] * dimension},
    ]
    with pytest.raises(
        EmbeddingDimensionError, match=rf"item 0: embedding has {dimension - 1} dimensions"
    ) as info:
        getattr(engine, call)(items, bank=bank)
    assert isinstance(info.value, InvalidItemError) and isinstance(info.value, DimensionMismatchError)
    assert engine.stats(bank).memories == 0
    engine.retain(["Carol likes cake."], bank=bank)  # the bank is still this model's
    assert len(engine.recall("Who likes cake?", bank=bank).memories) == 1
