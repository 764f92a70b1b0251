"""The critical path of one recall: when each stage and each statement starts and ends.

    HINDSIGHT_BENCH_PGDATA=... .venv/bin/python benchmarks/recall_timeline.py --size 100000 \
        --calls 100 [--k 10]

Runs ``--calls`` recalls (``--reranker``, default ``none``; 1 client) over a bank loaded by
``recall_latency.py`` and records, for each, every stage of its stopwatch and every statement
the plan runner executes (on the plan's thread or an executor thread), as start and end in ms
from the recall's start. Prints, per stage and per statement kind, the p50 of its start, end
and length and in how many recalls it ran, ordered by start: what runs beside what, and what
the recall waits for (a stage's length is the recall's wall time in it; a statement's covers
its pool checkout, round trip and row decoding, in the thread that ran it).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _args import add_bank_scope_args, scope_options
from _corpus import CORPUS_VERSION, make_queries
from recall_latency import quantile
from recall_profile import statement_name

# Short names for the statements of a recall (their first words, as recall_profile names them).
KINDS = (
    ("WITH kstats", "sql keyword"),
    ('1 - (("u"."embedding"', "sql semantic"),
    ("WITH seeds", "sql graph"),
    ("recall_details", "sql details"),
    ("u.id = ANY", "sql hydrate"),
    ("WITH began", "sql temporal entry"),
    ("unnest(%(frontier)", "sql temporal hop"),
)


def kind(text: str) -> str:
    """The statement's short name.

    >>> kind("SELECT id FROM recall_details(%(bank)s, %(ids)b::uuid[])")
    'sql details'
    """
    flat = " ".join(text.split())
    return next((name for key, name in KINDS if key in flat), "sql " + statement_name(text)[:40])


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--calls", type=int, default=100)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--k", type=int, default=None, help="return the k best (default: the token budget's)")
    p.add_argument("--reranker", default="none", help="the recall's reranker (default none)")
    add_bank_scope_args(p)
    args = p.parse_args(argv)

    import shared_core.recall.timing as timing
    import shared_core.storage.runner as runner
    from shared_core import EngineConfig, MemoryEngine

    origin = [0.0]
    events: list[tuple[str, float, float, str]] = []
    lock = threading.Lock()

    def note(name: str, started: float) -> None:
        with lock:
            events.append(
                (
                    name,
                    (started - origin[0]) * 1e3,
                    (time.perf_counter() - origin[0]) * 1e3,
                    threading.current_thread().name,
                )
            )

    stage = timing.Stopwatch.stage

    @contextmanager
    def timed_stage(self: Any, name: str, *, within: str | None = None) -> Iterator[None]:
        started = time.perf_counter()
        with stage(self, name, within=within):
            yield
        note(name, started)

    timing.Stopwatch.stage = timed_stage  # type: ignore[method-assign]

    def recording(original: Any) -> Any:
        def run(*a: Any, **k: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*a, **k)
            finally:
                query = a[1]
                statement = query.statement
                text = statement if isinstance(statement, str) else statement.as_string(None)
                note(kind(text), started)

        return run

    # Every statement of a recall runs through one of these: a pooled connection of its own
    # (launched, concurrent, one-off) or the plan's.
    runner._one_off_sync = recording(runner._one_off_sync)
    runner._exec_sync = recording(runner._exec_sync)

    options = scope_options(args) | ({"k": args.k} if args.k is not None else {})
    bank = f"bench-latency-v{CORPUS_VERSION}-{args.size}"
    queries = make_queries()
    per: dict[str, list[tuple[float, float]]] = {}
    totals: list[float] = []
    with MemoryEngine(
        data_dir=args.data_dir, config=EngineConfig(extract_entities=False, extract_dates=False)
    ) as engine:
        for i in range(args.calls + args.warmup):
            events.clear()
            origin[0] = time.perf_counter()
            result = engine.recall(
                queries.texts[i % len(queries.texts)],
                bank=bank,
                query_timestamp=queries.query_time,
                reranker=args.reranker,
                trace=True,
                **options,
            )
            if i < args.warmup:
                continue
            assert result.trace is not None
            totals.append(result.trace.timings_ms["total"])
            seen: dict[str, tuple[float, float]] = {}
            for name, start, end, _ in events:
                # a stage or kind run twice in a recall: from its first start to its last end
                first = seen.get(name)
                seen[name] = (min(start, first[0]), max(end, first[1])) if first else (start, end)
            for name, span in seen.items():
                per.setdefault(name, []).append(span)
    print(
        f"bank {bank}, options {options}, reranker {args.reranker}, {args.calls} recalls, 1 client, "
        f"load {os.getloadavg()[0]:.2f}; "
        f"total p50 {quantile(totals, 50):.2f} ms"
    )
    print(f"  {'stage / statement':28s} {'start':>7s} {'end':>7s} {'length':>7s}  (p50 ms)  runs")
    rows = []
    for name, spans in per.items():
        starts, ends = [s for s, _ in spans], [e for _, e in spans]
        lengths = [e - s for s, e in spans]
        rows.append((quantile(starts, 50), quantile(ends, 50), quantile(lengths, 50), len(spans), name))
    for start, end, length, n, name in sorted(rows):
        print(f"  {name:28s} {start:7.2f} {end:7.2f} {length:7.2f}  {n / args.calls:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
