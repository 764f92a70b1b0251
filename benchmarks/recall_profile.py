"""Where a recall's time goes: per stage (``trace.timings_ms``) and per SQL statement, with
``EXPLAIN (ANALYZE, BUFFERS)`` of each statement.

    HINDSIGHT_BENCH_PGDATA=... .venv/bin/python benchmarks/recall_profile.py --size 100000 \
        --filter '{"team": "er"}' --calls 30 --explain

Runs ``--calls`` recalls (``reranker="none"``) over a bank loaded by ``recall_latency.py``,
recording each statement the plan runner executes (its first words name it) and its time in
this process; prints p50/p95 per stage and per statement. With ``--explain``, the statements
of the last recall run again under ``EXPLAIN (ANALYZE, BUFFERS)`` on a connection with the
engine's session settings (the plan's own ``set_config`` settings first, in one transaction
that is rolled back).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _args import add_bank_scope_args, scope_options
from _corpus import CORPUS_VERSION, make_queries
from recall_latency import describe, summarise


def statement_name(text: str) -> str:
    """A short name for a statement: its CTE names or first words.

    >>> statement_name("WITH kstats AS MATERIALIZED (SELECT 1), kterms AS (SELECT 2) SELECT 3")
    'WITH kstats, kterms'
    >>> statement_name("SELECT id, score FROM ((SELECT u.id::text AS id FROM memory_units u")
    'SELECT id, score FROM ((SELECT u.id::text AS id FROM memory_units'
    """
    flat = " ".join(text.split())
    if flat.upper().startswith("WITH"):
        ctes = re.findall(r"(?:WITH|\),)\s+(?:RECURSIVE\s+)?(\w+)\s+AS\b", flat)
        return "WITH " + ", ".join(ctes[:4])
    return " ".join(flat.split()[:10])


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--calls", type=int, default=30)
    add_bank_scope_args(p)
    args = p.parse_args(argv)

    import psycopg
    from pgvector.psycopg import register_vector

    import shared_core.storage.runner as runner
    from shared_core import EngineConfig, MemoryEngine

    recorded: list[tuple[str, Any, float]] = []

    def recording(original: Any) -> Any:
        def run(conn: Any, query: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return original(conn, query)
            finally:
                statement = query.statement
                text = statement if isinstance(statement, str) else statement.as_string(conn)
                recorded.append((text, query, (time.perf_counter() - t0) * 1e3))

        return run

    # A statement with settings or a timeout runs framed (its own transaction, one pipeline);
    # the others through _exec_sync.
    runner._exec_sync = recording(runner._exec_sync)
    runner._framed_sync = recording(runner._framed_sync)
    options = scope_options(args)
    bank = f"bench-latency-v{CORPUS_VERSION}-{args.size}"
    queries = make_queries()
    with MemoryEngine(
        data_dir=args.data_dir, config=EngineConfig(extract_entities=False, extract_dates=False)
    ) as engine:
        rows = []
        per_statement: dict[str, list[float]] = {}
        for i in range(args.calls + 3):
            recorded.clear()
            result = engine.recall(
                queries.texts[i % len(queries.texts)],
                bank=bank,
                query_timestamp=queries.query_time,
                reranker="none",
                trace=True,
                **options,
            )
            if i >= 3:  # warm-up
                rows.append(dict(result.trace.timings_ms))
                for text, _, ms in recorded:
                    per_statement.setdefault(statement_name(text), []).append(ms)
        print(f"bank {bank}, options {options}, {args.calls} recalls, load {os.getloadavg()[0]:.2f}")
        for stage, st in summarise(rows).items():
            print(f"  stage {stage:32s} p50 {st['p50']:8.2f}  p95 {st['p95']:8.2f}  n {st['n']}")
        for name, values in sorted(per_statement.items(), key=lambda kv: -sum(kv[1])):
            st = describe(values)
            print(f"  sql p50 {st['p50']:8.2f} p95 {st['p95']:8.2f} n {st['n']:4d}  {name[:90]}")
        if args.explain:
            with psycopg.connect(engine.dsn) as conn:
                register_vector(conn)
                conn.execute(engine._pools._session)
                for text, query, _ in recorded:
                    with conn.transaction(force_rollback=True), conn.cursor() as cur:
                        for stmt in runner._setting_statements(query):
                            cur.execute(stmt)
                        cur.execute(
                            psycopg.sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + psycopg.sql.SQL(text),  # type: ignore[arg-type]
                            query.params,
                        )
                        plan = "\n".join(r[0] for r in cur.fetchall())
                    print(f"\n=== {statement_name(text)}\n{plan}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
