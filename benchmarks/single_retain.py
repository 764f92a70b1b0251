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
from collections import defaultdict
from collections.abc import Iterator
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


@contextlib.contextmanager
def profiled() -> Iterator[dict[str, list[float]]]:
    """Time each statement / COPY the sync runner executes, and retain's CPU stages."""
    import psycopg

    from shared_core.retain import flow
    from shared_core.storage import runner

    stages: dict[str, list[float]] = defaultdict(list)
    exec_sync, copy_sync, prepare = runner._exec_sync, runner._copy_sync, flow.prepare_retain
    pipeline_sync = runner._pipeline_sync
    commit = psycopg.Connection.commit

    def timed_commit(self: Any) -> None:
        t0 = time.perf_counter()
        try:
            commit(self)
        finally:
            stages["sql COMMIT"].append((time.perf_counter() - t0) * 1e3)

    def timed_pipeline(conn: Any, op: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return pipeline_sync(conn, op)
        finally:
            heads = ", ".join(key(q.statement)[:18] for q in op.queries)
            stages[f"pipeline: {heads}"[:100]].append((time.perf_counter() - t0) * 1e3)

    def key(statement: Any) -> str:
        text = statement if isinstance(statement, str) else repr(statement)
        return " ".join(text.split())[:60]

    def timed_exec(conn: Any, query: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return exec_sync(conn, query)
        finally:
            stages["sql " + key(query.statement)].append((time.perf_counter() - t0) * 1e3)

    def timed_copy(conn: Any, op: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return copy_sync(conn, op)
        finally:
            stages["copy " + key(op.statement)].append((time.perf_counter() - t0) * 1e3)

    def timed_prepare(*args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return prepare(*args)
        finally:
            stages["cpu prepare_retain (validate, context, extraction)"].append(
                (time.perf_counter() - t0) * 1e3
            )

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                stages[name].append((time.perf_counter() - t0) * 1e3)

        return wrapper

    from shared_core.retain import extract as extract_module

    cpu = {
        (extract_module, "_with_dates"): "cpu   dates (Duckling, pre-checked)",
        (extract_module, "_entities"): "cpu   entities (spaCy NER, in-batch resolution)",
        (flow, "index_contexts"): "cpu   conversation context",
        (runner, "_setting_statements"): "cpu   setting statements",
    }
    saved = {target: getattr(*target) for target in cpu}
    for (module, name), label in cpu.items():
        setattr(module, name, timed(label, saved[(module, name)]))
    runner._exec_sync, runner._copy_sync, flow.prepare_retain = timed_exec, timed_copy, timed_prepare
    runner._pipeline_sync = timed_pipeline
    psycopg.Connection.commit = timed_commit  # type: ignore[method-assign]
    try:
        yield stages
    finally:
        runner._exec_sync, runner._copy_sync, flow.prepare_retain = exec_sync, copy_sync, prepare
        runner._pipeline_sync = pipeline_sync
        psycopg.Connection.commit = commit  # type: ignore[method-assign]
        for (module, name), fn in saved.items():
            setattr(module, name, fn)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=10_000)
    p.add_argument("--count", type=int, default=40, help="one-memory retains measured")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--no-extraction", action="store_true", help="diagnosis: spaCy and Duckling off")
    p.add_argument(
        "--compare-batch",
        action="store_true",
        help="also retain each turn through the batch plan (staging table, COPY), alternating",
    )
    p.add_argument("--out", type=Path, default=None)
    p.add_argument(
        "--data-dir", type=Path, default=None, help="embedded server data dir (default: $XDG_DATA_HOME's)"
    )
    args = p.parse_args(argv)

    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql
    from recall_latency import ensure_bank

    from shared_core import EngineConfig, MemoryEngine
    from shared_core.retain import flow
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
        bank = f"bench-single-v{CORPUS_VERSION}-{args.size}"
        report["load"] = ensure_bank(loader, corpus, bank)
        vectors = corpus.vectors
        n = len(vectors)
        picks = vectors[[(i * 97) % n for i in range(args.count)]]
        rng = np.random.default_rng(5)
        noisy = [v + rng.normal(0, 0.02, size=v.shape[0]).astype(np.float32) for v in picks]
        ours: list[float] = []
        batch: list[float] = []
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
            plain_conn.execute(plain_insert, (10 * n, picks[0]))  # warm-up, as ours
            ids = engine.retain(["warm-up turn about Paris in May 2023"], bank=bank, progress=False)
            with profiled() if args.profile else contextlib.nullcontext({}) as stages:
                for i in range(args.count):
                    t0 = time.perf_counter()
                    plain_conn.execute(plain_insert, (n + i, picks[i]))
                    plain.append((time.perf_counter() - t0) * 1e3)
                    item = MemoryItem(
                        text=TURNS[i % len(TURNS)],
                        mentioned_at=dt.datetime(2024, 6, 1, tzinfo=dt.UTC) + dt.timedelta(hours=i),
                        embedding=noisy[i].tolist(),
                    )
                    t0 = time.perf_counter()
                    ids += engine.retain([item], bank=bank, progress=False)
                    ours.append((time.perf_counter() - t0) * 1e3)
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
        report["ours_ms"] = _describe(ours)
        report["plain_insert_ms"] = _describe(plain)
        report["ratio_p50"] = round(report["ours_ms"]["p50"] / report["plain_insert_ms"]["p50"], 2)
        if batch:
            report["batch_path_ms"] = _describe(batch)
            report["batch_path_ratio_p50"] = round(
                report["batch_path_ms"]["p50"] / report["plain_insert_ms"]["p50"], 2
            )
        if stages:
            report["profile_ms"] = {
                k: {"p50": round(statistics.median(v), 2), "per_retain": round(len(v) / args.count, 2)}
                for k, v in stages.items()
            }
        report["loadavg_end"] = _loadavg()
    finally:
        loader.close()
    for k, v in report.items():
        if k == "profile_ms":
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
