"""Filtered recall against unfiltered recall and against plain pgvector filtered search, on one
bench bank, calls interleaved.

    HINDSIGHT_BENCH_PGDATA=/tmp/filt-bench .venv/bin/python benchmarks/filtered_latency.py \
        --size 100000 --rounds 2 [--out F.json] [--only team] [--no-plain] [--keep-plain] \
        [--plain-ef-search 100] [--k 10]

For every bench query, the unfiltered recall and each case of ``recall_latency.FILTER_CASES``
run one after another, each followed or preceded by the plain pgvector baseline of the same
case (the order of all of them rotated per query), in one process on one server, so machine
load hits them alike and every ratio is read within one run. The plain baseline
(``_plain.plain_filtered_table``) holds the bank's vectors, tags and metadata in one table with
HNSW and GIN indexes; a filtered case runs pgvector's documented filtered search
(``hnsw.iterative_scan = relaxed_order``, ``_plain.plain_filtered_query``) with the filter as a
plain predicate, the unfiltered case the plain top-10; each with the query embedding of the
same model, as ours embeds its query. Reported per case: ours' headline p50 / p95 (total
without the query embedding and rerank, as ``recall_latency.py``) and its ratio to ours
unfiltered; ours' total with the embedding; plain's SQL and SQL + embedding p50; ours total ÷
plain filtered and ÷ plain unfiltered (the recall latency target, issue 15 item 4: total with
the embedding <= 3x the plain top-10 with its embedding, headline p50 <= 30 ms); the p50 of the
stages where a filtered recall spends its time; memories returned; what plain's iterative scan
returns against the exact top-10 of the same predicate (mean and min overlap over the bench
queries); and the load average over the run.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import CORPUS_VERSION, make_corpus, make_queries
from _plain import describe, plain_exact_query, plain_filter, plain_filtered_query, plain_filtered_table
from recall_latency import FILTER_CASES, HEADLINE, filter_matches, summarise

_STAGES = ("filter_estimate", "arms", "seeded_arms", "temporal_spread", "hydrate", "details", "fill")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=2, help="passes over the bench queries")
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5, help="queries run unmeasured first (every case)")
    p.add_argument("--only", default=None, help="a regex: keep only the filter cases it matches")
    p.add_argument("--out", type=Path, default=None, help="write the summary (JSON) here")
    p.add_argument("--no-plain", action="store_true", help="leave the plain baseline out")
    p.add_argument(
        "--keep-plain",
        action="store_true",
        help="keep the plain table in the bank's database after the run, and reuse one kept before",
    )
    p.add_argument(
        "--plain-ef-search",
        type=int,
        default=None,
        help="plain's hnsw.ef_search (default pgvector's, 40; ours runs 100)",
    )
    p.add_argument(
        "--declare",
        default=None,
        help="a JSON list of recall scopes (filter / tags / tags_match) to declare an HNSW index for "
        "before timing (engine.declare_filter_index), and the same partial index on plain's table",
    )
    p.add_argument("--k", type=int, default=None, help="recall k (default: the token budget decides)")
    p.add_argument(
        "--walk-min-estimate",
        type=int,
        default=None,
        help="RecallSettings.filter_walk_min_estimate (opt-in walk of the HNSW index under a broad filter)",
    )
    p.add_argument(
        "--data-dir",
        type=Path,
        default=os.environ.get("HINDSIGHT_BENCH_PGDATA") or None,
        help="embedded server data dir (default $HINDSIGHT_BENCH_PGDATA)",
    )
    args = p.parse_args(argv)

    from shared_core import EngineConfig, MemoryEngine

    bank = f"bench-latency-v{CORPUS_VERSION}-{args.size}"
    queries = make_queries(args.queries)
    cases: list[tuple[str, dict[str, Any]]] = [("none", {})]
    cases += [(name, opts) for name, opts, _ in FILTER_CASES if not args.only or re.search(args.only, name)]
    corpus = make_corpus(args.size)
    matches = {"none": args.size, **filter_matches(corpus)}
    systems = ("ours",) if args.no_plain else ("ours", "plain")
    tasks = [(system, name, options) for name, options in cases for system in systems]
    timings: dict[str, list[dict[str, float]]] = {name: [] for name, _ in cases}
    returned: dict[str, list[int]] = {name: [] for name, _ in cases}
    plain_ms: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name, _ in cases}
    plain_ids: dict[str, dict[int, tuple[list[int], Any]]] = {name: {} for name, _ in cases}
    options_k = {} if args.k is None else {"k": args.k}
    config = EngineConfig(extract_entities=False, extract_dates=False)
    if args.walk_min_estimate is not None:
        recall = dataclasses.replace(config.recall, filter_walk_min_estimate=args.walk_min_estimate)
        config = dataclasses.replace(config, recall=recall)
    with contextlib.ExitStack() as stack:
        engine = stack.enter_context(MemoryEngine(data_dir=args.data_dir, config=config))
        plain: dict[str, Any] = {}
        conn: Any = None
        if not args.no_plain:
            import psycopg
            from pgvector.psycopg import register_vector
            from psycopg import sql

            plain = stack.enter_context(
                plain_filtered_table(
                    engine.dsn,
                    corpus.vectors,
                    [m.tags for m in corpus.memories],
                    [m.metadata for m in corpus.memories],
                    keep=args.keep_plain,
                )
            )
            print(f"plain table: {plain}", flush=True)
            conn = stack.enter_context(psycopg.connect(engine.dsn, autocommit=True))
            register_vector(conn)
            # pgvector's filtered-search setting (its README, "Iterative Index Scans"); ef_search
            # and max_scan_tuples keep pgvector's defaults, as a plain user's would.
            conn.execute("SET hnsw.iterative_scan = relaxed_order")
            if args.plain_ef_search is not None:
                conn.execute(sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(args.plain_ef_search)))
        declared = _declare(engine, bank, conn, plain, json.loads(args.declare) if args.declare else [])
        stack.callback(_undeclare, engine, conn, declared)
        # The generated corpus held during the measurement made every full collection of the
        # cyclic GC a long pause inside a call (recall_latency.py measured ~75 ms).
        del corpus
        gc.collect()
        statements = {
            name: plain_filtered_query(plain["table"], plain_filter(options)) if plain else None
            for name, options in cases
        }

        def ours(i: int, options: dict[str, Any]) -> tuple[dict[str, float], int]:
            result = engine.recall(
                queries.texts[i % len(queries.texts)],
                bank=bank,
                query_timestamp=queries.query_time,
                trace=True,
                **({"reranker": "none"} | options_k | options),
            )
            assert result.trace is not None
            return dict(result.trace.timings_ms), len(result.memories)

        def plain_call(i: int, name: str) -> tuple[float, float, list[int], Any]:
            t0 = time.perf_counter()
            vector = np.asarray(
                engine.embedder.embed_query(queries.texts[i % len(queries.texts)]), np.float32
            )
            t1 = time.perf_counter()
            ids = [r[0] for r in conn.execute(statements[name], {"q": vector}).fetchall()]
            t2 = time.perf_counter()
            return (t2 - t1) * 1e3, (t2 - t0) * 1e3, ids, vector

        loads = [os.getloadavg()[0]]
        total = args.warmup + args.rounds * len(queries.texts)
        for i in range(total):
            shift = i % len(tasks)
            for system, name, options in tasks[shift:] + tasks[:shift]:
                if system == "ours":
                    t, n = ours(i, options)
                    if i >= args.warmup:
                        timings[name].append(t)
                        returned[name].append(n)
                else:
                    sql_ms, total_ms, ids, vector = plain_call(i, name)
                    if i >= args.warmup:
                        plain_ms[name][0].append(sql_ms)
                        plain_ms[name][1].append(total_ms)
                        plain_ids[name].setdefault(i % len(queries.texts), (ids, vector))
            if i % 10 == 0:
                loads.append(os.getloadavg()[0])
        loads.append(os.getloadavg()[0])
        overlap = {name: _exact_overlap(conn, plain, options, plain_ids[name]) for name, options in cases}

    base = summarise(timings["none"])[HEADLINE]["p50"]
    plain_base = describe(plain_ms["none"][1])["p50"] if plain_ms["none"][1] else None
    summary: dict[str, Any] = {
        "size": args.size,
        "k": args.k,
        "calls_per_case": len(timings["none"]),
        "load": [round(min(loads), 2), round(max(loads), 2)],
        "plain": {
            "table": plain,
            "iterative_scan": "relaxed_order",
            "ef_search": args.plain_ef_search or "default (40)",
        },
        "declared": declared,
        "cases": {},
    }
    print(
        f"size {args.size}, {len(timings['none'])} calls per case, load avg {min(loads):.2f}-{max(loads):.2f}"
    )
    header = (
        f"{'case':44s} {'match':>6s} {'p50':>6s} {'p95':>6s} {'÷ours':>6s} {'total':>6s} "
        f"{'plSQL':>6s} {'plain':>6s} {'÷plF':>5s} {'÷plU':>5s} {'ovl':>5s} {'min':>4s} "
    ) + " ".join(f"{s[:9]:>9s}" for s in _STAGES)
    print(header)
    for name, _ in cases:
        s = summarise(timings[name])
        row: dict[str, Any] = {
            "matching": matches.get(name),
            "p50": s[HEADLINE]["p50"],
            "p95": s[HEADLINE]["p95"],
            "ratio": round(s[HEADLINE]["p50"] / base, 2),
            "total_with_embedding_p50": s["total"]["p50"],
            "embedding_p50": s["query_embedding"]["p50"] if "query_embedding" in s else None,
            "stages_p50": {st: s[st]["p50"] for st in _STAGES if st in s},
            "stages_n": {st: s[st]["n"] for st in _STAGES if st in s},
            "memories_returned_mean": round(statistics.fmean(returned[name]), 1),
        }
        if plain_base is not None:
            plain_total = describe(plain_ms[name][1])["p50"]
            row |= {
                "plain_sql_p50": describe(plain_ms[name][0])["p50"],
                "plain_with_embedding_p50": plain_total,
                "ours_total / plain_filtered": round(row["total_with_embedding_p50"] / plain_total, 2),
                "ours_total / plain_unfiltered": round(row["total_with_embedding_p50"] / plain_base, 2),
                "plain_overlap_with_exact_top10": overlap[name],
            }
        summary["cases"][name] = row
        cells = " ".join(
            f"{row['stages_p50'][st]:9.2f}" if st in row["stages_p50"] else f"{'-':>9s}" for st in _STAGES
        )
        plain_cells = (
            f"{row['plain_sql_p50']:6.1f} {row['plain_with_embedding_p50']:6.1f} "
            f"{row['ours_total / plain_filtered']:5.2f} {row['ours_total / plain_unfiltered']:5.2f} "
            f"{overlap[name]['mean']:5.3f} {overlap[name]['min']:4.1f}"
            if plain_base is not None
            else f"{'-':>6s} {'-':>6s} {'-':>5s} {'-':>5s} {'-':>5s} {'-':>4s}"
        )
        print(
            f"{name[:44]:44s} {row['matching']:6d} {row['p50']:6.1f} {row['p95']:6.1f} "
            f"{row['ratio']:6.2f} {row['total_with_embedding_p50']:6.1f} {plain_cells} {cells}"
        )
    if args.out is not None:
        args.out.write_text(json.dumps(summary, indent=2))
    return 0


def _declare(
    engine: Any, bank: str, conn: Any, plain: dict[str, Any], scopes: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Declare an HNSW index for each recall scope in ``bank`` (ours) and the same partial
    index on plain's table (pgvector's advice for filtering on few values, which a plain user
    can follow too); the names and build seconds."""
    from psycopg import sql

    out = []
    for scope in scopes:
        started = time.perf_counter()
        name = engine.declare_filter_index(bank=bank, **scope)
        row = {"scope": scope, "index": name, "build_s": round(time.perf_counter() - started, 1)}
        if plain:
            started = time.perf_counter()
            row["plain_index"] = f"{plain['table']}_{name[-16:]}"
            conn.execute(
                sql.SQL(
                    "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_cosine_ops) "
                    "WITH (m = 16, ef_construction = 64) WHERE {}"
                ).format(
                    sql.Identifier(row["plain_index"]), sql.Identifier(plain["table"]), plain_filter(scope)
                )
            )
            conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(plain["table"])))
            row["plain_build_s"] = round(time.perf_counter() - started, 1)
        print(f"declared {row}", flush=True)
        out.append(row)
    return out


def _undeclare(engine: Any, conn: Any, declared: list[dict[str, Any]]) -> None:
    """Drop the indexes :func:`_declare` made: a later run without ``--declare`` (and a kept
    plain table) measures the default layout again."""
    import psycopg
    from psycopg import sql

    names = [row["index"] for row in declared] + [
        row["plain_index"] for row in declared if "plain_index" in row
    ]
    if names:
        with psycopg.connect(engine.dsn, autocommit=True) as drop:
            for name in names:
                drop.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))


def _exact_overlap(
    conn: Any, plain: dict[str, Any], options: dict[str, Any], got: dict[int, tuple[list[int], Any]]
) -> dict[str, float]:
    """Mean and min share of the exact top-10 (the same predicate, index scans off) that plain's
    iterative scan returned, over the bench queries (one call each)."""
    if not plain or not got:
        return {"mean": float("nan"), "min": float("nan"), "queries": 0}
    statement = plain_exact_query(plain["table"], plain_filter(options))
    shares = []
    with conn.transaction():
        conn.execute("SET LOCAL enable_indexscan = off")
        for _, (ids, vector) in sorted(got.items(), key=lambda kv: kv[0]):
            exact = [r[0] for r in conn.execute(statement, {"q": vector}).fetchall()]
            shares.append(len(set(ids) & set(exact)) / max(1, len(exact)))
    return {"mean": round(statistics.fmean(shares), 3), "min": round(min(shares), 3), "queries": len(shares)}


if __name__ == "__main__":
    raise SystemExit(main())
