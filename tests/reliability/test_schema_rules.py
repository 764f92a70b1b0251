"""The schema's rules for scale-out (docs/scaling.md), checked on a migrated database's catalog.

Sharded by ``bank_id`` (Citus), every key must include it so that uniqueness is enforced per
shard, and every foreign key must join on it so that a row can only reference rows of its own
bank (co-located, and no cross-bank reference is even expressible).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from shared_core import MemoryEngine
from shared_core.schema import apply_migrations, ensure_extensions

# Tables that are not per-bank: the migration ledger, and banks itself (a reference table).
_NOT_DISTRIBUTED = {"schema_migrations"}

_TABLES = """
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') ORDER BY 1"""

_KEYS = """
SELECT c.conrelid::regclass::text AS tab, c.conname, c.contype,
       array(SELECT a.attname FROM unnest(c.conkey) k JOIN pg_attribute a
             ON a.attrelid = c.conrelid AND a.attnum = k ORDER BY a.attname) AS cols,
       c.confrelid::regclass::text AS ref,
       array(SELECT (a.attname, f.attname)::text FROM unnest(c.conkey, c.confkey) AS p(k, fk)
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = p.k
             JOIN pg_attribute f ON f.attrelid = c.confrelid AND f.attnum = p.fk) AS pairs
FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
WHERE n.nspname = current_schema() AND c.contype IN ('p', 'u', 'f')"""

_UNIQUE_INDEXES = """
SELECT i.indrelid::regclass::text AS tab, i.indexrelid::regclass::text AS idx,
       array(SELECT a.attname FROM unnest(i.indkey) k JOIN pg_attribute a
             ON a.attrelid = i.indrelid AND a.attnum = k) AS cols
FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND i.indisunique"""


@pytest.fixture(scope="module")
def migrated(engine: MemoryEngine) -> Iterator[str]:
    """The DSN of a fresh database holding only this library's schema (all migrations)."""
    name = f"schema_rules_{uuid.uuid4().hex[:8]}"
    engine.stats("schema-rules")  # the server is up and reachable
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    info = conninfo_to_dict(engine.dsn)
    dsn = make_conninfo(engine.dsn, dbname=name)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            ensure_extensions(conn)
            conn.autocommit = False
            apply_migrations(conn, dimension=8)
        yield dsn
    finally:
        with psycopg.connect(make_conninfo(engine.dsn, dbname=info.get("dbname")), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _rows(dsn: str, query: str) -> list[dict[str, Any]]:
    with psycopg.connect(dsn) as conn, conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute(query).fetchall()


def test_every_table_carries_bank_id(migrated: str) -> None:
    tables = [r["relname"] for r in _rows(migrated, _TABLES)]
    assert "memory_units" in tables
    with psycopg.connect(migrated) as conn:
        for table in set(tables) - _NOT_DISTRIBUTED:
            cols = {
                r[0]
                for r in conn.execute(
                    "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0", (table,)
                ).fetchall()
            }
            assert "bank_id" in cols, table


def test_every_key_and_unique_index_includes_bank_id(migrated: str) -> None:
    keys = [r for r in _rows(migrated, _KEYS) if r["tab"] not in _NOT_DISTRIBUTED]
    assert any(r["contype"] == "f" for r in keys)
    missing = [f"{r['tab']}.{r['conname']} {r['cols']}" for r in keys if "bank_id" not in r["cols"]]
    assert missing == []
    indexes = [r for r in _rows(migrated, _UNIQUE_INDEXES) if r["tab"] not in _NOT_DISTRIBUTED]
    missing = [f"{r['idx']} {r['cols']}" for r in indexes if "bank_id" not in r["cols"]]
    assert missing == []


def test_no_foreign_key_can_cross_banks(migrated: str) -> None:
    # bank_id must be matched to bank_id: then a referencing row and its target share a bank.
    fks = [r for r in _rows(migrated, _KEYS) if r["contype"] == "f"]
    crossing = [
        f"{r['tab']}.{r['conname']} -> {r['ref']} {r['pairs']}"
        for r in fks
        if "(bank_id,bank_id)" not in r["pairs"]
        or any(p.startswith("(bank_id,") and p != "(bank_id,bank_id)" for p in r["pairs"])
        or any(p.endswith(",bank_id)") and p != "(bank_id,bank_id)" for p in r["pairs"])
    ]
    assert crossing == []
