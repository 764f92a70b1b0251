"""A/B recall latency of two source trees on one bank, calls interleaved (A, B, A, B, ...).

    HINDSIGHT_BENCH_PGDATA=... .venv/bin/python benchmarks/recall_ab.py \
        --a /path/to/baseline/tree --b . --size 100000 --calls 60

Each tree runs in a worker process of its own (this interpreter, ``PYTHONPATH`` = the tree),
on the same embedded server; the driver sends both the same query in turn, so both see the same
load. Prints p50/p95 per stage and of the headline (total without query embedding and rerank)
for each side, the blocking network waits per recall (``Connection.wait`` calls: round trips,
roughly; every connection of the process counted), the client process's CPU time per recall
(all its threads, the query embedding included: less sensitive to other jobs on the machine
than wall-clock stages), the caller's wall time of ``engine.recall`` (stage ``wall``: the trace's
``total`` ends inside the plan, before the runner commits and returns its connection), the
load average, and whether both returned
the same memories with the same scores and cosine similarities for every query.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _ab import ask, start_worker
from _args import add_scope_args, scope_options

_WORKER = r"""
import hashlib, json, os, sys, threading, time
sys.path.insert(0, sys.argv[2] + "/benchmarks")
import psycopg
from _corpus import CORPUS_VERSION, make_queries
from shared_core import EngineConfig, MemoryEngine
import shared_core.embedding as embedding

waits = [0]
lock = threading.Lock()
original = psycopg.Connection.wait
def counting(self, gen, *a, **k):
    with lock:
        waits[0] += 1
    return original(self, gen, *a, **k)
psycopg.Connection.wait = counting

# the query embedding's CPU (its thread's), to report the recall's CPU without it
embedded = [0.0]
embed_query = embedding.SentenceTransformerEmbedder.embed_query
def timed_embed(self, text):
    cpu = time.thread_time()
    try:
        return embed_query(self, text)
    finally:
        embedded[0] += time.thread_time() - cpu
embedding.SentenceTransformerEmbedder.embed_query = timed_embed

size = int(sys.argv[1])
options = json.loads(sys.argv[3])
bank = f"bench-latency-v{CORPUS_VERSION}-{size}"
queries = make_queries()
with MemoryEngine(data_dir=os.environ["HINDSIGHT_BENCH_PGDATA"],
                  config=EngineConfig(extract_entities=False, extract_dates=False)) as engine:
    print("ready", flush=True)
    for line in sys.stdin:
        i = int(line)
        waits[0] = 0
        embedded[0] = 0.0
        cpu, wall = time.process_time(), time.perf_counter()
        r = engine.recall(queries.texts[i % len(queries.texts)], bank=bank,
                          query_timestamp=queries.query_time, trace=True, **({"reranker": "none"} | options))
        cpu, wall = (time.process_time() - cpu) * 1e3, (time.perf_counter() - wall) * 1e3
        # every field of every memory (text, details, the whole ScoreBreakdown, relevance)
        digest = hashlib.sha256(repr(r.memories).encode()).hexdigest()
        print(json.dumps({"t": r.trace.timings_ms | {"wall": wall}, "waits": waits[0], "cpu": cpu,
                          "cpu_no_embedding": cpu - embedded[0] * 1e3,
                          "ids": [m.id for m in r.memories], "scores": [m.score for m in r.memories],
                          "sims": [m.similarity for m in r.memories], "digest": digest}),
              flush=True)
"""


def _worker(
    tree: Path, size: int, options: dict[str, Any], data_dir: Path | None = None
) -> subprocess.Popen[str]:
    env = {} if data_dir is None else {"HINDSIGHT_BENCH_PGDATA": str(data_dir)}
    return start_worker(_WORKER, [str(size), str(tree), json.dumps(options)], tree, env)


# What must be the same on both sides: ids, scores, cosine similarities, and a digest of every
# field of every returned memory (details, the whole score breakdown, the reranker's relevance).
_COMPARED = ("ids", "scores", "sims", "digest")


def _print_paired(what: str, diffs: list[float]) -> None:
    """One paired line: the median per-query difference B - A and how often B was faster."""
    if diffs:
        share = sum(d < 0 for d in diffs) / len(diffs)
        print(
            f"  {what}, B - A, paired by query: median {statistics.median(diffs):+.2f} ms, "
            f"B faster in {share:.0%} of calls"
        )


def main() -> int:
    from recall_latency import summarise

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", type=Path, required=True)
    p.add_argument("--b", type=Path, required=True)
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--calls", type=int, default=60)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument(
        "--data-a",
        type=Path,
        default=None,
        help="A's data directory (default: HINDSIGHT_BENCH_PGDATA; with --data-b, two copies of "
        "one bank stored differently, e.g. before and after a migration, can be compared)",
    )
    p.add_argument("--data-b", type=Path, default=None, help="B's data directory")
    add_scope_args(p)
    p.add_argument(
        "--reranker",
        default="none",
        help="the recall's reranker (default none: the headline leaves the rerank stage out; "
        "'learned' also runs the graph's second round, stage graph_neighbours)",
    )
    p.add_argument("--k", type=int, default=None, help="return the k best (default: the token budget's)")
    p.add_argument(
        "--dump", type=Path, default=None, help="write every measured call's stage timings (JSON) here"
    )
    p.add_argument(
        "--when-only",
        action="store_true",
        help='only the bench queries asking when something happened ("When did ...?"), in turn',
    )
    args = p.parse_args()
    options: dict[str, Any] = {"reranker": args.reranker}
    if args.k is not None:
        options["k"] = args.k
    options |= scope_options(args)
    a = _worker(args.a.resolve(), args.size, options, args.data_a)
    b = _worker(args.b.resolve(), args.size, options, args.data_b)
    picked = list(range(50))  # the bench queries (make_queries: 50), call i asks i mod 50
    if args.when_only:
        from _corpus import make_queries

        from shared_core.recall.arms.temporal import asks_when

        picked = [i for i, text in enumerate(make_queries().texts) if asks_when(text)]
    loads = [os.getloadavg()[0]]
    got: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    differ = []
    for i in range(args.warmup + args.calls):
        # alternate which side goes first, so neither always follows the other
        order = [("A", a), ("B", b)] if i % 2 == 0 else [("B", b), ("A", a)]
        out = {name: ask(proc, picked[i % len(picked)]) for name, proc in order}
        if [out["A"][key] for key in _COMPARED] != [out["B"][key] for key in _COMPARED]:
            differ.append(i)
        if i >= args.warmup:
            for name in ("A", "B"):
                got[name].append(out[name])
        if i % 10 == 0:
            loads.append(os.getloadavg()[0])
    for proc in (a, b):
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    print(
        f"size {args.size}, {args.calls} calls per side, options {options}, "
        f"load avg {min(loads):.2f}-{max(loads):.2f}"
    )
    print(f"A = {args.a} {args.data_a or ''}\nB = {args.b} {args.data_b or ''}")
    if args.dump is not None:
        args.dump.write_text(
            json.dumps(
                {
                    side: [r["t"] | {"cpu_no_embedding": r["cpu_no_embedding"]} for r in got[side]]
                    for side in got
                }
            )
        )
    sa, sb = summarise([r["t"] for r in got["A"]]), summarise([r["t"] for r in got["B"]])
    for stage in dict.fromkeys([*sa, *sb]):
        fa, fb = sa.get(stage), sb.get(stage)
        cell = lambda s: f"p50 {s['p50']:7.2f} p95 {s['p95']:7.2f} n {s['n']:3d}" if s else " " * 29  # noqa: E731
        print(f"  {stage:30s} A {cell(fa)} | B {cell(fb)}")
    wa = sorted(r["waits"] for r in got["A"])
    wb = sorted(r["waits"] for r in got["B"])
    print(f"  network waits per recall (median): A {wa[len(wa) // 2]} | B {wb[len(wb) // 2]}")
    from recall_latency import headline_ms

    diffs = [headline_ms(rb["t"]) - headline_ms(ra["t"]) for ra, rb in zip(got["A"], got["B"], strict=True)]
    faster = sum(d < 0 for d in diffs) / len(diffs) if diffs else 0.0
    print(
        f"  headline B - A, paired by query (the same query, one right after the other): median "
        f"{statistics.median(diffs):+.2f} ms, B faster in {faster:.0%} of calls"
    )
    for stage, what in (
        ("total", "total with the query embedding"),
        ("wall", "the caller's wall time (engine.recall, the plan's commit and connection release included)"),
    ):
        _print_paired(what, [b["t"][stage] - a["t"][stage] for a, b in zip(got["A"], got["B"], strict=True)])
    ca, cb = (statistics.median(r["cpu"] for r in got[side]) for side in ("A", "B"))
    print(f"  client CPU per recall, all threads, embedding included (median ms): A {ca:.2f} | B {cb:.2f}")
    na, nb = ([r["cpu_no_embedding"] for r in got[side]] for side in ("A", "B"))
    print(
        f"  client CPU per recall, all threads, without the query embedding's (median ms): "
        f"A {statistics.median(na):.2f} | B {statistics.median(nb):.2f} "
        f"(means {statistics.mean(na):.2f} | {statistics.mean(nb):.2f})"
    )
    _print_paired(
        "client CPU without the embedding's (not ms of wall time)",
        [b - a for a, b in zip(na, nb, strict=True)],
    )
    print(
        f"  identical results (ids, scores, cosine similarities and every field of every memory): "
        f"{args.warmup + args.calls - len(differ)} of {args.warmup + args.calls}; differ at {differ}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
