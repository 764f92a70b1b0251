"""Run every benchmark; ``--quick`` (what ``make bench`` runs) in under 10 minutes.

    .venv/bin/python benchmarks/run_all.py --quick     # LoCoMo conversations 0-1,
                                                       # recall latency at 10k, retain at 1k
    .venv/bin/python benchmarks/run_all.py             # full: LoCoMo all 10, latency at 10k and
                                                       # 100k (+ PGVectorStore), retain 1k and 10k

Results go to ``--results`` (default ``~/.cache/hindsight-retrievers/bench-results/<quick|full>``)
so a quick run never overwrites the committed full results in ``docs/benchmarks/``. Each step
runs in its own process; a failing step is reported and the others still run. Exit status is
non-zero when a step failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _corpus import cache_dir  # noqa: E402

QUICK_BUDGET_S = 600


def steps(quick: bool, results: Path) -> list[tuple[str, list[str]]]:
    if quick:
        return [
            (
                "locomo (conversations 0-1)",
                [
                    "locomo.py",
                    "--conversations",
                    "0-1",
                    "--out",
                    str(results / "locomo.json"),
                    "--md",
                    str(results / "locomo.md"),
                ],
            ),
            (
                "recall latency (10k)",
                [
                    "recall_latency.py",
                    "--quick",
                    "--out",
                    str(results / "latency.json"),
                    "--md",
                    str(results / "latency.md"),
                ],
            ),
            ("retain (1k)", ["retain.py", "--quick", "--out", str(results / "retain.json")]),
        ]
    return [
        (
            "locomo (all conversations)",
            [
                "locomo.py",
                "--conversations",
                "all",
                "--out",
                str(results / "locomo.json"),
                "--md",
                str(results / "locomo.md"),
                "--plot",
                str(results / "locomo_recall.png"),
            ],
        ),
        (
            "recall latency (10k, 100k)",
            [
                "recall_latency.py",
                "--sizes",
                "10000",
                "100000",
                "--out",
                str(results / "latency.json"),
                "--md",
                str(results / "latency.md"),
            ],
        ),
        (
            "retain (1k, 10k)",
            ["retain.py", "--sizes", "1000", "10000", "--out", str(results / "retain.json")],
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--results", type=Path, default=None)
    args = p.parse_args(argv)
    results = args.results or cache_dir() / "bench-results" / ("quick" if args.quick else "full")
    results.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    started = time.perf_counter()
    summary = []
    for name, cmd in steps(args.quick, results):
        print(f"\n=== {name}: {' '.join(cmd)}", flush=True)
        t0 = time.perf_counter()
        code = subprocess.call([sys.executable, str(HERE / cmd[0]), *cmd[1:]], env=env)
        summary.append((name, code, time.perf_counter() - t0))
    total = time.perf_counter() - started
    print("\n=== summary")
    for name, code, seconds in summary:
        print(f"  {'ok  ' if code == 0 else 'FAIL'} {name}: {seconds:.0f} s")
    print(f"  total {total:.0f} s; results in {results}")
    if args.quick and total > QUICK_BUDGET_S:
        print(f"  WARNING: the quick run took longer than {QUICK_BUDGET_S} s")
    return 1 if any(code for _, code, _ in summary) else 0


if __name__ == "__main__":
    raise SystemExit(main())
