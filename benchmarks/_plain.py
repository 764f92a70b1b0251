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

The plain FILTERED baseline (``plain_filtered_table``, ``plain_filter``, ``plain_filtered_query``)
is what a pgvector / langchain-postgres user would build for filtered search: the same vectors
with the same tags (``text[]``, GIN) and metadata (``jsonb``, GIN ``jsonb_path_ops``, the index
langchain-postgres creates), the filter as a plain predicate (``metadata @> ...``, a range as a
cast comparison, ``tags && ...``), and pgvector's documented filtered-search setting
(``hnsw.iterative_scan = relaxed_order``, its results re-sorted by a materialised CTE as
pgvector's README shows) so the HNSW scan does not stop short of ``k`` rows. The planner is free
to pick the GIN index and sort instead, as it would be for that user. ``plain_exact_query`` is the
same predicate ranked exactly (index scans off), to measure what the iterative scan returns.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from _clients import run_clients

__all__ = [
    "data_root",
    "describe",
    "plain_exact_query",
    "plain_filter",
    "plain_filtered_query",
    "plain_filtered_table",
    "plain_insert_one",
    "plain_load",
    "plain_table",
    "plain_topk",
    "plain_topk_statement",
    "timed_topk",
]

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


def plain_topk_statement(table: str, k: int = 10) -> Any:
    """The plain baseline's query: ``SELECT id FROM <table> ORDER BY embedding <=> %s LIMIT k``."""
    from psycopg import sql as psql

    return psql.SQL("SELECT id FROM {} ORDER BY embedding <=> %s LIMIT {}").format(
        psql.Identifier(table), psql.Literal(int(k))
    )


def timed_topk(conn: Any, statement: Any, embed: Callable[[str], Any], text: str) -> tuple[float, float, int]:
    """One plain top-k on ``conn`` (vectors registered): the embedding's ms, the SQL's ms, rows."""
    t0 = time.perf_counter()
    vector = np.asarray(embed(text), dtype=np.float32)
    t1 = time.perf_counter()
    rows = conn.execute(statement, (vector,)).fetchall()
    t2 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3, len(rows)


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

    sql = plain_topk_statement(table, k)
    conns = []
    for _ in range(clients):
        conn = psycopg.connect(dsn, autocommit=True)
        register_vector(conn)
        conns.append(conn)
    per_client = max(1, calls // clients)

    def call(i: int, conn: Any) -> tuple[float, float, int]:
        return timed_topk(conn, sql, embed, texts[i % len(texts)])

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


@contextlib.contextmanager
def plain_filtered_table(
    dsn: str,
    vectors: npt.NDArray[np.float32],
    tags: Sequence[Sequence[str]],
    metadata: Sequence[Mapping[str, Any]],
    name: str = "plain_filtered",
    *,
    keep: bool = False,
) -> Iterator[dict[str, Any]]:
    """A ``name`` table (id, embedding, tags, metadata) holding ``vectors`` and their tags and
    metadata (row i of each), loaded by binary COPY, then indexed (HNSW as :func:`plain_load`,
    GIN on tags, GIN ``jsonb_path_ops`` on metadata) and analysed; yields the table name and load
    seconds; dropped first and after use. With ``keep`` it is left in place after use and a
    table of that name holding ``len(vectors)`` rows is reused (a load at 100k takes minutes)."""
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql
    from psycopg.types.json import Jsonb

    table = sql.Identifier(name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        register_vector(conn)
        if keep and conn.execute("SELECT to_regclass(%s)", (name,)).fetchone() != (None,):
            rows = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(table)).fetchone()
            if rows == (len(vectors),):
                yield {"table": name, "rows": len(vectors), "load_and_index_s": "reused"}
                return
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))
        conn.execute(
            sql.SQL(
                "CREATE TABLE {} (id bigint PRIMARY KEY, embedding vector({}), tags text[] NOT NULL, "
                "metadata jsonb NOT NULL)"
            ).format(table, sql.Literal(int(vectors.shape[1])))
        )
        started = time.perf_counter()
        copy_sql = sql.SQL("COPY {} (id, embedding, tags, metadata) FROM STDIN WITH (FORMAT BINARY)")
        with conn.cursor() as cur, cur.copy(copy_sql.format(table)) as copy:
            copy.set_types(["int8", "vector", "text[]", "jsonb"])
            for i, v in enumerate(vectors):
                copy.write_row((i, v, list(tags[i]), Jsonb(dict(metadata[i]))))
        conn.execute(
            sql.SQL("CREATE INDEX ON {} USING hnsw (embedding vector_cosine_ops) WITH " + HNSW_WITH).format(
                table
            )
        )
        conn.execute(sql.SQL("CREATE INDEX ON {} USING gin (tags)").format(table))
        conn.execute(sql.SQL("CREATE INDEX ON {} USING gin (metadata jsonb_path_ops)").format(table))
        conn.execute(sql.SQL("ANALYZE {}").format(table))
        seconds = time.perf_counter() - started
    try:
        yield {"table": name, "rows": len(vectors), "load_and_index_s": round(seconds, 2)}
    finally:
        if not keep:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))


_RANGES = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def _plain_metadata(filter_: Mapping[str, Any]) -> Any:
    """A plain predicate for the filters the benchmarks use: equality (``@>``, the GIN index's
    operator), numeric ranges (a cast comparison: no index serves it), ``$and``."""
    from psycopg import sql
    from psycopg.types.json import Jsonb

    parts: list[Any] = []
    for key, value in filter_.items():
        if key == "$and":
            parts += [_plain_metadata(f) for f in value]
        elif isinstance(value, Mapping):
            for op, bound in value.items():
                if op not in _RANGES or not isinstance(bound, int | float):
                    raise ValueError(f"plain baseline: unsupported filter {key}: {value}")
                parts.append(
                    sql.SQL("(metadata->>{})::numeric {} {}").format(
                        sql.Literal(key), sql.SQL(_RANGES[op]), sql.Literal(bound)
                    )
                )
        else:
            parts.append(sql.SQL("metadata @> {}").format(sql.Literal(Jsonb({key: value}))))
    return sql.SQL(" AND ").join(parts) if parts else sql.SQL("true")


def plain_filter(options: Mapping[str, Any]) -> Any:
    """The WHERE predicate (psycopg ``sql``, values as literals) a plain user would write for a
    recall's ``tags`` / ``tags_match`` / ``filter`` options: tags ``any`` lets untagged rows
    through too, as ours does; ``any_strict`` needs one of the tags."""
    from psycopg import sql

    parts: list[Any] = []
    if options.get("tags"):
        overlap = sql.SQL("tags && {}::text[]").format(sql.Literal(list(options["tags"])))
        if options.get("tags_match", "any") == "any":
            overlap = sql.SQL("(tags = '{{}}'::text[] OR {})").format(overlap)
        elif options["tags_match"] != "any_strict":
            raise ValueError(f"plain baseline: unsupported tags_match {options['tags_match']}")
        parts.append(overlap)
    if options.get("filter"):
        parts.append(_plain_metadata(options["filter"]))
    return sql.SQL(" AND ").join(parts) if parts else sql.SQL("true")


def plain_filtered_query(table: str, where: Any, k: int = 10) -> Any:
    """pgvector's documented filtered top-``k`` with ``hnsw.iterative_scan = relaxed_order``:
    the scan's rows, re-sorted (relaxed order may return them slightly out of order)."""
    from psycopg import sql

    return sql.SQL(
        "WITH relaxed AS MATERIALIZED (SELECT id, embedding <=> %(q)s AS distance FROM {} WHERE {} "
        "ORDER BY distance LIMIT {}) SELECT id FROM relaxed ORDER BY distance + 0"
    ).format(sql.Identifier(table), where, sql.Literal(int(k)))


def plain_exact_query(table: str, where: Any, k: int = 10) -> Any:
    """The same predicate's exact top-``k`` (run it with ``enable_indexscan = off``: no HNSW)."""
    from psycopg import sql

    return sql.SQL("SELECT id FROM {} WHERE {} ORDER BY embedding <=> %(q)s, id LIMIT {}").format(
        sql.Identifier(table), where, sql.Literal(int(k))
    )


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile ``q`` (0..100) of ``values``."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else float("nan")


def describe(values: Sequence[float], qs: Sequence[int] = (50, 95, 99)) -> dict[str, float]:
    out = {f"p{q}": round(quantile(values, q), 2) for q in qs}
    out["n"] = len(values)
    return out
