"""What the fact-type test costs each filtered arm statement when every type is asked: each
statement with the test (main's), without it (``type_clause``), and for the graph arm also read
by primary key (this tree's), EXPLAIN (ANALYZE, BUFFERS) on a bench bank.

    HINDSIGHT_BENCH_PGDATA=/tmp/x-100k .venv/bin/python benchmarks/type_test_whatif.py \
        --filter '{"team": "er"}' [--tags travel --tags-match any_strict] [--calls 50]

The bench queries are recalled under the scope (this tree's code, every fact type) to capture the
parameters of the keyword, graph and temporal statements (the temporal entry's exact branch
``fmatching``, the dated evidence's exact read, the spread's hops). Each captured statement is
then rebuilt in every variant and run on one connection with the engine's session settings and
the arm's own (the entry's ENTRY_SETTINGS), custom plans: first plainly, to compare
the variants' rows, then under EXPLAIN (ANALYZE, BUFFERS), ``--rounds`` times in turn. The
graph arm runs a generic plan: its variants are also timed prepared under
``force_generic_plan`` (server CPU, ``/proc/<pid>/schedstat``), and
``EXPLAIN (ANALYZE, BUFFERS) EXECUTE`` of the prepared statement gives that plan's buffers and
whether it reads the filter's index (every matching memory). Printed per statement
kind and variant: statements, p50 and total execution time, p50 and total buffers (shared hit +
read), and the rows compared with the first variant.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from collections.abc import Callable, Sequence
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
from psycopg import sql


def kind_of(text: str) -> str | None:
    """The kind of a captured statement, by fragments of its text as recall composed it (None:
    not one this script varies).

    >>> kind_of("WITH seeds AS MATERIALIZED (...)"), kind_of("SELECT 1")
    ('graph', None)
    """
    if "seeds AS MATERIALIZED" in text:
        return "graph"
    if "began AS MATERIALIZED" in text:
        return "entry"
    if "%(frontier)b" in text:
        return "hop"
    if "occurred_start IS NOT NULL" in text:
        return "dated"
    if "kq AS MATERIALIZED" in text:
        return "keyword"
    return None


def buffers(plan: dict[str, Any]) -> int:
    """Shared buffers (hit + read) of an EXPLAIN (FORMAT JSON) plan's top node (its children's
    included).

    >>> buffers({"Shared Hit Blocks": 3, "Shared Read Blocks": 1})
    4
    """
    return int(plan.get("Shared Hit Blocks", 0)) + int(plan.get("Shared Read Blocks", 0))


def _scans_filter_index(plan: dict[str, Any]) -> bool:
    """Whether a plan reads the metadata or tags GIN index (every memory the filter matches)."""
    if plan.get("Index Name") in ("memory_units_metadata_gin", "memory_units_tags_gin"):
        return True
    return any(_scans_filter_index(child) for child in plan.get("Plans", ()))


def memory_reads(plan: dict[str, Any]) -> list[str]:
    """How a plan reads ``memory_units``: each scan of it, with its index and estimated rows.

    >>> memory_reads({"Node Type": "Seq Scan", "Relation Name": "memory_units", "Plan Rows": 9})
    ['Seq Scan (9 rows est.)']
    """
    found = []
    if plan.get("Relation Name") == "memory_units" or str(plan.get("Index Name", "")).startswith(
        "memory_units"
    ):
        index = f" on {plan['Index Name']}" if "Index Name" in plan else ""
        found.append(f"{plan['Node Type']}{index} ({plan.get('Plan Rows')} rows est.)")
    for child in plan.get("Plans", ()):
        found += memory_reads(child)
    return found


def generic_explain(conn: psycopg.Connection[Any], statement: Any, params: dict[str, Any], fmt: str) -> Any:
    """``statement``'s generic plan as it runs, EXPLAIN (ANALYZE, BUFFERS) in ``fmt`` (TEXT or
    JSON). EXPLAIN cannot ANALYZE a generic plan, and EXPLAIN (GENERIC_PLAN) with the values
    bound plans another: so the statement is prepared at the protocol level as ``whatif``
    (every parameter sent as text) and run by ``EXPLAIN ... EXECUTE`` with the values as
    literals, under the connection's ``force_generic_plan``."""
    from psycopg._queries import PostgresQuery
    from psycopg.adapt import Transformer

    text = re.sub(r"%\((\w+)\)[sb]", r"%(\1)t", statement.as_string(conn))  # every parameter as text
    pq = PostgresQuery(Transformer(conn))
    pq.convert(text, params)
    conn.pgconn.prepare(b"whatif", pq.query, pq.types)
    literal = sql.SQL(", ").join(
        sql.Literal(None if v is None else bytes(v).decode()) for v in (pq.params or ())
    )
    explain = sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT {}) EXECUTE whatif({})").format(
        sql.SQL(fmt), literal
    )
    try:
        rows = conn.execute(explain).fetchall()
    finally:
        conn.execute("DEALLOCATE whatif")
    return rows[0][0] if fmt == "JSON" else "\n".join(r[0] for r in rows)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--calls", type=int, default=50, help="bench queries recalled to capture statements")
    p.add_argument("--rounds", type=int, default=3, help="EXPLAIN ANALYZE runs of each variant (p50 kept)")
    add_scope_args(p)
    p.add_argument("--data-dir", type=Path, default=os.environ.get("HINDSIGHT_BENCH_PGDATA") or None)
    p.add_argument("--out", type=Path, help="write the summary (JSON) here")
    p.add_argument(
        "--show-generic",
        action="store_true",
        help="print the first graph statement's generic plan as run, each variant (auto_explain)",
    )
    args = p.parse_args(argv)

    from pgvector.psycopg import register_vector
    from recall_cpu import schedstat

    from shared_core import EngineConfig, MemoryEngine
    from shared_core.recall.arms import TYPES_TEST
    from shared_core.recall.arms import graph as G
    from shared_core.recall.arms import keyword as K
    from shared_core.recall.arms import temporal as T

    options: dict[str, Any] = {"reranker": "none", **scope_options(args)}
    queries = make_queries()
    bank = f"bench-latency-v{CORPUS_VERSION}-{args.size}"
    config = EngineConfig(extract_entities=False, extract_dates=False)
    untyped = sql.SQL("TRUE")
    with MemoryEngine(data_dir=args.data_dir, config=config) as engine:
        for i in range(5):  # warm-up: models, pools, caches
            engine.recall(queries.texts[i], bank=bank, query_timestamp=queries.query_time, **options)
        with capturing(kind_of) as captured:
            for i in range(min(args.calls, len(queries.texts))):
                engine.recall(queries.texts[i], bank=bank, query_timestamp=queries.query_time, **options)
        q = scope_arm_query(engine, bank, args)
        if not q.filtered_all_types:
            print("no filter: the statements keep their type test; nothing to compare")
            return 1
        where, dim = q.where_sql, q.dimension
        ranking = engine.config.recall.keyword

        def keyword(text: str, types: sql.Composable) -> sql.Composed:
            return K.keyword_statement(where, ranking, grouped="GROUP BY kl.unit" in text, types=types)

        variants: dict[str, list[tuple[str, Callable[[str], sql.Composed]]]] = {
            "keyword": [
                ("typed", lambda t: keyword(t, TYPES_TEST)),
                ("untyped", lambda t: keyword(t, untyped)),
            ],
            "graph": [
                ("typed, joined (main)", lambda t: G.graph_statement(where, with_entities=True)),
                ("untyped, joined", lambda t: G.graph_statement(where, with_entities=True, types=untyped)),
                (
                    "untyped, by primary key",
                    lambda t: G.graph_statement(where, with_entities=True, filtered=True, types=untyped),
                ),
            ],
            "entry": [
                ("typed", lambda t: T.filtered_temporal_entry_statement(where, dim)),
                ("untyped", lambda t: T.filtered_temporal_entry_statement(where, dim, types=untyped)),
            ],
            "dated": [
                ("typed", lambda t: T.filtered_dated_evidence_statement(where, dim)),
                ("untyped", lambda t: T.filtered_dated_evidence_statement(where, dim, types=untyped)),
            ],
            "hop": [
                ("typed", lambda t: T.temporal_hop_statement(where, dim, filtered=True)),
                ("untyped", lambda t: T.temporal_hop_statement(where, dim, filtered=True, types=untyped)),
            ],
        }
        settings = {"entry": dict(T.ENTRY_SETTINGS)}
        session = engine._pools._session
        results: dict[str, dict[str, dict[str, list[float]]]] = {}
        differ: dict[tuple[str, str], int] = {}
        generic_gin: dict[tuple[str, str], int] = {}
        shown: dict[str, list[str]] = {}
        with psycopg.connect(engine.dsn, autocommit=True) as conn:
            register_vector(conn)
            conn.execute(session)
            (backend,) = conn.execute("SELECT pg_backend_pid()").fetchone() or (0,)
            stat = f"/proc/{backend}/schedstat"
            for kind, text, params in captured:
                built = [(name, make(text)) for name, make in variants[kind]]
                with conn.transaction():
                    for name, value in settings.get(kind, {}).items():
                        conn.execute("SELECT set_config(%s, %s, true)", (name, value))
                    rows = [conn.execute(statement, params).fetchall() for _, statement in built]
                    for (name, _), got in zip(built, rows, strict=True):
                        differ[(kind, name)] = differ.get((kind, name), 0) + (got != rows[0])
                    for _ in range(args.rounds):
                        for name, statement in built:
                            ((plan,),) = conn.execute(
                                sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ") + statement, params
                            ).fetchall()
                            top = plan[0]
                            entry = results.setdefault(kind, {}).setdefault(name, {})
                            entry.setdefault("ms", []).append(float(top["Execution Time"]))
                            entry.setdefault("buffers", []).append(buffers(top["Plan"]))
                if kind != "graph":
                    continue
                # The arm's generic plan: prepared, its server CPU, and whether it reads the
                # filter's index (EXPLAIN (GENERIC_PLAN) plans without the values).
                conn.execute("SET plan_cache_mode = force_generic_plan")
                try:
                    for name, statement in built:
                        top = generic_explain(conn, statement, params, "JSON")[0]
                        hit = _scans_filter_index(top["Plan"])
                        entry = results[kind][name]
                        entry.setdefault("generic_buffers", []).append(buffers(top["Plan"]))
                        if name not in shown:  # the first statement's generic reads, per variant
                            shown[name] = memory_reads(top["Plan"])
                            if args.show_generic:
                                print(f"--- graph, {name}: generic plan as run")
                                print(generic_explain(conn, statement, params, "TEXT"))
                        generic_gin[(kind, name)] = generic_gin.get((kind, name), 0) + hit
                        for r in range(args.rounds + 1):
                            cpu0 = schedstat(stat)[0]
                            conn.execute(statement, params, prepare=True).fetchall()
                            if r:  # the first run prepares
                                entry = results[kind][name]
                                entry.setdefault("generic_cpu_ms", []).append(schedstat(stat)[0] - cpu0)
                finally:
                    conn.execute("SET plan_cache_mode = force_custom_plan")
    load = os.getloadavg()[0]
    print(f"{options}: {len(captured)} statements captured from {args.calls} recalls, load {load:.2f}")
    summary: dict[str, Any] = {"scope": options, "load": load, "kinds": {}}
    for kind, by_name in results.items():
        n = sum(1 for k, _, _ in captured if k == kind)
        print(f"  {kind} ({n} statements, {args.rounds} runs each; p50 / sum over the statements' p50s)")
        for name, m in by_name.items():
            per = args.rounds
            ms = [statistics.median(m["ms"][i : i + per]) for i in range(0, len(m["ms"]), per)]
            buf = [statistics.median(m["buffers"][i : i + per]) for i in range(0, len(m["buffers"]), per)]
            line = (
                f"    {name:26s} time p50 {statistics.median(ms):7.2f} ms, sum {sum(ms):8.1f} ms | "
                f"buffers p50 {statistics.median(buf):8.0f}, sum {sum(buf):9.0f} | "
                f"rows differ from the first variant: {differ.get((kind, name), 0)}"
            )
            row: dict[str, Any] = {
                "statements": n,
                "ms_p50": statistics.median(ms),
                "ms_sum": sum(ms),
                "buffers_p50": statistics.median(buf),
                "buffers_sum": sum(buf),
                "rows_differ": differ.get((kind, name), 0),
            }
            if "generic_cpu_ms" in m:
                cpu = m["generic_cpu_ms"]
                line += (
                    f"\n    {'':26s} generic plan: server CPU p50 {statistics.median(cpu):6.2f} ms, "
                    f"buffers p50 {statistics.median(m['generic_buffers']):6.0f}, "
                    f"reads the filter's index in {generic_gin.get((kind, name), 0)} of {n}"
                )
                row["generic_cpu_ms_p50"] = statistics.median(cpu)
                row["generic_buffers_p50"] = statistics.median(m["generic_buffers"])
                row["generic_reads_filter_index"] = generic_gin.get((kind, name), 0)
                row["generic_memory_reads"] = shown.get(name, [])
                reads = "; ".join(shown.get(name, []))
                line += f"\n    {'':26s} its memory_units reads (first statement): {reads}"
            print(line)
            summary["kinds"].setdefault(kind, {})[name] = row
    if args.out:
        args.out.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
