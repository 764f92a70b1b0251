"""Semantic-arm statement variants side by side on a bench bank: time, rows, overlap, buffers.

    HINDSIGHT_BENCH_PGDATA=/tmp/semantic-bench .venv/bin/python benchmarks/semantic_ab.py \
        --size 100000 --rounds 3 [--filter '{"team": "er"}'] [--tags travel --tags-match any_strict]

Each variant is a statement (and session settings) given the same parameters as the semantic
arm; the variants run interleaved (each query runs every variant, in a rotated order), so
machine load hits them alike. Reported per variant: p50 / p95 ms, rows returned, and how many of
the reference variant's (the first) top ``--top`` rows by score it returns; then one
``EXPLAIN (ANALYZE, BUFFERS)`` per variant (the slowest query of the reference) summed to
buffers hit / read. The variants are in :func:`variants`; add one there to try it.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _args import add_bank_scope_args
from _corpus import CORPUS_VERSION, make_queries
from psycopg import sql

_ONE_SCAN = """
SELECT id, score FROM (
    SELECT u.id::text AS id, 1 - ({vec} <=> {qvec}) AS score
    FROM memory_units u
    WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s) AND {dims} AND {tags}
    ORDER BY {vec} <=> {qvec}
    LIMIT {limit}) s
WHERE score >= %(semantic_min)s"""
_EXACT = """
SELECT id, score FROM (
    SELECT u.id::text AS id, 1 - ({vec} <=> {qvec}) AS score
    FROM (SELECT * FROM memory_units u
          WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s) AND {dims} AND {tags}
          OFFSET 0) u
    ORDER BY 2 DESC
    LIMIT {limit}) s
WHERE score >= %(semantic_min)s"""

# Binary-quantised prefilter (issue 13 item 3's idea for broad filters): the matching memories
# ranked by the Hamming distance of their sign bits (``binary_quantize``, computed per row: no
# index holds them), the best {limit} re-ranked exactly by cosine after a primary-key lookup each.
_BINARY = """
SELECT id, score FROM (
    SELECT u.id::text AS id, 1 - ({vec} <=> {qvec}) AS score
    FROM (SELECT u.id FROM memory_units u
          WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s) AND {dims} AND {tags}
          ORDER BY binary_quantize({vec}) <~> binary_quantize({qvec})
          LIMIT {limit}) b
    JOIN memory_units u ON u.bank_id = %(bank)s AND u.id = b.id
    ORDER BY 2 DESC
    LIMIT %(n)s) s
WHERE score >= %(semantic_min)s"""


# The statements the variants are compared with: the library's own by default; an older
# semantic.py (e.g. `git show 9e9d443:shared_core/recall/arms/semantic.py > old.py`, the
# per-type scans before migration 0013, whose functions took the fact types first) when
# SEMANTIC_AB_REFERENCE names one. SEMANTIC_AB_WORKTREE=1 adds the library's statements beside it.
_REFERENCE = os.environ.get("SEMANTIC_AB_REFERENCE")
_WORKTREE = os.environ.get("SEMANTIC_AB_WORKTREE") == "1" and _REFERENCE is not None
# The exact-ranking caps tried for the worktree's filtered statement.
_CAPS = [int(c) for c in os.environ.get("SEMANTIC_AB_CAPS", "2000").split(",")]
# The visit caps tried for the walk under a filter (hnsw.max_scan_tuples).
_TUPLES = [int(t) for t in os.environ.get("SEMANTIC_AB_TUPLES", "").split(",") if t]
_ONLY = os.environ.get("SEMANTIC_AB_ONLY")  # a regex: keep only the variants it matches


def variants(where: sql.Composable, filtered: bool) -> dict[str, tuple[sql.Composable, dict[str, str]]]:
    """Name -> (statement, transaction-local settings); the first is the reference."""
    import importlib.util

    from shared_core.recall.arms import semantic
    from shared_core.storage.dimensions import Dimension
    from shared_core.types import FACT_TYPES

    dims = Dimension(384)
    if _REFERENCE is None:
        reference_filtered = semantic.filtered_semantic_statement(where, dims)
        reference_plain = semantic.semantic_statement(where, dims)
    else:
        spec = importlib.util.spec_from_file_location("_reference_semantic", _REFERENCE)
        assert spec is not None and spec.loader is not None
        reference = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(reference)
        reference_filtered = reference.filtered_semantic_statement(FACT_TYPES, where, dims)
        reference_plain = reference.semantic_statement(FACT_TYPES, where, dims)

    parts = {"vec": dims.column, "qvec": dims.query(), "dims": dims.predicate, "tags": where}

    def one(limit: str, template: str = _ONE_SCAN) -> sql.Composable:
        return sql.SQL(template).format(limit=sql.SQL(limit), **parts)

    out: dict[str, tuple[sql.Composable, dict[str, str]]] = {}
    if filtered:
        out["filtered (reference)"] = (reference_filtered, {})
        out["exact, no gate"] = (one("%(n)s", _EXACT), {"enable_seqscan": "off"})
        out["binary prefilter 3n, exact re-rank"] = (one("3 * %(n)s", _BINARY), {"enable_seqscan": "off"})
        out["binary prefilter 6n, exact re-rank"] = (one("6 * %(n)s", _BINARY), {"enable_seqscan": "off"})
    else:
        out["reference (library, or SEMANTIC_AB_REFERENCE)"] = (reference_plain, {})
    out["one scan, n"] = (one("%(n)s"), {})
    out["one scan, 3n"] = (one("3 * %(n)s"), {})
    out["one scan, n, ef_search 40"] = (one("%(n)s"), {"hnsw.ef_search": "40"})
    out["one scan, n, strict_order"] = (one("%(n)s"), {"hnsw.iterative_scan": "strict_order"})
    # The walk's visits capped (pgvector's max_scan_tuples, the library's default 20,000): a
    # broad filter's walk returns the matches among the first T tuples visited, up to n.
    for tuples in _TUPLES:
        out[f"one scan, n, max_scan_tuples {tuples}"] = (one("%(n)s"), {"hnsw.max_scan_tuples": str(tuples)})
    if _WORKTREE:
        if filtered:
            for cap in _CAPS:
                out[f"library (worktree), cap {cap}"] = (
                    semantic.filtered_semantic_statement(where, dims, exact_max=cap),
                    {},
                )
        else:
            out["library (worktree)"] = (semantic.semantic_statement(where, dims), {})
    return {k: v for k, v in out.items() if not _ONLY or k == next(iter(out)) or re.search(_ONLY, k)}


def _pcts(values: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _buffers(plan: str) -> tuple[int, int]:
    top = plan.splitlines()
    hit = read = 0
    for line in top[:3]:  # the top node's Buffers line sums its children
        if "Buffers:" in line:
            m = re.search(r"hit=(\d+)", line)
            hit = int(m.group(1)) if m else 0
            m = re.search(r"read=(\d+)", line)
            read = int(m.group(1)) if m else 0
    return hit, read


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--top", type=int, default=100)
    add_bank_scope_args(p)
    args = p.parse_args(argv)

    import psycopg
    from pgvector.psycopg import register_vector

    from shared_core import EngineConfig, MemoryEngine
    from shared_core.recall.arms import ArmQuery
    from shared_core.recall.filters import compile_filter
    from shared_core.recall.settings import RecallSettings

    bank = f"bench-latency-v{CORPUS_VERSION}-{args.size}"
    queries = make_queries(args.queries)
    with MemoryEngine(
        data_dir=args.data_dir, config=EngineConfig(extract_entities=False, extract_dates=False)
    ) as engine:
        base = ArmQuery(
            bank=bank,
            vector=queries.vectors[0],
            words=(),
            bigrams=(),
            types=("world", "experience", "observation"),
            tags=tuple(args.tags) if args.tags else None,
            tags_match=args.tags_match,
            n=args.n,
            window=None,
            settings=RecallSettings(),
            filter=compile_filter(args.filter),
        )
        filtered = args.filter is not None or bool(args.tags)
        table = variants(base.where_sql, filtered)
        times: dict[str, list[float]] = {k: [] for k in table}
        rows_n: dict[str, list[int]] = {k: [] for k in table}
        overlap: dict[str, list[float]] = {k: [] for k in table}
        slowest: tuple[float, int] = (-1.0, 0)
        names = list(table)
        with psycopg.connect(engine.dsn, autocommit=True) as conn:
            register_vector(conn)
            conn.execute(engine._pools._session)
            for r in range(args.rounds + 1):
                for qi, vector in enumerate(queries.vectors):
                    params = {
                        **base.params(semantic_min=RecallSettings().semantic_min_similarity),
                        "qvec": vector,
                    }
                    got: dict[str, list[tuple[str, float]]] = {}
                    order = names[qi % len(names) :] + names[: qi % len(names)]
                    for name in order:
                        statement, settings = table[name]
                        with conn.transaction():
                            for key, value in settings.items():
                                conn.execute("SELECT set_config(%s, %s, true)", (key, value))
                            t0 = time.perf_counter()
                            rows = conn.execute(statement, params).fetchall()
                            ms = (time.perf_counter() - t0) * 1e3
                        got[name] = [(str(a), float(b)) for a, b in rows]
                        if r > 0:  # round 0 warms the caches
                            times[name].append(ms)
                    if r > 0:
                        ref = sorted(got[names[0]], key=lambda x: -x[1])[: args.top]
                        ref_ids = {i for i, _ in ref}
                        for name in names:
                            rows_n[name].append(len(got[name]))
                            overlap[name].append(
                                len(ref_ids & {i for i, _ in got[name]}) / max(1, len(ref_ids))
                            )
                        if times[names[0]][-1] > slowest[0]:
                            slowest = (times[names[0]][-1], qi)
            print(
                f"bank {bank}, n {args.n}, filter {args.filter}, tags {args.tags} {args.tags_match}, "
                f"{args.rounds} rounds x {len(queries.vectors)} queries, load {os.getloadavg()}"
            )
            for name in names:
                p50, p95 = _pcts(times[name])
                print(
                    f"  {name:44s} p50 {p50:7.2f} p95 {p95:7.2f} ms"
                    f"  rows {statistics.mean(rows_n[name]):6.1f}"
                    f"  top{args.top} of ref {100 * statistics.mean(overlap[name]):5.1f}%"
                )
            if args.explain:
                vector = queries.vectors[slowest[1]]
                params = {
                    **base.params(semantic_min=RecallSettings().semantic_min_similarity),
                    "qvec": vector,
                }
                for name in names:
                    statement, settings = table[name]
                    with conn.transaction():
                        for key, value in settings.items():
                            conn.execute("SELECT set_config(%s, %s, true)", (key, value))
                        plan = "\n".join(
                            str(row[0])
                            for row in conn.execute(
                                sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + statement, params
                            )
                        )
                    print(f"\n=== {name}: buffers hit/read {_buffers(plan)}\n{plan}")
        print(f"load at the end {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
