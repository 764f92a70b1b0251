"""Run every benchmark; ``--quick`` (what ``make bench`` runs) is the speed suite only.

    .venv/bin/python benchmarks/run_all.py --quick     # retain 1k, recall latency at 2k, each
                                                       # beside the plain pgvector baseline
    .venv/bin/python benchmarks/run_all.py             # full: LoCoMo all 10, latency at 10k and
                                                       # 100k (+ PGVectorStore), retain 1k and 10k

At the end it prints one table: per workload ours, the plain pgvector baseline measured in the
same run on the same server (``_plain.py``), their ratio and the target (issue 15).

Results go to ``--results`` (default ``~/.cache/hindsight-retrievers/bench-results/<quick|full>``)
so a quick run never overwrites the committed full results in ``docs/benchmarks/``. Each step
runs in its own process; a failing step is reported and the others still run. Exit status is
non-zero when a step failed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _corpus import cache_dir  # noqa: E402

QUICK_BUDGET_S = 300


def steps(quick: bool, results: Path) -> list[tuple[str, list[str]]]:
    if quick:
        return [
            ("retain (1k)", ["retain.py", "--quick", "--out", str(results / "retain.json")]),
            (
                "recall latency (2k)",
                [
                    "recall_latency.py",
                    "--quick",
                    "--out",
                    str(results / "latency.json"),
                    "--md",
                    str(results / "latency.md"),
                ],
            ),
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


Row = tuple[str, str, str, str, str]


def _retain_rows(report: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for run in report.get("runs", []):
        plain = report.get("plain", {}).get(str(run.get("memories")))
        if "per_second" not in run or not plain:
            continue
        n = run["memories"]
        first, after = plain["index_first"]["per_second"], plain["index_after"]["per_second"]
        if run["mode"] == "b-bulk":
            label = f"bulk retain (retain_bulk), {n:,} (extraction on, vectors given), memories/s"
            target = ">= 1,000/s or plain/ours <= 2"
        elif run["mode"] == "b-precomputed":
            per = f"1 call per {run['batch']:,}, " if "batch" in run else ""
            label = f"bulk retain, {per}{n:,} (extraction on, vectors given), memories/s"
            target = ">= 1,000/s or plain/ours <= 2"
        elif run["mode"] == "c-no-extraction":
            label = f"bulk retain, {n:,} (extraction off, vectors given), memories/s"
            target = "(breakdown)"
        else:
            label = f"bulk retain, {n:,} (engine embeds), memories/s"
            target = "(breakdown)"
        rows.append(
            (
                label,
                f"{run['per_second']:,.0f}",
                f"{first:,.0f} (index first) / {after:,.0f} (index after)",
                f"{first / run['per_second']:.1f}x / {after / run['per_second']:.1f}x slower",
                target,
            )
        )
        if "single_retain_ms" in run:
            ours, base = run["single_retain_ms"]["p50"], plain["single_insert_ms"]["p50"]
            rows.append(
                (
                    f"one memory into a {n:,} bank, p50 ms (no embedding)",
                    f"{ours:.1f}",
                    f"{base:.1f} (one-row INSERT)",
                    f"{ours / base:.1f}x",
                    "<= 20 ms",
                )
            )
    return rows


def _latency_rows(report: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for n, size in report.get("sizes", {}).items():
        label = f"{int(n):,}"
        ours1, plain1, plain8 = size["ours_1"], size["plain_1"], size["plain_8"]
        head = ours1["stages"]["total_excl_embedding_rerank"]["p50"]
        total = ours1["stages"]["total"]["p50"] - ours1["stages"].get("rerank", {}).get("p50", 0.0)
        rows.append(
            (
                f"recall at {label}, p50 ms excluding the query embedding",
                f"{head:.1f}",
                f"{plain1['sql']['p50']:.1f} (top-10 SQL)",
                f"{head / plain1['sql']['p50']:.1f}x",
                "<= 30 ms at 100k",
            )
        )
        rows.append(
            (
                f"recall at {label}, p50 ms with the query embedding",
                f"{total:.1f}",
                f"{plain1['sql_plus_embedding']['p50']:.1f} (top-10 + embedding)",
                f"{total / plain1['sql_plus_embedding']['p50']:.1f}x",
                "ratio <= 3",
            )
        )
        ours8 = size["ours_8"]["qps"] / ours1["qps"]
        rows.append(
            (
                f"recall at {label}, 8 clients / 1 client throughput",
                f"{ours8:.2f}",
                f"{plain8['qps'] / plain1['qps']:.2f}",
                f"{ours8 / (plain8['qps'] / plain1['qps']):.2f}",
                "ours >= 1.5",
            )
        )
        if "single_retain_ms" in size and "plain_single_insert_ms" in size:
            ours, base = size["single_retain_ms"]["p50"], size["plain_single_insert_ms"]["p50"]
            rows.append(
                (
                    f"one memory into a {label} bank, p50 ms (no embedding)",
                    f"{ours:.1f}",
                    f"{base:.1f} (one-row INSERT)",
                    f"{ours / base:.1f}x",
                    "<= 20 ms at 100k",
                )
            )
    return rows


def summary_table(results: Path) -> str:
    """One markdown table from the step reports in ``results``: ours, baseline, ratio, target."""
    rows: list[Row] = []
    for name, reader in (("retain.json", _retain_rows), ("latency.json", _latency_rows)):
        path = results / name
        if path.exists():
            rows += reader(json.loads(path.read_text(encoding="utf-8")))
    lines = [
        "| workload | ours | plain pgvector (same run) | ratio | target |",
        "|---|---:|---:|---:|---|",
    ]
    lines += [f"| {' | '.join(r)} |" for r in rows]
    return "\n".join(lines)


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
    table = summary_table(results)
    print("\n" + table)
    (results / "summary.md").write_text(
        f"{table}\n\nCommand: python benchmarks/run_all.py {' '.join(argv or sys.argv[1:])}; "
        f"{total:.0f} s; load average at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs.\n",
        encoding="utf-8",
    )
    if args.quick and total > QUICK_BUDGET_S:
        print(f"  WARNING: the quick run took longer than {QUICK_BUDGET_S} s")
    return 1 if any(code for _, code, _ in summary) else 0


if __name__ == "__main__":
    raise SystemExit(main())
