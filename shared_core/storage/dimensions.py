"""Embeddings of any dimension in one table (migration 0006): the SQL that names a dimension.

``memory_units.embedding`` is a typmod-free ``vector``; HNSW indexes exist per dimension as
partial expression indexes. A statement uses one when it orders by the indexed expression and
carries the index's predicate, with the dimension inlined as a literal (a parameter would hide
it from the planner)::

    WHERE u.bank_id = %(bank)s AND {predicate}
    ORDER BY {column} <=> {query}

>>> dims = Dimension(384)
>>> dims.column.as_string()
'("u"."embedding"::vector(384))'
>>> dims.predicate.as_string()
'vector_dims("u"."embedding") = 384'

Up to 2,000 dimensions the index is on ``vector(d)``; up to 4,000 on ``halfvec(d)`` (half
precision, pgvector's limit for HNSW); beyond, no index (exact scans).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import psycopg
from psycopg import sql

__all__ = ["Dimension", "ensure_dimension", "known_dimensions"]

VECTOR_HNSW_MAX: Final = 2000
HALFVEC_HNSW_MAX: Final = 4000
# Serialises index creation across engines starting at once (an arbitrary constant).
_LOCK_KEY: Final = 0x48494E44_44494D53 & 0x7FFFFFFFFFFFFFFF

# A dimension is known when its HNSW index exists.
_KNOWN = r"""
SELECT substring(indexname FROM '^memory_units_embedding_d(\d+)$')::int AS dimension
FROM pg_indexes
WHERE schemaname = current_schema() AND tablename = 'memory_units'
  AND indexname ~ '^memory_units_embedding_d\d+$'
ORDER BY 1"""
_INDEX = sql.SQL("""
CREATE INDEX IF NOT EXISTS {name} ON memory_units
    USING hnsw (({cast}) {ops}) WITH (m = 16, ef_construction = 64)
    WHERE {where}""")


@dataclass(frozen=True, slots=True)
class Dimension:
    """SQL fragments for embeddings of ``size`` dimensions (table alias ``alias``)."""

    size: int
    alias: str = "u"

    def __post_init__(self) -> None:
        if not isinstance(self.size, int) or isinstance(self.size, bool) or self.size < 1:
            raise ValueError(f"a vector dimension is a positive integer, got {self.size!r}")

    @property
    def kind(self) -> str:
        return "vector" if self.size <= VECTOR_HNSW_MAX else "halfvec"

    @property
    def indexed(self) -> bool:
        return self.size <= HALFVEC_HNSW_MAX

    def _cast(self, expr: sql.Composable) -> sql.Composed:
        return sql.SQL("({}::{}({}))").format(expr, sql.SQL(self.kind), sql.Literal(self.size))

    def _col(self, name: str = "embedding") -> sql.Composed:
        return sql.SQL("{}.{}").format(sql.Identifier(self.alias), sql.Identifier(name))

    @property
    def column(self) -> sql.Composed:
        """The indexed expression: ``(u.embedding::vector(d))``."""
        return self._cast(self._col())

    def of(self, alias: str) -> Dimension:
        """The same dimension over another table alias."""
        return Dimension(self.size, alias)

    def query(self, param: str = "qvec") -> sql.Composed:
        """A vector parameter cast like the column: ``(%(qvec)s::vector(d))``."""
        return self._cast(sql.Placeholder(param))

    @property
    def predicate(self) -> sql.Composed:
        """The indexes' predicate: ``vector_dims(u.embedding) = d``."""
        return sql.SQL("vector_dims({}) = {}").format(self._col(), sql.Literal(self.size))

    def index_statements(self) -> list[sql.Composed]:
        """``CREATE INDEX IF NOT EXISTS`` for this dimension (none beyond 4,000): one HNSW
        index over every fact type (the semantic arm scans all asked types at once; migration
        0013 dropped the per-type ones)."""
        if not self.indexed:
            return []
        cast = sql.SQL("embedding::{}({})").format(sql.SQL(self.kind), sql.Literal(self.size))
        ops = sql.SQL(f"{self.kind}_cosine_ops")
        dims = sql.SQL("vector_dims(embedding) = {}").format(sql.Literal(self.size))
        return [
            _INDEX.format(
                name=sql.Identifier(f"memory_units_embedding_d{self.size}"), cast=cast, ops=ops, where=dims
            )
        ]


def known_dimensions(conn: psycopg.Connection[Any]) -> list[int]:
    return [int(r[0]) for r in conn.execute(_KNOWN).fetchall()]


def ensure_dimension(conn: psycopg.Connection[Any], size: int) -> bool:
    """Create the HNSW indexes of ``size``-dimensional embeddings if this database has none
    yet; return whether it did. Run once per engine start (cheap when they exist)."""
    if size in known_dimensions(conn):
        return False
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%(key)s)", {"key": _LOCK_KEY})
        if size in known_dimensions(conn):
            return False
        for statement in Dimension(size).index_statements():
            conn.execute(statement)
    return True
