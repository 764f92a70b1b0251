"""A/B server CPU per statement kind of two source trees, the statements replayed interleaved.

    HINDSIGHT_BENCH_PGDATA=... .venv/bin/python benchmarks/statement_cpu_ab.py \
        --a /path/to/baseline/tree --b . --size 100000 --calls 50 --rounds 3 \
        [--filter '{"team": "er"}'] [--tags travel --tags-match any_strict]

Each tree records the statements of ``--calls`` recalls (``reranker="none"`` unless
``--reranker`` says otherwise: ``learned`` adds its graph neighbours statement; the bench
queries, at most 50) in a process of its own (``PYTHONPATH`` = the tree), on the same embedded
server; then every recall's statements are run again on one warm connection with the
engine's session settings (and each statement's own, in a transaction of its own, as recall
frames them), prepared as recall's are after their fifth run, the two trees' in turn (recall i of A,
recall i of B, recall i+1 of A, ...), each statement's backend CPU time read around it
(``/proc/<pid>/schedstat``, Linux). Both sides thus run in the same seconds on the same
connection: on a machine other jobs load, their ratio is steadier than two runs of
``recall_cpu.py`` minutes apart. Prints the CPU per recall of each statement kind for both
sides, their total, and whether the two trees' recalls returned the same memories and scores.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _ab import _OFFLINE
from _args import add_scope_args, scope_options
from recall_profile import statement_name

# The recorder, run with PYTHONPATH = the tree: the statements each recall's runner executes
# (text, parameters, setting statements), the session settings, and each recall's result.
_RECORDER = r"""
import json, os, pickle, sys
sys.path.insert(0, sys.argv[1] + "/benchmarks")
import psycopg
import shared_core.storage.runner as runner
from _corpus import CORPUS_VERSION, make_queries
from shared_core import EngineConfig, MemoryEngine

size, calls, out = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
scope = json.loads(sys.argv[5])  # recall's filter / tags / tags_match, as --filter etc. gave them
scope = {"reranker": "none"} | scope  # and its reranker (--reranker)
queries = make_queries()
bank = f"bench-latency-v{CORPUS_VERSION}-{size}"
recorded = []

def recording(original):
    def run(conn, query):
        recorded.append(query)
        return original(conn, query)
    return run

with MemoryEngine(data_dir=os.environ["HINDSIGHT_BENCH_PGDATA"],
                  config=EngineConfig(extract_entities=False, extract_dates=False)) as engine:
    def recall(i):
        return engine.recall(queries.texts[i % len(queries.texts)], bank=bank,
                             query_timestamp=queries.query_time, **scope)
    for i in range(5):  # warm-up: models, pool
        recall(i)
    runner._exec_sync = recording(runner._exec_sync)
    runner._framed_sync = recording(runner._framed_sync)
    batches, results = [], []
    with psycopg.connect(engine.dsn) as conn:
        for i in range(min(calls, len(queries.texts))):
            recorded.clear()
            r = recall(i)
            results.append([(m.id, m.score, m.similarity) for m in r.memories])
            batches.append([
                (q.statement if isinstance(q.statement, str) else q.statement.as_string(conn),
                 q.params,
                 [s.as_string(conn) for s in runner._setting_statements(q)])
                for q in recorded
            ])
    session = engine._pools._session
    with open(out, "wb") as f:
        pickle.dump({"session": session if isinstance(session, str) else session.as_string(None),
                     "batches": batches, "results": results}, f)
"""


def record(
    tree: Path, size: int, calls: int, out: Path, scope: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The statements of ``calls`` recalls of ``tree`` (see ``_RECORDER``), with the recall
    options ``scope`` (a filter, tags)."""
    subprocess.run(
        [
            sys.executable,
            "-c",
            _RECORDER,
            str(tree),
            str(size),
            str(calls),
            str(out),
            json.dumps(scope or {}),
        ],
        check=True,
        env={**_OFFLINE, **os.environ, "PYTHONPATH": str(tree)},
        cwd=tree,
    )
    with out.open("rb") as f:
        recorded: dict[str, Any] = pickle.load(f)
    return recorded


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", type=Path, required=True)
    p.add_argument("--b", type=Path, required=True)
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--rounds", type=int, default=3, help="replays of every recall (the first warms up)")
    add_scope_args(p)
    p.add_argument(
        "--reranker",
        default="none",
        help="the recorded recalls' reranker (default none; 'learned' also sends the graph's "
        "second round, the neighbours statement)",
    )
    args = p.parse_args()
    scope = scope_options(args) | {"reranker": args.reranker}

    import psycopg
    from pgvector.psycopg import register_vector
    from recall_cpu import replay_cpu

    from shared_core import EngineConfig, MemoryEngine

    with tempfile.TemporaryDirectory() as tmp:
        sides = {
            "A": record(args.a.resolve(), args.size, args.calls, Path(tmp) / "a.pickle", scope),
            "B": record(args.b.resolve(), args.size, args.calls, Path(tmp) / "b.pickle", scope),
        }
    same = sum(a == b for a, b in zip(sides["A"]["results"], sides["B"]["results"], strict=True))
    n = len(sides["A"]["batches"])
    cpu: dict[str, dict[str, list[float]]] = {"A": {}, "B": {}}
    with (
        MemoryEngine(
            data_dir=os.environ["HINDSIGHT_BENCH_PGDATA"],
            config=EngineConfig(extract_entities=False, extract_dates=False),
        ) as engine,
        psycopg.connect(engine.dsn, autocommit=True) as conn,
    ):
        register_vector(conn)
        (backend,) = conn.execute("SELECT pg_backend_pid()").fetchone() or (0,)
        path = f"/proc/{backend}/schedstat"
        for rnd in range(args.rounds):
            for i in range(n):
                for side, recorded in sides.items():
                    conn.execute(recorded["session"])
                    for text, params, settings in recorded["batches"][i]:
                        spent = replay_cpu(conn, path, text, params, settings)
                        if rnd:
                            cpu[side].setdefault(statement_name(text)[:60], []).append(spent)
    print(
        f"size {args.size}, {n} recalls x {args.rounds - 1} measured rounds, interleaved A/B, "
        f"load {os.getloadavg()[0]:.2f}\nA = {args.a}\nB = {args.b}"
    )
    per_recall = n * (args.rounds - 1)
    kinds = sorted(cpu["A"].keys() | cpu["B"].keys(), key=lambda k: -sum(cpu["A"].get(k, [])))
    print(f"  {'server CPU per recall (ms)':60s}        A        B    B/A  (p50 per statement A | B)")
    for kind in kinds:
        a, b = cpu["A"].get(kind, []), cpu["B"].get(kind, [])
        ta, tb = sum(a) / per_recall, sum(b) / per_recall
        ratio = f"{tb / ta:6.3f}" if ta else "     -"
        pa = f"{statistics.median(a):6.2f}" if a else "     -"
        pb = f"{statistics.median(b):6.2f}" if b else "     -"
        print(f"  {kind:60s} {ta:8.2f} {tb:8.2f} {ratio}  ({pa} | {pb})")
    total_a = sum(sum(v) for v in cpu["A"].values()) / per_recall
    total_b = sum(sum(v) for v in cpu["B"].values()) / per_recall
    print(f"  {'all statements':60s} {total_a:8.2f} {total_b:8.2f} {total_b / total_a:6.3f}")
    print(f"  identical results (ids, scores, cosine similarities): {same} of {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
