"""Where the small retain's server time goes, statement by statement (issue 15.2 diagnosis).

    HINDSIGHT_BENCH_PGDATA=/tmp/one-100k .venv/bin/python benchmarks/retain_explain.py \
        --bank bench-latency-v2-100000 --count 20 --out docs/benchmarks/one2_explain.json

Runs ``engine.retain([one chat turn with its vector])`` (``single_retain.py``'s turns, extraction
on) with the runner's pipelines replaced by a diagnostic twin: each statement of a pipeline is
first run under ``EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)`` inside a savepoint that is rolled
back, then run for real, one round trip each. Per statement it reports the median planning and
execution time, the time of each trigger (foreign-key checks, the statistics, postings and
metadata triggers) and the buffers; nothing the retain stores changes (every memory written is
deleted at the end). The real run also reads the backend's CPU time around each statement
(``/proc/<pid>/schedstat``: the server shares this machine). The statements' own times, not
the pipelines' wall time: the pipelines overlap the round trips, this does not. EXPLAIN
ANALYZE's timing adds overhead of its own.

``--vectors corpus`` retains vectors near stored ones (a corpus vector plus noise, as
``single_retain.py``), ``random`` draws them at random as ``single_retain_ab.py`` does.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from single_retain import TURNS


def _head(statement: Any) -> str:
    text = statement if isinstance(statement, str) else repr(statement)
    return " ".join(text.split())[:70]


def _backend_cpu_ms(pid: int) -> float:
    """The CPU time a server backend has used so far (Linux ``schedstat``), in ms."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e6


def _walk(node: dict[str, Any], out: list[str], depth: int = 0) -> None:
    line = "  " * depth + node["Node Type"]
    if "Index Name" in node:
        line += f" using {node['Index Name']}"
    if "Relation Name" in node:
        line += f" on {node['Relation Name']}"
    line += f" (actual {node.get('Actual Total Time', 0):.3f} ms x{node.get('Actual Loops', 1)}"
    line += f", rows {node.get('Actual Rows', 0)}, shared hit {node.get('Shared Hit Blocks', 0)}"
    line += f" read {node.get('Shared Read Blocks', 0)})"
    out.append(line)
    for child in node.get("Plans", []):
        _walk(child, out, depth + 1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bank", default="bench-latency-v2-100000")
    p.add_argument("--count", type=int, default=20)
    p.add_argument("--vectors", choices=("corpus", "random"), default="random")
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument(
        "--seed",
        type=int,
        default=5,
        help="the noise of --vectors corpus (5: single_retain.py's; another seed for vectors no "
        "earlier run inserted, since pgvector inserts a vector already in the index, dead or "
        "alive, by its cheaper duplicate path)",
    )
    p.add_argument(
        "--checkpoint",
        action="store_true",
        help="a CHECKPOINT before each retain: the state after one, where the first change of "
        "each page since it writes the whole page to the WAL (full-page writes)",
    )
    p.add_argument("--out", type=Path, default=None)
    p.add_argument(
        "--data-dir", type=Path, default=os.environ.get("HINDSIGHT_BENCH_PGDATA") or None, required=False
    )
    args = p.parse_args(argv)

    import psycopg
    from psycopg import sql

    from shared_core import MemoryEngine
    from shared_core.storage import runner
    from shared_core.types import MemoryItem

    stats: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    plans: dict[str, list[str]] = {}
    order: list[str] = []

    def explained(conn: psycopg.Connection[Any], op: Any) -> list[Any]:
        return explained_queries(conn, op.queries)

    def explained_queries(conn: psycopg.Connection[Any], queries: Any) -> list[Any]:
        out = []
        for query in queries:
            key = _head(query.statement)
            if key not in order:
                order.append(key)
            if key.startswith("ANALYZE"):  # not explainable; its time only
                c0, t0 = _backend_cpu_ms(conn.info.backend_pid), time.perf_counter()
                out.append(runner._exec_sync(conn, query))
                stats[key]["real, one round trip"].append((time.perf_counter() - t0) * 1e3)
                stats[key]["real, backend CPU"].append(_backend_cpu_ms(conn.info.backend_pid) - c0)
                stats[key]["execution"].append(0.0)
                plans[key] = []
                continue
            with conn.cursor() as cur:
                for stmt in runner._setting_statements(query):
                    cur.execute(stmt)
                cur.execute("SAVEPOINT explain")
                text = (
                    query.statement
                    if isinstance(query.statement, sql.Composable)
                    else sql.SQL(query.statement)
                )  # type: ignore[arg-type]
                # The EXPLAIN runs the statement first: the WAL of its first change of each page
                # (whole pages after a checkpoint) is counted here, not in the real run's column.
                w_explain = _wal_position()
                cur.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ") + text, query.params)
                row = cur.fetchone()
                explain_wal = (_wal_position() - w_explain) / 1024
                cur.execute("ROLLBACK TO SAVEPOINT explain")
            doc = row[0][0] if isinstance(row[0], list) else json.loads(row[0])[0]
            s = stats[key]
            s["planning"].append(doc.get("Planning Time", 0.0))
            s["EXPLAIN run, WAL kB"].append(explain_wal)
            s["execution"].append(doc.get("Execution Time", 0.0))
            for trig in doc.get("Triggers", []):
                s[f"trigger {trig['Trigger Name']} ({trig.get('Relation', '')})"].append(trig["Time"])
            lines: list[str] = []
            _walk(doc["Plan"], lines)
            plans[key] = lines
            pid = conn.info.backend_pid
            w0 = _wal_position()
            c0, t0 = _backend_cpu_ms(pid), time.perf_counter()
            if conn._pipeline is None:
                out.append(runner._exec_sync(conn, query))
            else:  # in an open pipeline (a Send's, or writes sent with the commit)
                with conn.cursor(row_factory=runner._row_factory(query)) as cur:
                    for stmt in runner._setting_statements(query):
                        cur.execute(stmt)
                    cur.execute(query.statement, query.params)
                    conn._pipeline.sync()  # its result now: the statement's whole time
                    out.append(runner._result_sync(cur, query))
            s["real, one round trip"].append((time.perf_counter() - t0) * 1e3)
            s["real, backend CPU"].append(_backend_cpu_ms(pid) - c0)
            s["real, WAL kB"].append((_wal_position() - w0) / 1024)
        return out

    loadavg_start = [round(x, 2) for x in os.getloadavg()]
    rng = np.random.default_rng(args.seed)
    with MemoryEngine(data_dir=args.data_dir) as engine, psycopg.connect(engine.dsn, autocommit=True) as side:

        def _wal_position() -> int:
            """Bytes of WAL written so far, server-wide (a private server: the retain's own)."""
            row = side.execute("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn").fetchone()
            return int(row[0]) if row else 0

        dim = engine.embedder.dimension
        if args.vectors == "corpus":
            from _corpus import make_corpus

            corpus = make_corpus(args.size).vectors
        ids = engine.retain(["warm-up turn about Paris in May 2023"], bank=args.bank, progress=False)
        saved, saved_send = runner._pipeline_sync, runner._send_sync
        saved_results = getattr(runner, "_results_sync", None)
        runner._pipeline_sync = explained  # type: ignore[assignment]
        # The writes sent with the commit (a pipeline that is not waited for) and a Send's
        # queries go through _send_sync: explained too, each one waited for; a Send's results
        # are then handed back as they are.
        runner._send_sync = explained_queries  # type: ignore[assignment]
        if saved_results is not None:

            def results(cursors: Any, queries: Any) -> list[Any]:
                if all(isinstance(c, psycopg.Cursor) for c in cursors):
                    return saved_results(cursors, queries)  # type: ignore[no-any-return]
                return list(cursors)

            runner._results_sync = results
        try:
            for i in range(args.count):
                if args.checkpoint:  # every page the retain writes is then logged whole once
                    side.execute("CHECKPOINT")
                if args.vectors == "corpus":
                    v = corpus[(i * 97) % len(corpus)] + rng.normal(0, 0.02, dim).astype(np.float32)
                else:
                    v = np.random.default_rng(i).normal(0, 1, dim).astype(np.float32)
                item = MemoryItem(
                    text=TURNS[i % len(TURNS)],
                    mentioned_at=dt.datetime(2024, 6, 1, tzinfo=dt.UTC) + dt.timedelta(hours=i),
                    embedding=(v / np.linalg.norm(v)).tolist(),
                )
                ids += engine.retain([item], bank=args.bank, progress=False)
        finally:
            runner._pipeline_sync, runner._send_sync = saved, saved_send
            if saved_results is not None:
                runner._results_sync = saved_results
            engine.delete(ids, bank=args.bank)
    report: dict[str, Any] = {
        "count": args.count,
        "vectors": args.vectors,
        "seed": args.seed,
        "checkpoint_before_each": args.checkpoint,
        "loadavg_start": loadavg_start,
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        "statements": {},
    }
    for key in order:
        # The second half: the first retains of a fresh server read the index from the OS cache.
        med = {name: round(statistics.median(v[len(v) // 2 :]), 3) for name, v in stats[key].items()}
        med["calls"] = len(stats[key]["execution"])
        report["statements"][key] = {"median_ms": med, "last_plan": plans[key]}
        print(f"\n== {key}")
        for name, v in med.items():
            print(f"   {v:8.3f}  {name}")
        for line in plans[key]:
            print("     " + line)
    print(f"\nload {report['loadavg_start']} -> {report['loadavg_end']}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
