"""A retain's foreign-key checks look rows up through the primary keys even when the tables'
statistics say they are empty.

After every bank is deleted and the tables are analysed (autovacuum does it on its own), the
statistics keep the tables' pages and count no rows in them. The checks of a retain's mentions
and links (``SELECT 1 FROM ONLY memory_units x WHERE bank_id = $1 AND id = $2 FOR KEY SHARE``,
planned once per connection and reused: retain/links.py ``fk_checked``) then took any index
that starts with ``bank_id`` and read the whole bank for every row written (19.3 ms against
0.2 ms per check at 10k; a 2,000-memory bulk load 2.7x slower). Autovacuum cannot repair it
while a retain writes: its rows are not committed. The retain refreshes those statistics in its
own transaction when they know fewer rows than it wrote (retain/links.py ``fresh_statistics``).

These tests need tables no other test writes to, so they run on a server of their own.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest

from shared_core import EngineConfig, MemoryEngine
from shared_core.storage.plan import Plan, Query
from shared_core.types import MemoryItem
from tests.integration.fake_embeddings import HashEmbeddings

# What a foreign-key check runs (ri_triggers.c builds this text), planned as the check's reused
# plan is: generic, for any bank and id.
CHECK_UNIT = """
EXPLAIN (GENERIC_PLAN, FORMAT JSON)
SELECT 1 FROM ONLY memory_units x WHERE bank_id = $1 AND id = $2 FOR KEY SHARE OF x"""
CHECK_ENTITY = """
EXPLAIN (GENERIC_PLAN, FORMAT JSON)
SELECT 1 FROM ONLY entities x WHERE bank_id = $1 AND id = $2 FOR KEY SHARE OF x"""
STATISTICS = """
SELECT relname, relpages, reltuples FROM pg_class WHERE relname IN ('memory_units', 'entities')"""
NO_AUTOVACUUM = (
    "ALTER TABLE banks SET (autovacuum_enabled = off)",
    "ALTER TABLE memory_units SET (autovacuum_enabled = off)",
    "ALTER TABLE entities SET (autovacuum_enabled = off)",
    "ALTER TABLE unit_entities SET (autovacuum_enabled = off)",
    "ALTER TABLE memory_links SET (autovacuum_enabled = off)",
)
COUNT_UNITS = "SELECT bank_id, count(*) FROM memory_units WHERE bank_id = ANY(%s) GROUP BY bank_id"
BASE = _dt.datetime(2024, 1, 1, tzinfo=_dt.UTC)


@pytest.fixture(scope="module")
def private_engine() -> Iterator[MemoryEngine]:
    root = Path(tempfile.mkdtemp(prefix="hindsight-fkstats-"))
    root.chmod(0o711)  # see tests/conftest.py: the server's user must traverse it
    config = dataclasses.replace(EngineConfig(), extract_dates=False)
    engine = MemoryEngine(data_dir=root / "pgdata", embedder=HashEmbeddings(384), config=config)
    engine.retain(["A first memory: the schema is created."], bank="first", progress=False)
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        # The tests make the statistics' state themselves; autovacuum, woken by their deletes,
        # would race them (and a retain skips its ANALYZE while autovacuum holds the table).
        for statement in NO_AUTOVACUUM:
            conn.execute(statement)
    yield engine
    engine.close()
    shutil.rmtree(root, ignore_errors=True)


def _word(i: int) -> str:
    """A name without digits (entity match keys drop them): 0 -> "Ba", 27 -> "Bab"."""
    letters = ""
    while True:
        i, r = divmod(i, 26)
        letters += "abcdefghijklmnopqrstuvwxyz"[r]
        if not i:
            return "B" + letters


def _items(n: int, tag: str) -> list[MemoryItem]:
    # Entities given: no model to load; one event per hour: temporal links for every unit. A
    # person per memory: the entities table grows with the bank, as it does with real names.
    return [
        MemoryItem(
            text=f"{tag} note {i} about {_word(i % 37)} with {_word(i)}.",
            entities=[f"{tag} {_word(i)}", f"{tag} {_word(i % 37)}"],
            occurred_start=BASE + _dt.timedelta(hours=i),
        )
        for i in range(n)
    ]


def _analysed_empty(engine: MemoryEngine) -> dict[str, tuple[int, float]]:
    """Fill the tables, delete every bank, analyse: pages kept, no rows counted."""
    engine.retain_bulk(_items(600, "gone"), bank=f"gone-{uuid.uuid4().hex[:8]}", progress=False)
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM banks")
        conn.execute("ANALYZE memory_units")
        conn.execute("ANALYZE entities")
        return {r[0]: (r[1], r[2]) for r in conn.execute(STATISTICS)}


def _scans(value: Any) -> list[tuple[str, str | None]]:
    doc = json.loads(value) if isinstance(value, str) else value
    out: list[tuple[str, str | None]] = []
    todo = [doc[0]["Plan"]]
    while todo:
        node = todo.pop()
        if "Scan" in node["Node Type"]:
            out.append((node["Node Type"], node.get("Index Name")))
        todo += node.get("Plans", [])
    return out


def _indexes(scans: list[tuple[str, str | None]]) -> set[str | None]:
    """The indexes a plan reads (None: a table read whole)."""
    return {index for kind, index in scans if kind != "Bitmap Heap Scan"}


def _retain_then_explain(
    engine: MemoryEngine, items: list[MemoryItem], bank: str
) -> Plan[dict[str, list[tuple[str, str | None]]]]:
    """The retain, then (same transaction, before its commit) the checks' plans."""
    yield from engine.retain_plan(items, bank=bank, progress=False)
    unit: dict[str, Any] = yield Query(CHECK_UNIT, fetch="one")
    entity: dict[str, Any] = yield Query(CHECK_ENTITY, fetch="one")
    return {"memory_units": _scans(unit["QUERY PLAN"]), "entities": _scans(entity["QUERY PLAN"])}


@pytest.mark.parametrize("n", [400, 3], ids=["batch", "small"])
def test_checks_after_the_tables_were_analysed_empty_use_the_primary_keys(
    private_engine: MemoryEngine, n: int
) -> None:
    before = _analysed_empty(private_engine)
    # The state of the bug: pages, and statistics that count no rows in them.
    assert all(pages > 0 and rows == 0 for pages, rows in before.values()), before

    bank = f"after-{uuid.uuid4().hex[:8]}"
    scans = private_engine.run(_retain_then_explain(private_engine, _items(n, "new"), bank))
    if n > 8:  # the batch plan (retain/plan.py)
        # Before: memory_units_bank_event_date or _bank_document, the whole bank per check.
        assert _indexes(scans["memory_units"]) == {"memory_units_pkey"}, scans
        # Before: the (bank_id, match_key) index, the bank's entities per check. A table of a
        # few pages may be read whole instead, by the planner's choice.
        assert _indexes(scans["entities"]) <= {"entities_pkey", None}, scans
    # The small plan's bank holds 3 rows: any plan reads 3 rows, and the planner may take
    # either index; what counts is that the statistics now know rows are there (below), so
    # the checks of the next retains into a growing bank are not planned for an empty table.

    with psycopg.connect(private_engine.dsn, autocommit=True) as conn:
        after = {r[0]: (r[1], r[2]) for r in conn.execute(STATISTICS)}
        entities = conn.execute("SELECT count(*) FROM entities").fetchone()
    # The statistics count the retain's rows (committed now), for every later retain too.
    assert entities is not None
    assert after["memory_units"][1] >= n and after["entities"][1] >= entities[0] > 0, after


LOCK_TIMEOUT = "SELECT set_config('lock_timeout', '10s', true)"


def _bounded_retain(engine: MemoryEngine, items: list[MemoryItem], bank: str) -> Plan[list[str]]:
    """A retain that fails with LockNotAvailable, instead of hanging, if it waits 10 s for a lock."""
    yield Query(LOCK_TIMEOUT, fetch="none")
    return (yield from engine.retain_plan(items, bank=bank, progress=False))


@pytest.mark.parametrize("n", [400, 3], ids=["batch", "small"])
def test_a_retain_does_not_wait_for_another_transactions_analyse(
    private_engine: MemoryEngine, n: int
) -> None:
    _analysed_empty(private_engine)
    with psycopg.connect(private_engine.dsn) as holder:
        # Another transaction's ANALYZE (another retain's, or a user's) holds SHARE UPDATE
        # EXCLUSIVE on both tables until it ends; the statistics stay those of empty tables.
        holder.execute("ANALYZE memory_units")
        holder.execute("ANALYZE entities")
        bank = f"beside-{uuid.uuid4().hex[:8]}"
        ids = private_engine.run(_bounded_retain(private_engine, _items(n, "beside"), bank))
        assert len(ids) == n
        holder.rollback()
    assert _counts(private_engine, [bank]) == {bank: n}


def test_two_retains_into_empty_analysed_tables_at_once_both_land(private_engine: MemoryEngine) -> None:
    _analysed_empty(private_engine)
    banks = [f"twin-{k}-{uuid.uuid4().hex[:8]}" for k in range(2)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [
            pool.submit(private_engine.run, _bounded_retain(private_engine, _items(300, f"twin{k}"), b))
            for k, b in enumerate(banks)
        ]
        results = [f.result(timeout=120) for f in futures]
    assert [len(r) for r in results] == [300, 300]
    assert _counts(private_engine, banks) == {b: 300 for b in banks}


def _counts(engine: MemoryEngine, banks: list[str]) -> dict[str, int]:
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        rows = conn.execute(COUNT_UNITS, [banks]).fetchall()
    return {bank: n for bank, n in rows}
