"""Filtered recall against unfiltered recall on one bench bank, calls interleaved.

    HINDSIGHT_BENCH_PGDATA=/tmp/filt-bench .venv/bin/python benchmarks/filtered_latency.py \
        --size 100000 --rounds 2 [--out F.json] [--only team]

For every bench query, the unfiltered recall and each case of ``recall_latency.FILTER_CASES``
run one after another (the order rotated per query), in one process on one server, so machine
load hits them alike and the ratio ``filtered p50 / unfiltered p50`` is read within one run.
Reported per case: the headline p50 / p95 (total without the query embedding and rerank, as
``recall_latency.py``), its ratio to the unfiltered p50, the p50 of the stages where a filtered
recall spends its time, memories returned, and the load average over the run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import CORPUS_VERSION, make_corpus, make_queries
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
    matches = {"none": args.size, **filter_matches(make_corpus(args.size))}
    timings: dict[str, list[dict[str, float]]] = {name: [] for name, _ in cases}
    returned: dict[str, list[int]] = {name: [] for name, _ in cases}
    loads = [os.getloadavg()[0]]
    config = EngineConfig(extract_entities=False, extract_dates=False)
    with MemoryEngine(data_dir=args.data_dir, config=config) as engine:

        def call(i: int, options: dict[str, Any]) -> tuple[dict[str, float], int]:
            result = engine.recall(
                queries.texts[i % len(queries.texts)],
                bank=bank,
                query_timestamp=queries.query_time,
                trace=True,
                **({"reranker": "none"} | options),
            )
            assert result.trace is not None
            return dict(result.trace.timings_ms), len(result.memories)

        total = args.warmup + args.rounds * len(queries.texts)
        for i in range(total):
            shift = i % len(cases)
            for name, options in cases[shift:] + cases[:shift]:
                t, n = call(i, options)
                if i >= args.warmup:
                    timings[name].append(t)
                    returned[name].append(n)
            if i % 10 == 0:
                loads.append(os.getloadavg()[0])
    loads.append(os.getloadavg()[0])

    base = summarise(timings["none"])[HEADLINE]["p50"]
    summary: dict[str, Any] = {
        "size": args.size,
        "calls_per_case": len(timings["none"]),
        "load": [round(min(loads), 2), round(max(loads), 2)],
        "cases": {},
    }
    print(
        f"size {args.size}, {len(timings['none'])} calls per case, load avg {min(loads):.2f}-{max(loads):.2f}"
    )
    header = f"{'case':62s} {'match':>7s} {'p50':>6s} {'p95':>6s} {'ratio':>6s} " + " ".join(
        f"{s[:9]:>9s}" for s in _STAGES
    )
    print(header)
    for name, _ in cases:
        s = summarise(timings[name])
        row = {
            "matching": matches.get(name),
            "p50": s[HEADLINE]["p50"],
            "p95": s[HEADLINE]["p95"],
            "ratio": round(s[HEADLINE]["p50"] / base, 2),
            "stages_p50": {st: s[st]["p50"] for st in _STAGES if st in s},
            "stages_n": {st: s[st]["n"] for st in _STAGES if st in s},
            "memories_returned_mean": round(statistics.fmean(returned[name]), 1),
        }
        summary["cases"][name] = row
        cells = " ".join(
            f"{row['stages_p50'][st]:9.2f}" if st in row["stages_p50"] else f"{'-':>9s}" for st in _STAGES
        )
        print(
            f"{name[:62]:62s} {row['matching']:7d} {row['p50']:6.1f} {row['p95']:6.1f} "
            f"{row['ratio']:6.2f} {cells}"
        )
    if args.out is not None:
        args.out.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
