"""Versioned, idempotent schema migrations.

Migrations are ``NNNN_name.sql`` files in :mod:`shared_core.schema.migrations`, loaded with
``importlib.resources`` and the pending ones applied in order in one transaction (all or
none), under a transaction-scoped advisory lock so concurrent engines starting against the
same database do not race. The embedding dimension is substituted into the DDL as a literal
when the schema is first created. Applied versions (and the dimension) are recorded in
``schema_migrations`` (the one table without a bank: it describes the database).
"""

from __future__ import annotations

import importlib.resources
import json
import re
from dataclasses import dataclass
from typing import Any, LiteralString

import psycopg
from psycopg import sql

from shared_core.errors import ExtensionUnavailableError, SchemaError

__all__ = [
    "Migration",
    "apply_migrations",
    "ensure_extensions",
    "load_migrations",
    "schema_dimension",
    "schema_model",
]

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
# An arbitrary constant: serialises migrations across processes on the same database.
_LOCK_KEY = 0x48494E44_53494748 & 0x7FFFFFFFFFFFFFFF

_CREATE_MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    settings   jsonb NOT NULL DEFAULT '{}',
    applied_at timestamptz NOT NULL DEFAULT now()
)"""
_APPLIED = "SELECT version, settings FROM schema_migrations ORDER BY version"
_RECORD = """
INSERT INTO schema_migrations (version, name, settings)
VALUES (%(version)s, %(name)s, %(settings)s::jsonb)"""
_LOCK = "SELECT pg_advisory_xact_lock(%(key)s)"


@dataclass(frozen=True, slots=True, kw_only=True)
class Migration:
    version: int
    name: str
    #: A packaged resource, never user input: trusted as literal SQL (only the dimension is
    #: substituted into it, as a literal).
    text: LiteralString


def load_migrations() -> list[Migration]:
    """All packaged migrations, in version order."""
    root = importlib.resources.files("shared_core.schema.migrations")
    found = []
    for entry in root.iterdir():
        match = _FILE.match(entry.name)
        if match:
            found.append(
                Migration(
                    version=int(match.group(1)), name=match.group(2), text=entry.read_text(encoding="utf-8")
                )
            )
    return sorted(found, key=lambda m: m.version)


def ensure_extensions(conn: psycopg.Connection[Any]) -> None:
    """Create pgvector and pg_trgm if missing, with an error that names the fix."""
    for ext in ("vector", "pg_trgm"):
        try:
            with conn.transaction():
                # IF NOT EXISTS is not safe under concurrency: engines bootstrapping at once
                # failed with a unique violation. The migrations' lock serialises them.
                conn.execute(_LOCK, {"key": _LOCK_KEY})
                conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(ext)))
        except psycopg.Error as exc:
            package = "pgvector" if ext == "vector" else "contrib (pg_trgm)"
            raise ExtensionUnavailableError(
                f"the Postgres extension {ext!r} cannot be created on this server ({exc}). "
                f"Install {package} on the server (e.g. apt install postgresql-NN-pgvector) and "
                "connect as a role allowed to CREATE EXTENSION, or omit dsn= to use the "
                "embedded server, which has it"
            ) from exc


def schema_dimension(conn: psycopg.Connection[Any]) -> int | None:
    """The embedding dimension the schema was created with, or None before migration 1."""
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return None
    row = conn.execute(
        "SELECT (settings->>'dimension')::int FROM schema_migrations WHERE version = 1"
    ).fetchone()
    return int(row[0]) if row and row[0] is not None else None


def schema_model(conn: psycopg.Connection[Any]) -> str:
    """The embedding model of the first bank, to name it in errors."""
    row = conn.execute("SELECT embedding_model FROM banks ORDER BY created_at LIMIT 1").fetchone()
    return str(row[0]) if row else "unknown model"


def apply_migrations(conn: psycopg.Connection[Any], *, dimension: int) -> list[int]:
    """Apply every pending migration; return the versions applied (empty when up to date)."""
    applied_now: list[int] = []
    with conn.transaction():
        conn.execute(_LOCK, {"key": _LOCK_KEY})
        conn.execute(_CREATE_MIGRATIONS_TABLE)
        done = {int(row[0]) for row in conn.execute(_APPLIED).fetchall()}
        for migration in load_migrations():
            if migration.version in done:
                continue
            ddl = sql.SQL(migration.text).format(dimension=sql.Literal(int(dimension)))
            try:
                conn.execute(ddl)
            except psycopg.Error as exc:
                raise SchemaError(
                    f"migration {migration.version:04d}_{migration.name} failed: {exc}"
                ) from exc
            conn.execute(
                _RECORD,
                {
                    "version": migration.version,
                    "name": migration.name,
                    "settings": json.dumps({"dimension": int(dimension)}),
                },
            )
            applied_now.append(migration.version)
    return applied_now
