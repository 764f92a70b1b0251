"""A/B of one memory retained into a loaded bank (issue 15.2) by two source trees, interleaved.

    HINDSIGHT_BENCH_PGDATA=... .venv/bin/python benchmarks/single_retain_ab.py \
        --a /path/to/baseline/tree --b . --bank bench-latency-v2-100000 --count 100

Each tree runs in a worker process of its own (this interpreter, ``PYTHONPATH`` = the tree), on
the same embedded server and bank; the driver asks both to retain the same chat turn (vector
given, extraction on: ``single_retain.py``'s turns) in turn, alternating which goes first, so
both see the same load. The vectors (``--vectors near``, the default since session 18) are
stored memories' plus noise drawn for this run, each side's a little apart, so every insert is
a new HNSW element with semantic neighbours, as an agent's new turn is (``random`` keeps the
earlier tool's vectors). Prints p50/p95 of each side, the paired difference (the same turn, one
right after the other), the client CPU per retain and the load average. Every memory written
is deleted at the end.

A schema change (a migration adding triggers) is the database's, so both trees on one database
pay it: ``--data-a`` / ``--data-b`` give each side a data directory of its own (copies of one
bank; the base tree's never sees the newer migration).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _ab import ask, start_worker

_WORKER = r"""
import datetime as dt, json, os, sys, time
sys.path.insert(0, sys.argv[1] + "/benchmarks")
import numpy as np
from single_retain import TURNS
from shared_core import MemoryEngine
from shared_core.types import MemoryItem

bank, side, vectors, seed, calls = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
checkpoint = sys.argv[7] == "1"
ids = []
with MemoryEngine(data_dir=os.environ["HINDSIGHT_BENCH_PGDATA"]) as engine:
    dim = engine.embedder.dimension
    import psycopg

    side_conn = psycopg.connect(engine.dsn, autocommit=True)  # untimed: checkpoints, WAL position
    wal = "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn"
    if vectors == "near":
        from pgvector.psycopg import register_vector

        with psycopg.connect(engine.dsn) as conn:  # the bank's oldest memories: both sides alike
            register_vector(conn)
            stored = [np.asarray(v, dtype=np.float32) for (v,) in conn.execute(
                "SELECT embedding FROM memory_units WHERE bank_id = %s ORDER BY id LIMIT %s", (bank, calls)
            )]
    ids += engine.retain(["warm-up turn about Paris in May 2023"], bank=bank, progress=False)
    print("ready", flush=True)
    for line in sys.stdin:
        i = int(line)
        if vectors == "near":
            # A neighbour of a stored memory (semantic links form, as recall_latency.py's), new
            # to the index: this run's noise, and a little of this side's own, so neither side
            # inserts the other's vector (pgvector's cheaper duplicate path).
            base = stored[i % len(stored)]
            vector = base + np.random.default_rng([seed, i]).normal(0, 0.02, dim).astype(np.float32)
            vector += np.random.default_rng([seed, i, ord(side)]).normal(0, 0.001, dim).astype(np.float32)
        else:
            vector = np.random.default_rng(i).normal(0, 1, dim).astype(np.float32)  # both sides alike
        item = MemoryItem(
            text=TURNS[i % len(TURNS)],
            mentioned_at=dt.datetime(2024, 6, 1, tzinfo=dt.UTC) + dt.timedelta(hours=i),
            embedding=(vector / np.linalg.norm(vector)).tolist(),
        )
        if checkpoint:
            side_conn.execute("CHECKPOINT")
        w0 = side_conn.execute(wal).fetchone()[0]
        cpu, t0 = time.process_time(), time.perf_counter()
        ids += engine.retain([item], bank=bank, progress=False)
        ms = (time.perf_counter() - t0) * 1e3
        cpu_ms = (time.process_time() - cpu) * 1e3
        kb = float(side_conn.execute(wal).fetchone()[0] - w0) / 1024
        print(json.dumps({"ms": ms, "cpu": cpu_ms, "wal_kB": kb}), flush=True)
    engine.delete(ids, bank=bank)
"""


def _worker(
    tree: Path, bank: str, side: str, data: Path | None, vectors: str, seed: int, calls: int, checkpoint: bool
) -> subprocess.Popen[str]:
    env = {"HINDSIGHT_BENCH_PGDATA": str(data)} if data is not None else None
    argv = [str(tree), bank, side, vectors, str(seed), str(calls), "1" if checkpoint else "0"]
    return start_worker(_WORKER, argv, tree, env)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", type=Path, required=True)
    p.add_argument("--b", type=Path, required=True)
    p.add_argument("--bank", default="bench-latency-v2-100000")
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument(
        "--vectors",
        choices=("near", "random"),
        default="near",
        help="near: a stored memory's vector plus noise new to this run (semantic links form, as "
        "in recall_latency.py); random: random unit vectors, the same for both sides and every run "
        "(the tool before session 18: no semantic link, and the second insert of each vector takes "
        "pgvector's cheaper duplicate path)",
    )
    p.add_argument("--data-a", type=Path, default=None, help="A's data directory ($HINDSIGHT_BENCH_PGDATA)")
    p.add_argument("--data-b", type=Path, default=None, help="B's data directory ($HINDSIGHT_BENCH_PGDATA)")
    p.add_argument(
        "--checkpoint",
        action="store_true",
        help="a CHECKPOINT (untimed) on each side's server before each of its retains: every page "
        "a retain changes is logged whole, as for an agent writing a turn every few seconds into a "
        "large bank (with --data-a/--data-b: one server per side)",
    )
    args = p.parse_args()
    seed = time.time_ns()
    calls = args.warmup + args.count
    a = _worker(args.a.resolve(), args.bank, "A", args.data_a, args.vectors, seed, calls, args.checkpoint)
    b = _worker(args.b.resolve(), args.bank, "B", args.data_b, args.vectors, seed, calls, args.checkpoint)
    loads = [os.getloadavg()[0]]
    got: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    for i in range(args.warmup + args.count):
        # Who goes first alternates for each of the four turns in turn: alternating with i alone,
        # A went first on turns 0 and 2 every time and B on 1 and 3 (the cheap "ok" turn), and
        # the second retain finds the first's pages warm (with equal vectors: a duplicate).
        order = [("A", a), ("B", b)] if (i + i // 4) % 2 == 0 else [("B", b), ("A", a)]
        out = {name: ask(proc, i) for name, proc in order}
        if i >= args.warmup:
            for name in ("A", "B"):
                got[name].append(out[name])
        if i % 10 == 0:
            loads.append(os.getloadavg()[0])
    for proc in (a, b):
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    print(
        f"bank {args.bank}, {args.count} retains per side, vectors {args.vectors} (seed {seed}), "
        f"load avg {min(loads):.2f}-{max(loads):.2f}{', a CHECKPOINT before each' if args.checkpoint else ''}"
    )
    print(f"A = {args.a} {args.data_a or ''}\nB = {args.b} {args.data_b or ''}")
    for side in ("A", "B"):
        ms = sorted(r["ms"] for r in got[side])
        print(
            f"  {side}: p50 {statistics.median(ms):7.2f} ms  p95 {ms[int(0.95 * (len(ms) - 1))]:7.2f} ms  "
            f"client CPU p50 {statistics.median(r['cpu'] for r in got[side]):6.2f} ms  "
            f"WAL p50 {statistics.median(r['wal_kB'] for r in got[side]):6.1f} kB (server-wide)"
        )
    diffs = [rb["ms"] - ra["ms"] for ra, rb in zip(got["A"], got["B"], strict=True)]
    faster = sum(d < 0 for d in diffs) / len(diffs) if diffs else 0.0
    print(f"  B - A, paired: median {statistics.median(diffs):+.2f} ms, B faster in {faster:.0%} of retains")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
