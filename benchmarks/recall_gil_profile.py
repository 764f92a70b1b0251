"""Where a recall's Python CPU goes (the interpreter's lock), by category, query embedding left out.

    HINDSIGHT_BENCH_PGDATA=... .venv/bin/python benchmarks/recall_gil_profile.py \
        --py-spy /path/to/py-spy --reranker none [--tree /other/tree]

Runs recalls of the 50 bench queries in a loop in a child process (``PYTHONPATH`` = ``--tree``,
default this one), the query embeddings cached after their first run so the loop is the rest of
the recall; after ``--warmup`` recalls, samples it for ``--seconds`` with ``py-spy record --gil
--nonblocking`` (only the thread holding the lock: the CPU that serialises a process's clients;
non-blocking, since blocking mode stalled the loop), then puts every sample in one category by
its innermost frame that names one and prints each category's share and its ms of the loop's
CPU per recall (``time.process_time``, every thread). py-spy is not a dependency: install it
apart (``pip install --target DIR py-spy``) and pass its path. The collector's and the
deallocator's work land on the frame that triggered them. Samples of one run on a loaded host
shift by a few points run to run: compare trees with ``recall_ab.py`` (paired CPU).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

_LOOP = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1] + "/benchmarks")
from _corpus import CORPUS_VERSION, make_queries
from shared_core import EngineConfig, MemoryEngine
import shared_core.embedding as embedding
size, reranker, warmup, calls = int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
queries = make_queries()
bank = f"bench-latency-v{CORPUS_VERSION}-{size}"
cache = {}
embed_query = embedding.SentenceTransformerEmbedder.embed_query
def cached(self, text):
    if text not in cache:
        cache[text] = embed_query(self, text)
    return cache[text]
embedding.SentenceTransformerEmbedder.embed_query = cached
with MemoryEngine(data_dir=os.environ["HINDSIGHT_BENCH_PGDATA"],
                  config=EngineConfig(extract_entities=False, extract_dates=False)) as engine:
    def recall(i):
        engine.recall(queries.texts[i % len(queries.texts)], bank=bank,
                      query_timestamp=queries.query_time, reranker=reranker)
    for i in range(warmup):
        recall(i)
    print("ready", flush=True)
    cpu, wall = time.process_time(), time.perf_counter()
    for i in range(calls):
        recall(i)
    print("cpu", (time.process_time() - cpu) * 1e3 / calls, (time.perf_counter() - wall) * 1e3 / calls,
          flush=True)
"""

# (category, pattern over a frame "function (file:line)"), tried innermost frame first.
CATEGORIES: tuple[tuple[str, str], ...] = (
    ("psycopg: decoding rows (fetchall, row objects)", r"Cursor\.fetchall|from_sequence|load_jsonb"),
    (
        "psycopg: composing, converting, sending statements",
        r"Cursor\.execute|_execute_gen|PostgresQuery|_setting_statements|_settings_statement|psycopg/sql\.py"
        r"|_send_sync|_framed_sync|Pipeline\.|_pipeline_base|Transformer|_maybe_prepare|Connection\.wait"
        r"|_cursor_base|psycopg/connection\.py",
    ),
    ("pool checkout / return", r"ConnectionPool|psycopg_pool|_check_sync|_quiet"),
    ("thread hand-offs (executor)", r"ThreadPoolExecutor|concurrent/futures|threading\.py"),
    ("fusion", r"recall/fusion\.py"),
    ("learned scoring (features, signals)", r"recall/learned\.py|_signals|LearnedScorer|QuerySignals"),
    ("building memories (RecalledMemory, ScoreBreakdown)", r"_memory \(|breakdown|_as_dict"),
    ("boosts (inputs, apply_boosts)", r"_boost_input|recall/boosts\.py|text_years"),
    ("token budget", r"recall/budget\.py|shared_core/tokens\.py"),
    ("arms: hits from rows (finish, start)", r"recall/arms/"),
    ("query analysis (dates, keyword terms)", r"extraction/dates\.py|_analyse|recall/query\.py"),
    ("hydration / details plans", r"recall/hydrate\.py"),
)
OTHER = "other (plan generators, stopwatch, trace, freeing the plan's objects)"


def categorise(stack: str) -> str:
    """The category of one sample's stack (frames joined by ``;``, outermost first).

    >>> categorise("run_sync (storage/runner.py:1);reciprocal_rank_fusion (shared_core/recall/fusion.py:9)")
    'fusion'
    >>> categorise("recall_plan (shared_core/recall/pipeline.py:3)")
    "other (plan generators, stopwatch, trace, freeing the plan's objects)"
    """
    for frame in reversed(stack.split(";")):
        for name, pattern in CATEGORIES:
            if re.search(pattern, frame):
                return name
    return OTHER


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--py-spy", type=Path, required=True, help="the py-spy executable")
    p.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent)
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--reranker", default="none")
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--seconds", type=int, default=30)
    p.add_argument("--rate", type=int, default=250)
    args = p.parse_args(argv)
    tree = str(args.tree.resolve())
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "samples.txt"
        loop = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _LOOP,
                tree,
                str(args.size),
                args.reranker,
                str(args.warmup),
                str(args.calls),
            ],
            env={**os.environ, "PYTHONPATH": tree, "HF_HUB_OFFLINE": "1"},
            stdout=subprocess.PIPE,
            text=True,
        )
        assert loop.stdout is not None
        while (line := loop.stdout.readline()) and not line.startswith("ready"):
            pass
        load = os.getloadavg()[0]
        time.sleep(1)
        spy = [str(args.py_spy), "record", "--gil", "--nonblocking", "-r", str(args.rate)]
        subprocess.run(
            [*spy, "-d", str(args.seconds), "-f", "raw", "-o", str(raw), "--pid", str(loop.pid)],
            check=True,
            capture_output=True,
        )
        _, cpu, wall = loop.stdout.readline().split()
        loop.wait()
        counts: collections.Counter[str] = collections.Counter()
        for line in raw.read_text().splitlines():
            stack, _, n = line.rpartition(" ")
            counts[categorise(stack)] += int(n)
    total = sum(counts.values())
    print(
        f"tree {tree}, reranker {args.reranker}: {float(cpu):.2f} ms of process CPU per recall "
        f"({float(wall):.2f} ms wall), {total} samples, load {load:.2f}-{os.getloadavg()[0]:.2f}"
    )
    for name, n in counts.most_common():
        print(f"  {100 * n / total:5.1f}%  {float(cpu) * n / total:6.2f} ms  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
