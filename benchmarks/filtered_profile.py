"""Where a (filtered) recall's time goes, statement by statement, on a bench bank.

    HINDSIGHT_BENCH_PGDATA=/tmp/filt-bench .venv/bin/python benchmarks/filtered_profile.py \
        --filter '{"team": "er"}' [--tags travel --tags-match any] [--calls 50] \
        [--explain semantic-filtered]

Every statement the library runs is timed from ``execute`` to its return (psycopg's
``Cursor.execute``, wrapped; a framed statement, sent in one pipeline with its settings, around
the whole pipeline), over ``--calls`` recalls of the bench queries; statements are named
by the arm that runs them (``semantic``, ``semantic-filtered``, ``keyword``, ``graph``,
``temporal-entry``, ``temporal-hop``, ``dated-evidence``, ``estimate``, ``range-values``, the
hydration and details reads). Printed per name: how many ran, p50, max, and the time per recall
(a statement that runs for a few recalls only, e.g. the temporal entry of dated questions, weighs
little in the p50). Statements run concurrently (the arms), so the sums are not wall time.
``--explain NAME`` prints ``EXPLAIN (ANALYZE, BUFFERS)`` of the first statement of that name.
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
from _corpus import CORPUS_VERSION, make_queries
from psycopg import sql

# (a fragment of the statement's text, its name), first match wins.
# The temporal statements under a filter hold the semantic arm's ``few`` head: named first.
_NAMES = (
    ("began AS", "temporal-entry"),
    ("occurred_start IS NOT NULL ORDER BY", "dated-evidence"),
    ("few AS MATERIALIZED ( SELECT count(*) <=", "semantic-filtered"),
    ("kstats", "keyword"),
    ("EXPLAIN (FORMAT JSON)", "estimate"),
    ("FROM metadata_values", "range-values"),
    ("seeds", "graph"),
    ("unnest(%(frontier)s", "temporal-hop"),
    ("u.id <> ALL(%(seen)s", "fill"),
    ("SELECT * FROM ( SELECT u.id::text AS id, u.text", "semantic"),
    ("FROM recall_details(", "details"),
    ("u.text, u.context, u.fact", "hydrate"),
)


def _name(statement: Any) -> str:
    text = statement if isinstance(statement, str) else statement.as_string(None)
    text = " ".join(text.split())
    return next((name for fragment, name in _NAMES if fragment in text), text[:40])


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--calls", type=int, default=50)
    add_scope_args(p)
    p.add_argument("--explain", default=None, help="EXPLAIN (ANALYZE, BUFFERS) the first statement so named")
    p.add_argument("--data-dir", type=Path, default=os.environ.get("HINDSIGHT_BENCH_PGDATA") or None)
    args = p.parse_args(argv)

    import shared_core.storage.runner as runner
    from shared_core import EngineConfig, MemoryEngine

    options: dict[str, Any] = {"reranker": "none", **scope_options(args)}
    recorded: list[tuple[Any, Any, float]] = []
    original = psycopg.Cursor.execute

    def execute(self: psycopg.Cursor[Any], query: Any, params: Any = None, **kw: Any) -> Any:
        started = time.perf_counter()
        result = original(self, query, params, **kw)
        # In a pipeline execute returns before the result arrives: the framed statements are
        # timed around the whole pipeline below instead.
        if params is not None and self.connection._pipeline is None:
            recorded.append((query, params, (time.perf_counter() - started) * 1000))
        return result

    def framed(original_framed: Any) -> Any:
        def run(conn: Any, query: Any) -> Any:
            started = time.perf_counter()
            try:
                return original_framed(conn, query)
            finally:
                elapsed = (time.perf_counter() - started) * 1000
                recorded.append((query.statement, query.params, elapsed))

        return run

    psycopg.Cursor.execute = execute  # type: ignore[method-assign]
    # A statement with settings or a timeout runs framed (BEGIN, set_config, the statement and
    # COMMIT in one pipeline, storage/runner.py).
    runner._framed_sync = framed(runner._framed_sync)
    queries = make_queries()
    bank = f"bench-latency-v{CORPUS_VERSION}-{args.size}"
    load = os.getloadavg()[0]
    config = EngineConfig(extract_entities=False, extract_dates=False)
    with MemoryEngine(data_dir=args.data_dir, config=config) as engine:
        for i in range(args.calls + 3):
            if i == 3:
                recorded.clear()  # warm-up
            text = queries.texts[i % len(queries.texts)]
            engine.recall(text, bank=bank, query_timestamp=queries.query_time, **options)
        print(f"{options}, {args.calls} recalls, load avg {load:.2f}-{os.getloadavg()[0]:.2f}")
        by_name: dict[str, list[float]] = {}
        for statement, _, ms in recorded:
            by_name.setdefault(_name(statement), []).append(ms)
        for name, times in sorted(by_name.items(), key=lambda kv: -sum(kv[1])):
            print(
                f"  {name:20s} n {len(times):4d}  p50 {statistics.median(times):7.2f}  "
                f"max {max(times):7.2f}  per recall {sum(times) / args.calls:7.2f} ms"
            )
        if args.explain:
            statement, params, _ = next(r for r in recorded if _name(r[0]) == args.explain)
            from pgvector.psycopg import register_vector

            with psycopg.connect(engine.dsn, autocommit=True) as conn:
                register_vector(conn)
                if args.explain == "temporal-entry":  # the settings the arm runs it with
                    conn.execute("SET max_parallel_workers_per_gather = 0")
                    conn.execute("SET enable_seqscan = off")
                body = sql.SQL(statement) if isinstance(statement, str) else statement
                plan = conn.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + body, params).fetchall()
                print("\n".join(row[0] for row in plan if "Order By:" not in row[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
