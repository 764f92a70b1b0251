"""One memory into a loaded bank (issue 15.2), beside a plain one-row INSERT, with a profile.

    XDG_DATA_HOME=/tmp/single-xdg .venv/bin/python benchmarks/single_retain.py --size 10000
    XDG_DATA_HOME=/tmp/single-xdg .venv/bin/python benchmarks/single_retain.py --size 10000 --profile

The bank is the latency benchmark's corpus (``_corpus.py``, real vectors up to 10k), loaded
once into an embedded server under ``$XDG_DATA_HOME`` and reused. Each measured retain is one
chat turn with its vector given and extraction on (``measure_single_retain`` of
``recall_latency.py``: the same turns, dates and vectors), deleted afterwards. The plain
baseline is one ``INSERT`` of one vector into a table of the same vectors with one HNSW index,
in the same run on the same server. Rounds alternate plain and ours so load drifts hit both;
``--compare-batch`` adds, in each round, the same turn through the batch plan (the path every
retain took before the small path).

``--profile`` times every database operation of the retain (statement text head, ms) and the
CPU stages (prepare: validation, context, extraction), and prints the median of each.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
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
from _corpus import CORPUS_VERSION, make_corpus
from _plain import plain_load, plain_table
from _report import write_json
from _timing import timed_calls

TURNS = (
    'Alice said, "I finally went hiking near Denver with Bob last Saturday."',
    'Bob said, "Work at Dunder Mifflin has been hectic since March."',
    'Zara said, "Thanks! I\'ll try the pottery class next week."',
    'Liam said, "ok, sounds good"',
)


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _describe(ms: list[float]) -> dict[str, float]:
    s = sorted(ms)
    return {
        "n": len(s),
        "p50": round(statistics.median(s), 2),
        "p95": round(s[min(len(s) - 1, int(0.95 * len(s)))], 2),
        "mean": round(statistics.fmean(s), 2),
    }


def _head(statement: Any) -> str:
    text = statement if isinstance(statement, str) else repr(statement)
    return " ".join(text.split())[:60]


def profiled() -> contextlib.AbstractContextManager[dict[str, list[float]]]:
    """Time each statement / pipeline / COPY / commit the sync runner sends, and retain's CPU
    stages (``_timing.timed_calls``)."""
    import psycopg

    from shared_core.retain import extract as extract_module
    from shared_core.retain import flow
    from shared_core.storage import runner

    def pipeline_label(conn: Any, op: Any) -> str:
        heads = ", ".join(_head(q.statement)[:18] for q in op.queries)
        return f"pipeline: {heads}"[:100]

    return timed_calls(
        {
            (runner, "_exec_sync"): lambda conn, query: "sql " + _head(query.statement),
            (runner, "_copy_sync"): lambda conn, op: "copy " + _head(op.statement),
            (runner, "_pipeline_sync"): pipeline_label,
            (psycopg.Connection, "commit"): "sql COMMIT",
            (flow, "prepare_retain"): "cpu prepare_retain (validate, context, extraction)",
            (extract_module, "_with_dates"): "cpu   dates (Duckling, pre-checked)",
            (extract_module, "_entities"): "cpu   entities (spaCy NER, in-batch resolution)",
            (flow, "index_contexts"): "cpu   conversation context",
            (runner, "_setting_statements"): "cpu   setting statements",
        }
    )


# A unit row as the small path writes it, reduced to the columns an index reads.
_INDEX_PROBE_INSERT = """
INSERT INTO memory_units (bank_id, id, text, embedding, fact_type, mentioned_at, search_vector)
VALUES (%(bank)s, %(id)s, %(text)s, %(embedding)s, 'world', now(), to_tsvector('english', %(text)s))"""


class _RollBack(Exception):
    pass


def index_costs(dsn: str, bank: str, vectors: Any, rounds: int, *, plain: str) -> dict[str, dict[str, float]]:
    """One unit ``INSERT`` (a world fact) into ``bank``, timed with every index of
    ``memory_units`` and with some dropped, and one row into the ``plain`` table (one HNSW
    index); each variant runs in its own transaction, rolled back, so nothing changes; rounds
    alternate the variants so load drifts hit all alike. Statement time only: no commit."""

    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql

    rng = np.random.default_rng(11)
    with psycopg.connect(dsn) as conn:
        register_vector(conn)
        hnsw = [
            name
            for (name,) in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'memory_units'"
                " AND indexdef LIKE '%%USING hnsw%%' ORDER BY indexname"
            )
        ]
        gin = [
            name
            for (name,) in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'memory_units'"
                " AND indexdef LIKE '%%USING gin%%' ORDER BY indexname"
            )
        ]
        variants: dict[str, list[str]] = {"every index": []}
        variants |= {f"without {name}": [name] for name in hnsw}
        variants |= {"without any HNSW index": hnsw, "without the GIN indexes": gin}
        ms: dict[str, list[float]] = {name: [] for name in variants}
        ms["plain table, one HNSW index"] = []
        plain_insert = sql.SQL("INSERT INTO {} (id, embedding) VALUES (%s, %s)").format(sql.Identifier(plain))
        for r in range(rounds):
            try:
                with conn.transaction():
                    vector = vectors[rng.integers(len(vectors))] + rng.normal(0, 0.02, vectors.shape[1])
                    t0 = time.perf_counter()
                    conn.execute(plain_insert, (-1 - r, vector.astype(np.float32)))
                    ms["plain table, one HNSW index"].append((time.perf_counter() - t0) * 1e3)
                    raise _RollBack
            except _RollBack:
                pass
            for name, drops in variants.items():
                vector = vectors[rng.integers(len(vectors))] + rng.normal(0, 0.02, vectors.shape[1])
                try:
                    with conn.transaction():
                        for index in drops:
                            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index)))
                        ms[name].append(probe_insert_ms(conn, bank, vector.astype(np.float32)))
                        raise _RollBack
                except _RollBack:
                    pass
    return {name: _describe(values) for name, values in ms.items()}


def probe_insert_ms(conn: Any, bank: str, vector: np.ndarray) -> float:
    """Milliseconds of one probe unit ``INSERT`` of ``vector`` into ``bank`` (the caller's
    transaction, which it rolls back)."""
    import uuid

    params = {"bank": bank, "id": uuid.uuid4(), "text": TURNS[0], "embedding": vector}
    t0 = time.perf_counter()
    conn.execute(_INDEX_PROBE_INSERT, params)
    return (time.perf_counter() - t0) * 1e3


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=10_000)
    p.add_argument("--count", type=int, default=40, help="one-memory retains measured")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--no-extraction", action="store_true", help="diagnosis: spaCy and Duckling off")
    p.add_argument(
        "--index-costs",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="diagnosis: also time one unit INSERT with each HNSW index (and the GIN indexes) "
        "dropped in a rolled-back transaction, ROUNDS rounds",
    )
    p.add_argument(
        "--compare-batch",
        action="store_true",
        help="also retain each turn through the batch plan (staging table, COPY), alternating",
    )
    p.add_argument(
        "--compare-custom-fk-plans",
        action="store_true",
        help="also retain each turn with the foreign-key checks under the pool's force_custom_plan "
        "(the library before retain/links.py fk_checked), alternating",
    )
    p.add_argument("--out", type=Path, default=None)
    p.add_argument(
        "--bank",
        default=None,
        help="bank to retain into (default bench-single-v<corpus>-<size>; the 100k bench copy "
        "holds bench-latency-v<corpus>-<size>)",
    )
    p.add_argument(
        "--data-dir",
        type=Path,
        default=os.environ.get("HINDSIGHT_BENCH_PGDATA") or None,
        help="embedded server data dir (default $HINDSIGHT_BENCH_PGDATA, else $XDG_DATA_HOME's)",
    )
    args = p.parse_args(argv)

    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql
    from recall_latency import ensure_bank

    from shared_core import EngineConfig, MemoryEngine
    from shared_core.retain import flow, links
    from shared_core.retain.small import is_small
    from shared_core.types import MemoryItem

    report: dict[str, Any] = {"size": args.size, "loadavg_start": _loadavg()}
    # Explicitly under the user data dir: run as root, the default is the machine-wide
    # /var/lib/hindsight-retrievers/pgdata, which is not private to this run.
    import platformdirs

    data_dir = args.data_dir or platformdirs.user_data_path("hindsight-retrievers") / "pgdata"
    report["data_dir"] = str(data_dir)
    loader = MemoryEngine(data_dir=data_dir, config=EngineConfig(extract_entities=False, extract_dates=False))
    try:
        corpus = make_corpus(args.size)
        bank = args.bank or f"bench-single-v{CORPUS_VERSION}-{args.size}"
        report["load"] = ensure_bank(loader, corpus, bank)
        vectors = corpus.vectors
        n = len(vectors)
        picks = vectors[[(i * 97) % n for i in range(args.count)]]
        # New vectors every run, the plain side's the same as ours: a vector already in an HNSW
        # index (a stored one; one an earlier run retained and deleted) takes pgvector's cheaper
        # duplicate path (recall_latency.measure_single_retain).
        report["seed"] = seed = time.time_ns()
        rng = np.random.default_rng(seed)
        noisy = [v + rng.normal(0, 0.02, size=v.shape[0]).astype(np.float32) for v in picks]
        ours: list[float] = []
        batch: list[float] = []
        custom_fk: list[float] = []
        plain: list[float] = []
        stages: dict[str, list[float]] = {}
        config = EngineConfig(extract_entities=False, extract_dates=False) if args.no_extraction else None
        report["extraction"] = not args.no_extraction
        with (
            MemoryEngine(loader.dsn, config=config) as engine,
            plain_table(loader.dsn, vectors.shape[1]) as table,
        ):
            plain_load(loader.dsn, table, vectors, index_first=False)
            # One connection, one autocommit INSERT per row, as _plain.plain_insert_one.
            plain_conn = psycopg.connect(loader.dsn, autocommit=True)
            register_vector(plain_conn)
            plain_insert = sql.SQL("INSERT INTO {} (id, embedding) VALUES (%s, %s)").format(
                sql.Identifier(table)
            )
            plain_conn.execute(plain_insert, (10 * n, noisy[0] + np.float32(0.001)))  # warm-up, as ours
            ids = engine.retain(["warm-up turn about Paris in May 2023"], bank=bank, progress=False)
            with profiled() if args.profile else contextlib.nullcontext({}) as stages:
                for i in range(args.count):
                    t0 = time.perf_counter()
                    plain_conn.execute(plain_insert, (n + i, noisy[i]))
                    plain.append((time.perf_counter() - t0) * 1e3)
                    item = MemoryItem(
                        text=TURNS[i % len(TURNS)],
                        mentioned_at=dt.datetime(2024, 6, 1, tzinfo=dt.UTC) + dt.timedelta(hours=i),
                        embedding=noisy[i].tolist(),
                    )
                    # Ours and the custom-plan variant in alternating order: the second retain of
                    # the same turn finds warmer pages.
                    order = ["ours", "custom"] if i % 2 == 0 else ["custom", "ours"]
                    for which in order if args.compare_custom_fk_plans else ["ours"]:
                        generic = links.GENERIC_PLAN_CACHE_MODE
                        if which == "custom":
                            links.GENERIC_PLAN_CACHE_MODE = (  # a no-op in its place
                                "SELECT set_config('plan_cache_mode', "
                                "current_setting('plan_cache_mode'), true)"
                            )
                        try:
                            t0 = time.perf_counter()
                            ids += engine.retain([item], bank=bank, progress=False)
                            (ours if which == "ours" else custom_fk).append((time.perf_counter() - t0) * 1e3)
                        finally:
                            links.GENERIC_PLAN_CACHE_MODE = generic
                    if args.compare_batch:
                        flow.is_small = lambda request: False
                        try:
                            t0 = time.perf_counter()
                            ids += engine.retain([item], bank=bank, progress=False)
                            batch.append((time.perf_counter() - t0) * 1e3)
                        finally:
                            flow.is_small = is_small
            engine.delete(ids, bank=bank)
            plain_conn.close()
            if args.index_costs:
                report["index_costs_ms"] = index_costs(
                    loader.dsn, bank, vectors, args.index_costs, plain=table
                )
        report["ours_ms"] = _describe(ours)
        report["plain_insert_ms"] = _describe(plain)
        report["ratio_p50"] = round(report["ours_ms"]["p50"] / report["plain_insert_ms"]["p50"], 2)
        if batch:
            report["batch_path_ms"] = _describe(batch)
            report["batch_path_ratio_p50"] = round(
                report["batch_path_ms"]["p50"] / report["plain_insert_ms"]["p50"], 2
            )
        if custom_fk:
            report["custom_fk_plans_ms"] = _describe(custom_fk)
        if stages:
            report["profile_ms"] = {
                k: {"p50": round(statistics.median(v), 2), "per_retain": round(len(v) / args.count, 2)}
                for k, v in stages.items()
            }
        report["loadavg_end"] = _loadavg()
    finally:
        loader.close()
    for k, v in report.items():
        if k == "index_costs_ms":
            print("one unit INSERT, statement only (p50 ms):")
            for name, st in v.items():
                print(f"  {st['p50']:8.2f}  {name}")
        elif k == "profile_ms":
            print("profile (median ms, calls per retain):")
            for name, st in sorted(v.items(), key=lambda kv: -kv[1]["p50"] * kv[1]["per_retain"]):
                print(f"  {st['p50']:8.2f} x{st['per_retain']:<4} {name}")
        else:
            print(f"{k}: {v}")
    if args.out:
        write_json(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
