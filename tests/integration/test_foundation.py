"""The foundation against the real embedded server and the real embedding model."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from shared_core import (
    ConfigurationError,
    DimensionMismatchError,
    InvalidItemError,
    MemoryEngine,
    MemoryItem,
)
from shared_core.schema import apply_migrations, load_migrations
from tests.fakes import TinyEmbedder


def _count(engine: MemoryEngine, table: str, bank: str) -> int:
    with psycopg.connect(engine.dsn) as conn:
        row = conn.execute(
            psycopg.sql.SQL("SELECT count(*) FROM {} WHERE bank_id = %s").format(
                psycopg.sql.Identifier(table)
            ),
            (bank,),
        ).fetchone()
        assert row is not None
        return int(row[0])


def test_migrations_are_versioned_and_idempotent(engine: MemoryEngine) -> None:
    engine.stats("warm-up")  # bootstraps the schema
    with psycopg.connect(engine.dsn) as conn:
        versions = [
            r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
        ]
        assert versions == [m.version for m in load_migrations()]
        assert apply_migrations(conn, dimension=384) == []  # second run: nothing to do
        assert apply_migrations(conn, dimension=384) == []
        tables = {
            r[0]
            for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
        }
    assert {
        "banks",
        "memory_units",
        "documents",
        "chunks",
        "entities",
        "unit_entities",
        "memory_links",
        "schema_migrations",
    } <= tables


def test_every_table_but_the_migration_log_carries_the_bank(engine: MemoryEngine) -> None:
    engine.stats("warm-up")
    with psycopg.connect(engine.dsn) as conn:
        rows = conn.execute("""
            SELECT t.tablename, bool_or(c.column_name = 'bank_id')
            FROM pg_tables t JOIN information_schema.columns c
              ON c.table_name = t.tablename AND c.table_schema = t.schemaname
            WHERE t.schemaname = 'public' GROUP BY t.tablename""").fetchall()
    missing = {name for name, has_bank in rows if not has_bank}
    assert missing == {"schema_migrations"}


def test_retain_1000_items_lands_whole(engine: MemoryEngine, bank: str) -> None:
    items = [f"Memory number {i}: Alice visited place {i % 37}." for i in range(1000)]
    ids = engine.retain(items, bank=bank, progress=False)
    assert len(ids) == len(set(ids)) == 1000
    assert engine.stats(bank).memories == 1000
    assert ids == sorted(ids)  # UUIDv7: time-ordered
    record = engine.get(ids[500], bank=bank)
    assert record is not None and record.text == items[500]


def test_one_bad_item_writes_nothing_and_names_the_item(engine: MemoryEngine, bank: str) -> None:
    items: list[object] = [f"good item {i}" for i in range(10)]
    items[7] = MemoryItem(text="bad", fact_type="opinion")  # type: ignore[arg-type]
    with pytest.raises(InvalidItemError) as err:
        engine.retain(items, bank=bank)
    assert err.value.index == 7 and "fact_type" in str(err.value)
    assert engine.stats(bank).memories == 0


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        ("   ", "empty"),
        ({"text": 42}, "string"),
        (
            MemoryItem(
                text="x", occurred_start=dt.datetime(2024, 2, 1), occurred_end=dt.datetime(2024, 1, 1)
            ),
            "before",
        ),
        ({"text": "x", "colour": "red"}, "unknown field"),
        ({"text": "x", "proof_count": 0}, "proof_count"),
        (MemoryItem(text="bad\x00byte"), "NUL"),
        (3.14, "expected a str"),
    ],
)
def test_bad_items_are_rejected_with_their_index(
    engine: MemoryEngine, bank: str, item: object, reason: str
) -> None:
    with pytest.raises(InvalidItemError, match=reason) as err:
        engine.retain(["fine", item], bank=bank)
    assert err.value.index == 1
    assert engine.stats(bank).memories == 0


def test_a_failure_inside_the_transaction_rolls_back_everything(engine: MemoryEngine, bank: str) -> None:
    # The second item's supplied embedding has the wrong size: detected after validation,
    # while the plan runs. Nothing of the call may remain.
    items = [MemoryItem(text="one"), MemoryItem(text="two", embedding=[0.1, 0.2])]
    with pytest.raises(InvalidItemError):
        engine.retain(items, bank=bank)
    assert engine.stats(bank).memories == 0


def test_re_retaining_a_document_replaces_it(engine: MemoryEngine, bank: str) -> None:
    engine.retain(["v1 first", "v1 second", "v1 third"], bank=bank, document_id="doc")
    engine.retain(["unrelated"], bank=bank, document_id="other")
    new_ids = engine.retain(["v2 only"], bank=bank, document_id="doc")
    stats = engine.stats(bank)
    assert stats.memories == 2 and stats.documents == 2
    record = engine.get(new_ids[0], bank=bank)
    assert record is not None and record.document_id == "doc"
    assert engine.delete(bank=bank, document_id="doc") == 1
    assert engine.stats(bank).memories == 1


def test_two_banks_do_not_see_each_other(engine: MemoryEngine, bank: str) -> None:
    other = bank + "-other"
    (a,) = engine.retain(["secret of bank A"], bank=bank)
    (b,) = engine.retain(["secret of bank B"], bank=other)
    assert engine.get(a, bank=other) is None
    assert engine.get(b, bank=bank) is None
    assert engine.delete([a], bank=other) == 0
    assert engine.stats(bank).memories == 1 and engine.stats(other).memories == 1


def test_dimension_mismatch_names_both(engine: MemoryEngine, bank: str) -> None:
    engine.retain(["made with MiniLM"], bank=bank)
    # Precomputed vectors of another dimension into a 384-d bank.
    with pytest.raises(DimensionMismatchError) as err:
        engine.retain([MemoryItem(text="tiny", embedding=[0.5] * 8)], bank=bank)
    message = str(err.value)
    assert "384" in message and "8 dimensions" in message and bank in message
    assert engine.stats(bank).memories == 1


def test_an_engine_of_another_dimension_gets_banks_of_its_own(engine: MemoryEngine, bank: str) -> None:
    engine.retain(["made with MiniLM"], bank=bank)
    other = MemoryEngine(engine.dsn, embedder=TinyEmbedder())
    try:
        other.retain(["made with tiny"], bank=bank + "-tiny")  # migration 0006: side by side
        with pytest.raises(DimensionMismatchError) as err:
            other.retain(["made with tiny"], bank=bank)
        assert "384" in str(err.value) and "tiny-8d" in str(err.value)
    finally:
        other.close()


def test_precomputed_embeddings_are_used(engine: MemoryEngine, bank: str) -> None:
    vector = np.zeros(384, dtype=np.float32)
    vector[0] = 2.0
    (i, j) = engine.retain(
        [
            MemoryItem(text="precomputed", embedding=vector.tolist()),
            MemoryItem(text="numpy", embedding=vector),
        ],
        bank=bank,
    )
    assert engine.get(j, bank=bank) is not None  # numpy arrays are accepted as they are
    (k,) = engine.retain([MemoryItem(text="only numpy", embedding=vector)], bank=bank)
    assert engine.get(k, bank=bank) is not None
    with psycopg.connect(engine.dsn) as conn:
        row = conn.execute(
            "SELECT embedding::text FROM memory_units WHERE bank_id = %s AND id = %s", (bank, i)
        ).fetchone()
    assert row is not None and row[0].startswith("[1,0,0")  # stored L2-normalised


def test_long_items_become_a_chunk_and_sentence_windows(engine: MemoryEngine, bank: str) -> None:
    sentence = "Alice walked along the river and thought about her new job at the lab. "
    text = sentence * 60  # ~900 tokens, above the 512-token unit limit
    ids = engine.retain([MemoryItem(text=text, document_id="essay")], bank=bank)
    assert len(ids) > 1
    stats = engine.stats(bank)
    assert stats.chunks == 1 and stats.memories == len(ids)
    records = [engine.get(i, bank=bank) for i in ids]
    assert len({r.chunk_id for r in records if r}) == 1
    assert all(r is not None and engine.token_counter.count(r.text) <= 512 for r in records)


def test_naive_datetimes_are_utc(engine: MemoryEngine, bank: str) -> None:
    (i,) = engine.retain([MemoryItem(text="dated", mentioned_at=dt.datetime(2023, 5, 8, 13, 56))], bank=bank)
    record = engine.get(i, bank=bank)
    assert record is not None
    assert record.mentioned_at == dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.UTC)


def test_a_dsn_to_the_embedded_server_works_like_the_default(engine: MemoryEngine, bank: str) -> None:
    (i,) = engine.retain(["shared through the DSN"], bank=bank)
    sqlalchemy_url = engine.dsn.replace("postgresql://", "postgresql+psycopg://", 1)
    with MemoryEngine(sqlalchemy_url) as other:
        record = other.get(i, bank=bank)
        assert record is not None and record.text == "shared through the DSN"
        other.retain(["written through the DSN"], bank=bank)
    assert engine.stats(bank).memories == 2


def test_async_twins_share_the_implementation(engine: MemoryEngine, bank: str) -> None:
    async def scenario() -> None:
        ids = await engine.aretain(["async one", "async two"], bank=bank)
        record = await engine.aget(ids[0], bank=bank)
        assert record is not None and record.text == "async one"
        assert (await engine.astats(bank)).memories == 2
        assert await engine.adelete(ids[:1], bank=bank) == 1

    asyncio.run(scenario())
    assert engine.stats(bank).memories == 1


def test_asyncio_run_closes_the_async_pool_it_opened(
    engine: MemoryEngine, bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A user's asyncio.run(main()) that never awaits aclose(), with concurrent first calls:
    # they must share one pool, and the loop's shutdown must close it (orphan pools' workers
    # used to hang asyncio.run's exit).
    from psycopg_pool import AsyncConnectionPool

    import shared_core.storage.pools as pools_module

    opened: list[object] = []

    class CountingPool(AsyncConnectionPool):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            opened.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(pools_module, "AsyncConnectionPool", CountingPool)
    pools = []

    async def main() -> None:
        await asyncio.gather(*(engine.arecall(q, bank=bank) for q in ("a", "b", "c", "d")))
        pools.append(engine._pools._async_pools[asyncio.get_running_loop()])

    engine.retain(["the pool closes with its loop"], bank=bank)
    asyncio.run(main())
    assert pools and pools[0].closed
    assert len(opened) == 1


def test_bad_configuration_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        MemoryEngine("   ")
    with pytest.raises(ConfigurationError):
        MemoryEngine("postgresql://localhost/x", data_dir=tmp_path)
    broken = MemoryEngine("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    try:
        with pytest.raises(ConfigurationError, match="cannot connect"):
            broken.retain(["x"])
    finally:
        broken.close()
