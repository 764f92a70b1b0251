"""Why ``recall_latency.py``'s one-memory row and ``single_retain_ab.py`` disagree (issue 15.2).

    HINDSIGHT_BENCH_PGDATA=/tmp/x-100k .venv/bin/python benchmarks/single_method.py \
        --rounds 3 --out docs/benchmarks/single18_method.json

Runs, on one server and bank, blocks of one-memory retains that differ in one respect each from
``recall_latency.py``'s ``measure_single_retain`` (30 retains, a fresh engine, one warm-up, each
vector a stored one plus N(0, 0.02), deleted at the end; its loop is copied here as :func:`loop`,
which returns every retain's time):

* ``latency``: that loop (the same vectors in every call, as in every run of the benchmark);
* ``random``: the same loop with ``single_retain_ab.py``'s vectors (random unit vectors: far
  from every stored memory, so no semantic link reaches the 0.7 floor);
* ``warm``: the same vectors as ``latency``, with 30 more warm-up retains first (not timed);
* ``after_checkpoint``: ``latency`` right after a ``CHECKPOINT`` (every page the retains dirty
  is then logged whole: full-page writes);
* ``after_plain``: ``latency`` right after ``recall_latency.py``'s plain side (the 100k vectors
  COPYed into a table, its HNSW index built, 30 one-row INSERTs, the table dropped);
  ``after_plain+S`` waits S seconds after it; ``sleep+S`` just waits S seconds first;
* ``old_method`` / ``new_method`` (with a plain table of the corpus built once, as
  ``recall_latency.py`` builds it): the benchmark's one-memory measurement before session 18
  (30 plain ``INSERT``s of stored vectors, then the 30 retains above) and after it
  (``measure_single_retain``: 5 untimed steps, then ``--count`` retains each beside a plain
  ``INSERT`` of the same new vector, in turn);
* ``pglz:<block>``: that block with the server's ``wal_compression = pglz`` (the full-page
  images compressed; reset to the data directory's setting at the end);
* ``vacuumed``: ``latency`` after a ``VACUUM`` of the tables the retains and deletes touch
  (the earlier blocks' deleted rows leave dead tuples, in the HNSW index too).

Blocks rotate in rounds so load drifts hit all alike. Per block: p50 / mean, WAL bytes and
full-page images per retain (``pg_stat_wal``), the semantic and temporal links stored per
retain, the dead tuples of ``memory_units`` afterwards, the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import psycopg


def _wal(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    time.sleep(1.5)  # closed backends flush their WAL counters on exit
    row = conn.execute(
        "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn, wal_fpi FROM pg_stat_wal"
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _links(conn: psycopg.Connection[Any], bank: str) -> dict[str, int]:
    rows = conn.execute(
        "SELECT link_type, count(*) FROM memory_links WHERE bank_id = %s GROUP BY 1", (bank,)
    ).fetchall()
    return {k: int(n) for k, n in rows}


def _dead(conn: psycopg.Connection[Any]) -> dict[str, int]:
    conn.execute("SELECT pg_stat_force_next_flush()")
    rows = conn.execute(
        "SELECT relname, n_dead_tup FROM pg_stat_user_tables"
        " WHERE relname IN ('memory_units', 'memory_links', 'unit_entities')"
    ).fetchall()
    return {k: int(n) for k, n in rows}


def loop(
    dsn: str, bank: str, vectors: Any, *, warm: int = 0, warm_vectors: Any = None, keep: bool = False
) -> tuple[list[float], list[str]]:
    """``measure_single_retain``'s loop, returning every retain's ms (and the ids if ``keep``)."""
    from shared_core import MemoryEngine
    from shared_core.types import MemoryItem

    turns = [
        'Alice said, "I finally went hiking near Denver with Bob last Saturday."',
        'Bob said, "Work at Dunder Mifflin has been hectic since March."',
        'Zara said, "Thanks! I\'ll try the pottery class next week."',
        'Liam said, "ok, sounds good"',
    ]
    ms: list[float] = []
    ids: list[str] = []
    pauses: list[float] = []
    started: list[float] = []

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            pauses.append((time.perf_counter() - started.pop()) * 1e3)

    gc.callbacks.append(on_gc)
    with MemoryEngine(dsn) as engine:
        ids += engine.retain(["warm-up turn about Paris in May 2023"], bank=bank, progress=False)
        for i in range(warm):
            ids += engine.retain(
                [MemoryItem(text=turns[i % 4], embedding=warm_vectors[i % len(warm_vectors)].tolist())],
                bank=bank,
                progress=False,
            )
        for i in range(len(vectors)):
            item = MemoryItem(
                text=turns[i % len(turns)],
                mentioned_at=dt.datetime(2024, 6, 1, tzinfo=dt.UTC) + dt.timedelta(hours=i),
                embedding=vectors[i].tolist(),
            )
            t0 = time.perf_counter()
            before = len(pauses)
            ids += engine.retain([item], bank=bank, progress=False)
            ms.append((time.perf_counter() - t0) * 1e3)
            GC_MS.append(sum(pauses[before:]))
        if not keep:
            engine.delete(ids, bank=bank)
    gc.callbacks.remove(on_gc)
    return ms, ids


#: The cyclic collector's pause inside each timed retain of the last :func:`loop`, ms.
GC_MS: list[float] = []


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bank", default="bench-latency-v2-100000")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--count", type=int, default=30)
    p.add_argument("--blocks", nargs="+", default=["latency", "random", "warm", "after_checkpoint"])
    p.add_argument(
        "--recalls-first",
        action="store_true",
        help="first run recall_latency.py's recalls (1 and 8 clients, 80 calls each) with an engine "
        "that stays open: the one-memory loop then runs in a process like the benchmark's",
    )
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()

    from _corpus import make_corpus

    from shared_core.server import acquire_embedded

    _, dsn = acquire_embedded(os.environ["HINDSIGHT_BENCH_PGDATA"])
    corpus_vectors = make_corpus(100_000).vectors
    n = len(corpus_vectors)
    picks = corpus_vectors[[(i * 97) % n for i in range(args.count)]]
    rng = np.random.default_rng(5)  # measure_single_retain's noise, drawn the same way
    noisy = np.stack([v + rng.normal(0, 0.02, size=v.shape[0]).astype(np.float32) for v in picks])

    def fresh(r: int, b: int) -> Any:
        """Vectors never retained before: the benchmark's picks plus noise of a seed of their own
        (a vector inserted twice takes pgvector's cheaper duplicate path the second time)."""
        g = np.random.default_rng([18, r, b])
        return picks + g.normal(0, 0.02, size=picks.shape).astype(np.float32)

    def fresh_random(r: int, b: int) -> Any:
        g = np.random.default_rng([18, r, b, 1])
        v = g.normal(0, 1, size=picks.shape).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    results: list[dict[str, Any]] = []
    if args.recalls_first:
        from _corpus import make_queries
        from recall_latency import measure_ours

        from shared_core import EngineConfig, MemoryEngine

        recaller = MemoryEngine(dsn, config=EngineConfig(extract_entities=False, extract_dates=False))
        queries = make_queries(50)  # recall_latency.py's default
        for clients in (1, 8, 1):
            measure_ours(recaller, args.bank, queries, calls=80, clients=clients)
    plain = contextlib.ExitStack()
    table = ""
    if any(b.endswith("_method") for b in args.blocks):
        from _plain import plain_load, plain_table

        table = plain.enter_context(plain_table(dsn, corpus_vectors.shape[1]))
        plain_load(dsn, table, corpus_vectors, index_first=False)
    with plain, psycopg.connect(dsn, autocommit=True) as conn:
        for r in range(args.rounds):
            for bi, spec in enumerate(args.blocks):
                # "pglz:<block>": the block with wal_compression = pglz (server-wide, reloaded)
                compression, _, block = spec.rpartition(":")
                conn.execute(f"ALTER SYSTEM SET wal_compression = '{compression or 'off'}'")
                conn.execute("SELECT pg_reload_conf()")
                if block == "after_checkpoint":
                    conn.execute("CHECKPOINT")
                load0 = os.getloadavg()[0]
                wal0 = _wal(conn)
                links0 = _links(conn, args.bank)
                if block == "vacuumed":
                    for table in ("memory_units", "memory_links", "unit_entities", "entities"):
                        conn.execute(f"VACUUM {table}")
                if block.startswith("after_plain"):
                    # recall_latency.py's plain side, just before its one-memory loop: COPY the
                    # 100k vectors into a table, build its HNSW index, one-row INSERTs, DROP.
                    from _plain import plain_insert_one, plain_load, plain_table

                    with plain_table(dsn, corpus_vectors.shape[1]) as table:
                        plain_load(dsn, table, corpus_vectors, index_first=False)
                        plain_insert_one(dsn, table, picks, start_id=n)
                    if block != "after_plain":
                        time.sleep(float(block.rsplit("+", 1)[1]))
                    load0 = os.getloadavg()[0]
                    wal0 = _wal(conn)
                    links0 = _links(conn, args.bank)
                if block.startswith("sleep+"):
                    time.sleep(float(block.rsplit("+", 1)[1]))
                    load0 = os.getloadavg()[0]
                    wal0 = _wal(conn)
                    links0 = _links(conn, args.bank)
                ckpt0 = conn.execute(
                    "SELECT num_timed, num_requested, buffers_written FROM pg_stat_checkpointer"
                ).fetchone()
                vectors = fresh(r, bi)
                if block == "repeat":  # the vectors of the round's "latency" block, now deleted
                    vectors = fresh(r, args.blocks.index("latency"))
                if block == "random":
                    vectors = fresh_random(r, bi)
                if block == "ab_pairs":  # single_retain_ab.py: each vector retained twice in a row
                    vectors = np.repeat(fresh_random(r, bi)[: args.count // 2], 2, axis=0)
                if block == "benchmark_vectors":  # recall_latency.py's: the same in every run
                    vectors = noisy
                if block == "old_method":
                    # recall_latency.py before session 18: 30 plain INSERTs of stored vectors
                    # (duplicates), then 30 retains of seed-5 vectors (the same every run).
                    from _plain import plain_insert_one

                    plain_ms = plain_insert_one(dsn, table, picks, start_id=n + 1000 * (2 * r + 1))
                    ms, ids = loop(dsn, args.bank, noisy, keep=True)
                elif block == "new_method":
                    from recall_latency import measure_single_retain

                    single = measure_single_retain(
                        dsn, args.bank, table, picks, start_id=n + 1000 * (2 * r + 2), seed=time.time_ns()
                    )
                    ms, ids, plain_ms = [single["ours"]["p50"]], [], [single["plain"]["p50"]]
                    row_extra = {"new_method": single}
                elif block == "warm":
                    ms, ids = loop(
                        dsn, args.bank, vectors, warm=args.count, warm_vectors=fresh(r, 99), keep=True
                    )
                else:
                    ms, ids = loop(dsn, args.bank, vectors, keep=True)
                if not block.endswith("_method"):
                    plain_ms, row_extra = [], {}
                if block == "old_method":
                    row_extra = {}
                wal1 = _wal(conn)
                links1 = _links(conn, args.bank)
                conn.execute("SELECT 1")
                from shared_core import MemoryEngine

                if ids:
                    with MemoryEngine(dsn) as eng:
                        eng.delete(ids, bank=args.bank)
                row = {
                    "round": r,
                    "block": spec,
                    "p50": round(statistics.median(ms), 2),
                    "mean": round(statistics.fmean(ms), 2),
                    "first5": [round(x, 1) for x in ms[:5]],
                    "gc_ms_in_retains": round(sum(GC_MS[-len(ms) :]), 1),
                    "ms": [round(x, 2) for x in ms],
                    # the loop's WAL includes the warm-ups and, for latency, the benchmark's own call
                    "plain_p50": round(statistics.median(plain_ms), 2) if plain_ms else None,
                    **row_extra,
                    "wal_kb_per_retain": round((wal1[0] - wal0[0]) / 1024 / max(1, len(ids)), 1),
                    "fpi_per_retain": round((wal1[1] - wal0[1]) / max(1, len(ids)), 1),
                    "links_per_retain": {
                        k: round((links1.get(k, 0) - links0.get(k, 0)) / max(1, len(ids)), 1) for k in links1
                    },
                    "dead_after": _dead(conn),
                    "checkpointer_before_after": [
                        list(ckpt0 or ()),
                        list(
                            conn.execute(
                                "SELECT num_timed, num_requested, buffers_written FROM pg_stat_checkpointer"
                            ).fetchone()
                            or ()
                        ),
                    ],
                    "load": [round(load0, 2), round(os.getloadavg()[0], 2)],
                    "at": dt.datetime.now(dt.UTC).strftime("%H:%M:%S"),
                }
                results.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "ms"}), flush=True)
        conn.execute("ALTER SYSTEM RESET wal_compression")
        conn.execute("SELECT pg_reload_conf()")
    if args.out:
        args.out.write_text(json.dumps({"command": sys.argv, "blocks": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
