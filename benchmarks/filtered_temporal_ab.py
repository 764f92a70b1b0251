"""The temporal arm's first statement under a filter: the former HNSW statements against the
exact branches (``filtered_temporal_entry_statement``, ``filtered_dated_evidence_statement``),
statement by statement, on a bench bank.

    HINDSIGHT_BENCH_PGDATA=/tmp/filt-bench .venv/bin/python benchmarks/filtered_temporal_ab.py \
        --filter '{"team": "er"}' [--tags travel --tags-match any_strict] [--rounds 5]

The bench queries are recalled once under the filter to capture the temporal statements' parameters
(the window of a dated query, the "when" questions' dated evidence); each is then run with the
former statement and the filtered one, interleaved ``--rounds`` times on one connection with the
arm's settings. Printed per statement: p50 of each (ms, the whole set of calls), and how many of
the former statement's rows are among the exact branch's (the exact branch returns the true top
rows of the filter's memories: what the HNSW walk approximated), and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg
from _args import add_scope_args, scope_options
from _capture import capturing, scope_arm_query
from _corpus import CORPUS_VERSION, make_queries


def kind_of(text: str) -> str | None:
    """``entry`` (the temporal entry), ``dated`` (the dated evidence) or None, by the statement's
    text with its whitespace collapsed.

    >>> kind_of("WITH began AS (SELECT 1)"), kind_of("SELECT 1")
    ('entry', None)
    """
    flat = " ".join(text.split())
    if "began AS" in flat:
        return "entry"
    return "dated" if "occurred_start IS NOT NULL ORDER BY" in flat else None


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--calls", type=int, default=50, help="bench queries recalled to capture statements")
    p.add_argument("--rounds", type=int, default=5)
    add_scope_args(p)
    p.add_argument("--verbose", action="store_true", help="print each statement's p50 and rows")
    p.add_argument("--explain", action="store_true", help="EXPLAIN (ANALYZE, BUFFERS) the first of each kind")
    p.add_argument("--data-dir", type=Path, default=os.environ.get("HINDSIGHT_BENCH_PGDATA") or None)
    args = p.parse_args(argv)

    from pgvector.psycopg import register_vector

    from shared_core import EngineConfig, MemoryEngine
    from shared_core.recall.arms import temporal as T

    options: dict[str, Any] = {"reranker": "none", **scope_options(args)}
    queries = make_queries()
    bank = f"bench-latency-v{CORPUS_VERSION}-{args.size}"
    config = EngineConfig(extract_entities=False, extract_dates=False)
    with MemoryEngine(data_dir=args.data_dir, config=config) as engine:
        with capturing(kind_of) as statements:
            for i in range(args.calls):
                engine.recall(
                    queries.texts[i % len(queries.texts)],
                    bank=bank,
                    query_timestamp=queries.query_time,
                    **options,
                )
        captured = [(kind, params) for kind, _, params in statements]
        q = scope_arm_query(engine, bank, args)
        where, dim = q.where_sql, q.dimension
        pairs = {
            "entry": (
                T.temporal_entry_statement(where, dim),
                T.filtered_temporal_entry_statement(where, dim),
            ),
            "dated": (
                T.dated_evidence_statement(where, dim),
                T.filtered_dated_evidence_statement(where, dim),
            ),
        }
        load = os.getloadavg()[0]
        times: dict[tuple[str, str], list[float]] = {}
        kept: dict[str, list[float]] = {}
        with psycopg.connect(engine.dsn, autocommit=True) as conn:
            register_vector(conn)
            conn.execute("SET hnsw.iterative_scan = relaxed_order")
            conn.execute(f"SET hnsw.ef_search = {int(engine.config.hnsw_ef_search)}")
            conn.execute(f"SET hnsw.max_scan_tuples = {int(engine.config.hnsw_max_scan_tuples)}")
            for name, value in T.ENTRY_SETTINGS.items():
                conn.execute("SELECT set_config(%s, %s, false)", (name, value))
            for kind, params in captured:
                former, exact = pairs[kind]
                rows: dict[str, list[str]] = {}
                for _ in range(args.rounds):
                    for side, statement in (("former", former), ("exact", exact)):
                        started = time.perf_counter()
                        found = conn.execute(statement, params).fetchall()
                        times.setdefault((kind, side), []).append((time.perf_counter() - started) * 1000)
                        rows[side] = [str(r[0]) for r in found]
                if args.verbose:
                    former_ms, exact_ms = times[(kind, "former")], times[(kind, "exact")]
                    last_former = statistics.median(former_ms[-args.rounds :])
                    last_exact = statistics.median(exact_ms[-args.rounds :])
                    print(
                        f"    {kind} former {last_former:7.2f} ms {len(rows['former']):3d} rows | "
                        f"exact {last_exact:7.2f} ms {len(rows['exact']):3d} rows"
                    )
                if rows["former"]:
                    kept.setdefault(kind, []).append(
                        len(set(rows["former"]) & set(rows["exact"])) / len(rows["former"])
                    )
            if args.explain:
                from psycopg import sql

                for kind in ("entry", "dated"):
                    params = next((ps for k, ps in captured if k == kind), None)
                    for side, statement in zip(("former", "exact"), pairs[kind], strict=True):
                        if params is None:
                            continue
                        plan = conn.execute(
                            sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + statement, params
                        ).fetchall()
                        print(f"--- {kind}, {side}")
                        print(
                            "\n".join(
                                r[0] for r in plan if "Order By:" not in r[0] and "Sort Key" not in r[0]
                            )
                        )
        print(
            f"{options}: {len(captured)} temporal statements x {args.rounds} rounds, "
            f"load avg {load:.2f}-{os.getloadavg()[0]:.2f}"
        )
        for kind in ("entry", "dated"):
            if (kind, "former") not in times:
                continue
            former_ms, exact_ms = times[(kind, "former")], times[(kind, "exact")]
            share = kept.get(kind, [])
            calls = len(former_ms) // args.rounds
            print(
                f"  {kind:6s} n {calls:3d}  former p50 {statistics.median(former_ms):7.2f}  "
                f"exact p50 {statistics.median(exact_ms):7.2f} ms  former rows among the exact top: "
                f"mean {statistics.mean(share) if share else float('nan'):.3f}, "
                f"min {min(share) if share else float('nan'):.3f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
