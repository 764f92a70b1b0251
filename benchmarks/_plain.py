"""The plain pgvector baseline every performance number is divided by, measured in the same run.

A table with an id and a ``vector(d)`` column, one HNSW index (cosine, ``m = 16``,
``ef_construction = 64``: the parameters of ours), on the same server:

* **load**: ``COPY`` (binary) of the same vectors, into the table with its index already there
  (``index_first``: what an application inserting into a live table pays, and what a retain
  into an existing bank pays) and into an empty table with the index built afterwards
  (``index_after``: the fastest bulk load Postgres offers);
* **one insert**: one ``INSERT`` of one vector into the loaded table, p50 over ``count`` rows;
* **top-10**: ``SELECT id FROM t ORDER BY embedding <=> q LIMIT 10``, with and without the query
  embedding of the same model, 1 and ``clients`` connections.

The table is dropped after each use (``plain_table`` is a context manager).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from _clients import run_clients

__all__ = ["data_root", "describe", "plain_insert_one", "plain_load", "plain_table", "plain_topk"]

HNSW_WITH = "(m = 16, ef_construction = 64)"


def data_root(name: str) -> Any:
    """A directory for an embedded server's data dir that the server's own user can traverse.

    Run as root, the embedded server runs as an unprivileged user, which cannot enter a 0700
    home cache (it never loosens a directory it did not create). Then the data dir goes under the
    system temp dir, in a directory of ours opened to others for traversal only (0711), kept
    between runs so loaded banks are reused.
    """
    import os
    import tempfile
    from pathlib import Path

    from _corpus import cache_dir

    base = cache_dir()
    if os.geteuid() == 0 and not _traversable_by_others(base):
        base = Path(tempfile.gettempdir()) / "hindsight-bench"
        base.mkdir(mode=0o711, exist_ok=True)
        base.chmod(0o711)
    base.mkdir(parents=True, exist_ok=True)
    return base / name


def _traversable_by_others(path: Any) -> bool:
    import os
    import stat
    from pathlib import Path

    p = Path(path).resolve()
    p.mkdir(parents=True, exist_ok=True)
    return all(os.stat(part).st_mode & stat.S_IXOTH for part in (p, *p.parents))


@contextlib.contextmanager
def plain_table(dsn: str, dimension: int, name: str = "plain_baseline") -> Iterator[str]:
    """An empty ``name`` table (dropped first and after use); yields its name."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {name}")
        conn.execute(f"CREATE TABLE {name} (id bigint PRIMARY KEY, embedding vector({dimension}))")
    try:
        yield name
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {name}")


def _copy(conn: Any, table: str, vectors: npt.NDArray[np.float32], start_id: int = 0) -> None:
    from pgvector.psycopg import register_vector
    from psycopg import sql

    register_vector(conn)
    statement = sql.SQL("COPY {} (id, embedding) FROM STDIN WITH (FORMAT BINARY)").format(
        sql.Identifier(table)
    )
    with conn.cursor() as cur, cur.copy(statement) as copy:
        copy.set_types(["int8", "vector"])
        for i, v in enumerate(vectors):
            copy.write_row((start_id + i, v))


def plain_load(
    dsn: str, table: str, vectors: npt.NDArray[np.float32], *, index_first: bool, batch: int = 1000
) -> dict[str, Any]:
    """COPY ``vectors`` into the empty ``table`` (``batch`` rows per transaction, like ours);
    with ``index_first`` the HNSW index exists before the load, else it is built after it.
    Returns seconds and rows per second (the index build included)."""
    import psycopg

    index = f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops) WITH {HNSW_WITH}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        started = time.perf_counter()
        if index_first:
            conn.execute(index)
        for s in range(0, len(vectors), batch):
            with conn.transaction():
                _copy(conn, table, vectors[s : s + batch], start_id=s)
        if not index_first:
            conn.execute(index)
        seconds = time.perf_counter() - started
        conn.execute(f"ANALYZE {table}")
    return {
        "rows": len(vectors),
        "index": "before the load" if index_first else "built after the load",
        "seconds": round(seconds, 2),
        "per_second": round(len(vectors) / seconds, 1),
    }


def plain_insert_one(dsn: str, table: str, vectors: npt.NDArray[np.float32], *, start_id: int) -> list[float]:
    """One ``INSERT`` (one row, its own transaction) per vector into the loaded ``table``; ms each."""
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql

    statement = sql.SQL("INSERT INTO {} (id, embedding) VALUES (%s, %s)").format(sql.Identifier(table))
    out = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        register_vector(conn)
        for i, v in enumerate(vectors):
            t0 = time.perf_counter()
            conn.execute(statement, (start_id + i, v))
            out.append((time.perf_counter() - t0) * 1e3)
    return out


def plain_topk(
    dsn: str,
    table: str,
    texts: Sequence[str],
    embed: Callable[[str], Any],
    *,
    calls: int,
    clients: int,
    k: int = 10,
    warmup: int = 5,
) -> dict[str, Any]:
    """The plain top-``k``: SQL time, embedding time and their sum per call; queries/s."""
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql as psql

    sql = psql.SQL("SELECT id FROM {} ORDER BY embedding <=> %s LIMIT {}").format(
        psql.Identifier(table), psql.Literal(int(k))
    )
    conns = []
    for _ in range(clients):
        conn = psycopg.connect(dsn, autocommit=True)
        register_vector(conn)
        conns.append(conn)
    per_client = max(1, calls // clients)

    def call(i: int, conn: Any) -> tuple[float, float, int]:
        t0 = time.perf_counter()
        vector = np.asarray(embed(texts[i % len(texts)]), dtype=np.float32)
        t1 = time.perf_counter()
        rows = conn.execute(sql, (vector,)).fetchall()
        t2 = time.perf_counter()
        return (t1 - t0) * 1e3, (t2 - t1) * 1e3, len(rows)

    try:
        for i in range(warmup):
            call(i, conns[0])
        rows, wall = run_clients(lambda c, i: call(i, conns[c]), per_client, clients)
    finally:
        for conn in conns:
            conn.close()
    embed_ms = [r[0] for r in rows]
    sql_ms = [r[1] for r in rows]
    return {
        "clients": clients,
        "calls": len(rows),
        "wall_s": round(wall, 2),
        "qps": round(len(rows) / wall, 2),
        "rows_mean": statistics.fmean(r[2] for r in rows),
        "sql": describe(sql_ms),
        "embedding": describe(embed_ms),
        "sql_plus_embedding": describe([a + b for a, b in zip(embed_ms, sql_ms, strict=True)]),
    }


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile ``q`` (0..100) of ``values``."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else float("nan")


def describe(values: Sequence[float], qs: Sequence[int] = (50, 95, 99)) -> dict[str, float]:
    out = {f"p{q}": round(quantile(values, q), 2) for q in qs}
    out["n"] = len(values)
    return out
