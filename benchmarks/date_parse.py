"""Date-parsing latency per query (the default ``DucklingDateParser``): median / p95 / max.

    python benchmarks/date_parse.py --rounds 5 --out docs/benchmarks/date_parsing.md

~200 LoCoMo-style questions, written here (half name a time, half do not), are parsed with
``parse_query_dates`` against one reference time. The first parse (Duckling loading, warm-up) is
timed on its own; every query is then parsed ``--rounds`` times and each call timed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

from _report import write_text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from shared_core.extraction.dates import DucklingDateParser

REFERENCE = dt.datetime(2023, 8, 25, 14, 0, tzinfo=dt.UTC)
NAMES = ("Caroline", "Melanie", "Jon", "Gina", "John", "Maria", "Joanna", "Nate", "Tim", "Audrey")

UNDATED = [
    "When did {n} go to the LGBTQ support group?",
    "What fields would {n} be likely to pursue in her education?",
    "What did {n} research?",
    "What is {n}'s identity?",
    "What is {n}'s relationship status?",
    "Where did {n} move from?",
    "How long has {n} had her current group of friends for?",
    "What career path has {n} decided to persue?",
    "Would {n} still want to pursue counseling as a career if she hadn't received support?",
    "What activities does {n} partake in?",
    "When did {n} sign up for a pottery class?",
    "When is {n} going to the transgender conference?",
    "Where has {n} camped?",
    "What do {n}'s kids like?",
    "What books has {n} read?",
    "What does {n} do to destress?",
    "Would {n} be considered a member of the LGBTQ community?",
    "How many children does {n} have?",
    "What instruments does {n} play?",
    "Why did {n} choose the adoption agency she did?",
]

DATED = [
    "What did {n} do last summer?",
    "When did {n} paint a sunrise, was it in 2022?",
    "What did {n} do yesterday?",
    "Where did {n} go two weeks ago?",
    "What happened to {n} the week before last?",
    "What did {n} do last weekend?",
    "What did {n} buy on 7 May 2023?",
    "Which event did {n} attend in June 2023?",
    "What did {n} start in early 2023?",
    "What did {n} plan for Q3 2022?",
    "What has {n} been doing since March?",
    "What did {n} do before June?",
    "Who did {n} meet a couple of days ago?",
    "What did {n} cook a few weeks ago?",
    "Where was {n} in the summer before last?",
    "What did {n} finish last spring?",
    "What did {n} read over the past three months?",
    "What did {n} do on Friday?",
    "What is {n} doing next Friday?",
    "What did {n} do between March and May 2023?",
]

FILLERS = ("", " Please be specific.")


def queries() -> list[str]:
    """200 questions: every template with five names, alternating a trailing filler."""
    out: list[str] = []
    for i, template in enumerate(itertools.chain(UNDATED, DATED)):
        for j in range(5):
            name = NAMES[(i + 2 * j) % len(NAMES)]
            out.append(template.format(n=name) + FILLERS[(i + j) % 2])
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser_args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser_args.add_argument("--rounds", type=int, default=5)
    parser_args.add_argument("--out", type=Path, default=None, help="also write the markdown report here")
    args = parser_args.parse_args(argv)

    parser = DucklingDateParser()
    qs = queries()
    started = time.perf_counter()
    parser.parse_query_dates("What did Caroline do yesterday?", REFERENCE)
    cold_ms = (time.perf_counter() - started) * 1000

    timings: dict[str, list[float]] = {"with a date": [], "without a date": []}
    for _ in range(args.rounds):
        for query in qs:
            started = time.perf_counter()
            window = parser.parse_query_dates(query, REFERENCE)
            elapsed = (time.perf_counter() - started) * 1000
            timings["with a date" if window is not None else "without a date"].append(elapsed)
    found = sum(parser.parse_query_dates(q, REFERENCE) is not None for q in qs)
    everything = [t for ts in timings.values() for t in ts]

    lines = [
        f"Queries: {len(qs)} ({found} with a date window), rounds: {args.rounds}, "
        f"reference time {REFERENCE.isoformat()}.",
        f"First parse (loads Duckling, warms it up): {cold_ms:.1f} ms.",
        "",
        "| queries | calls | median (ms) | p95 (ms) | max (ms) | mean (ms) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, values in (*timings.items(), ("all", everything)):
        if values:
            lines.append(
                f"| {label} | {len(values)} | {statistics.median(values):.3f} | "
                f"{percentile(values, 0.95):.3f} | {max(values):.3f} | "
                f"{statistics.fmean(values):.3f} |"
            )
    report = "\n".join(lines)
    print(report)

    if args.out is not None:
        command = "python benchmarks/date_parse.py " + shlex.join(argv or sys.argv[1:])
        header = [
            "# Date parsing latency",
            "",
            f"Produced by `{command.strip()}` on {dt.date.today().isoformat()} "
            f"(Python {platform.python_version()}, {platform.machine()}, "
            f"{platform.processor() or 'unknown CPU'}).",
            "",
            "Per-query time of `DucklingDateParser.parse_query_dates` on LoCoMo-style questions "
            "written in `benchmarks/date_parse.py`. Questions without a digit or a date word "
            "skip Duckling (pre-check); the budget is < 2 ms median per query.",
            "",
            "",
        ]
        write_text(args.out, "\n".join(header) + report + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
