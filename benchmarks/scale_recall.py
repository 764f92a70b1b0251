"""Recall latency on a large bank already loaded, in rounds: the first rounds show the cache
warming, the later ones the steady state (issue 15.4 at whatever size the 1M bank reached).

    HINDSIGHT_BENCH_PGDATA=/work/bench/pgdata-1m XDG_DATA_HOME=/tmp/scale-xdg \
        .venv/bin/python benchmarks/scale_recall.py --bank bench-latency-v2-1000000 \
        --rounds 3 --calls 100 --out docs/benchmarks/latency_1m_rounds.json

Each round is ``recall_latency.measure_ours`` (one client, ``reranker="none"``, ``budget="mid"``,
the latency benchmark's 50 queries): p50/p95/p99 of every traced stage and of the headline
(total minus query embedding minus rerank), with the load average at its start and end. Nothing
is loaded or written.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import make_queries
from _plain import data_root
from _report import write_json
from recall_latency import HEADLINE, measure_ours


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bank", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--calls", type=int, default=100, help="recalls per round")
    p.add_argument("--data-dir", type=Path, default=os.environ.get("HINDSIGHT_BENCH_PGDATA") or None)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    from shared_core import EngineConfig, MemoryEngine

    queries = make_queries(50)
    report: dict[str, Any] = {"bank": args.bank, "rounds": []}
    config = EngineConfig(extract_entities=False, extract_dates=False)
    with MemoryEngine(data_dir=args.data_dir or data_root("bench-pgdata"), config=config) as engine:
        report["memories"] = engine.stats(args.bank).memories
        for k in range(args.rounds):
            start = [round(x, 2) for x in os.getloadavg()]
            row = measure_ours(engine, args.bank, queries, calls=args.calls, clients=1)
            row.update(
                round=k + 1,
                at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                loadavg={"start": start, "end": [round(x, 2) for x in os.getloadavg()]},
            )
            report["rounds"].append(row)
            head = row["stages"][HEADLINE]
            print(
                f"round {k + 1}: {HEADLINE} p50 {head['p50']:.1f} / p95 {head['p95']:.1f} ms, "
                f"load {row['loadavg']}",
                flush=True,
            )
    if args.out:
        write_json(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
