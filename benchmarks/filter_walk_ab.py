"""A broad filter's semantic walk against the exact path, whole recalls, on a bench bank.

    HINDSIGHT_BENCH_PGDATA=/tmp/filt-bench .venv/bin/python benchmarks/filter_walk_ab.py \
        [--rounds 1] [--k 10] [--only team] [--out F.json]

For every bench query and every case of ``recall_latency.FILTER_CASES`` (and no filter), one
recall with ``filter_walk_min_estimate=--walk-min-estimate`` (a filter the planner expects to
match at least that many memories walks the HNSW index) and one with the default
``filter_walk_min_estimate=None`` (the exact ranking up to ``EXACT_MAX_ROWS`` matches),
interleaved (the order alternates per query), reranker none. Reported per case: p50 of
each side's total excluding the query embedding (the trace's timings) and their paired ratio;
of the exact side's first 10 (and of everything it returned) the share the walk side returned,
mean / min; how often both put the same memory first; how many recalls took the walk (its trace
note); and how many returned memories fail the case's filter (must be 0: both sides run the
filter in SQL).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import CORPUS_VERSION, make_queries
from recall_latency import FILTER_CASES


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Seen:
    """The corpus fields a case's predicate reads, from a recalled memory."""

    tags: tuple[str, ...]
    metadata: Any


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--k", type=int, default=None, help="recall k (default: the token budget decides)")
    p.add_argument("--only", default=None, help="a regex: keep only the filter cases it matches")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--walk-min-estimate", type=int, default=8_000)
    p.add_argument("--data-dir", type=Path, default=os.environ.get("HINDSIGHT_BENCH_PGDATA") or None)
    args = p.parse_args(argv)

    import re

    from shared_core import EngineConfig, MemoryEngine

    bank = f"bench-latency-v{CORPUS_VERSION}-{args.size}"
    queries = make_queries(args.queries)
    cases: list[tuple[str, dict[str, Any], Any]] = [("none", {}, lambda m: True)]
    cases += [c for c in FILTER_CASES if not args.only or re.search(args.only, c[0])]
    extra: dict[str, Any] = {"reranker": "none"} | ({"k": args.k} if args.k else {})
    report: dict[str, Any] = {
        "bank": bank,
        "k": args.k,
        "rounds": args.rounds,
        "walk_min_estimate": args.walk_min_estimate,
        "cases": {},
    }
    loads = [os.getloadavg()[0]]
    with MemoryEngine(data_dir=args.data_dir, config=EngineConfig()) as engine:
        exact_settings = engine.recall_settings
        walk_settings = dataclasses.replace(exact_settings, filter_walk_min_estimate=args.walk_min_estimate)
        sides = {"walk": walk_settings, "exact": exact_settings}
        for name, options, match in cases:
            times: dict[str, list[float]] = {"walk": [], "exact": []}
            ratios: list[float] = []
            top10: list[float] = []
            whole: list[float] = []
            same_first = walked = outside = total_returned = 0
            calls = args.warmup + args.rounds * len(queries.texts)
            for i in range(calls):
                text = queries.texts[i % len(queries.texts)]
                got: dict[str, Any] = {}
                order = ("walk", "exact") if i % 2 == 0 else ("exact", "walk")
                for side in order:
                    engine.recall_settings = sides[side]
                    got[side] = engine.recall(
                        text, bank=bank, query_timestamp=queries.query_time, trace=True, **extra, **options
                    )
                if i < args.warmup:
                    continue
                ms: dict[str, float] = {}
                for side, result in got.items():
                    t = result.trace.timings_ms
                    ms[side] = t["total"] - t.get("query_embedding", 0.0)
                    times[side].append(ms[side])
                    for m in result.memories:
                        total_returned += 1
                        if not match(_Seen(tags=tuple(m.tags), metadata=m.metadata)):
                            outside += 1
                ratios.append(ms["walk"] / ms["exact"])
                walked += any("HNSW scan of the top" in n for n in got["walk"].trace.notes)
                w = [m.id for m in got["walk"].memories]
                e = [m.id for m in got["exact"].memories]
                if e:
                    top10.append(len(set(e[:10]) & set(w[:10])) / len(e[:10]))
                    whole.append(len(set(e) & set(w)) / len(e))
                    same_first += bool(w) and w[0] == e[0]
            loads.append(os.getloadavg()[0])
            n = len(ratios)
            row = {
                "walk_p50_ms": statistics.median(times["walk"]),
                "exact_p50_ms": statistics.median(times["exact"]),
                "paired_ratio_p50": statistics.median(ratios),
                "top10_share_mean": statistics.mean(top10) if top10 else None,
                "top10_share_min": min(top10) if top10 else None,
                "returned_share_mean": statistics.mean(whole) if whole else None,
                "returned_share_min": min(whole) if whole else None,
                "same_first": same_first,
                "walked": walked,
                "calls": n,
                "outside_filter": outside,
                "returned": total_returned,
            }
            report["cases"][name] = row
            print(
                f"{name[:44]:44s} walk {row['walk_p50_ms']:6.1f} exact {row['exact_p50_ms']:6.1f} ms"
                f" (paired {row['paired_ratio_p50']:.2f}), top10 {row['top10_share_mean'] or 0:.3f}"
                f" / {row['top10_share_min'] or 0:.2f}, returned {row['returned_share_mean'] or 0:.3f}"
                f" / {row['returned_share_min'] or 0:.2f}, same first {same_first}/{n},"
                f" walked {walked}/{n}, outside {outside}/{total_returned}, load {loads[-1]:.2f}",
                flush=True,
            )
        engine.recall_settings = exact_settings
    report["load"] = {"min": min(loads), "max": max(loads)}
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
