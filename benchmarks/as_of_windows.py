"""Which questions' query windows the "as of X" / "as at X" / "by X" rule moves (issue 11).

The rule is in ``DucklingDateParser.parse_query_dates`` only, so a question whose window is the
same with and without it is ranked exactly as before: a set with no moved window scores as it
did. "Without" is the hull of ``parse_dates`` (what ``parse_query_dates`` returned before).

    .venv/bin/python benchmarks/as_of_windows.py --datasets locomo when-notes dated-long \\
        dated-hard said-chats wiki-test --conversations 0-4
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import load_locomo
from dated_paragraphs import build_dataset

from shared_core.extraction import dates
from shared_core.extraction.dates import DucklingDateParser
from shared_core.types import TimeWindow


def _hull(parser: DucklingDateParser, text: str, ref: dt.datetime) -> TimeWindow | None:
    """What ``parse_query_dates`` returned before the rule: the hull of every mention."""
    windows = [m.window for m in parser.parse_dates(text, ref)]
    if not windows:
        return None
    if len(windows) == 1:
        return windows[0]
    grain = dates._coarsest([w.grain for w in windows])  # what parse_query_dates did before
    return TimeWindow(start=min(w.start for w in windows), end=max(w.end for w in windows), grain=grain)


def _fmt(w: TimeWindow | None) -> str:
    return "none" if w is None else f"{w.start.date()}..{w.end.date()} ({w.grain})"


def _indices(spec: str, n: int) -> list[int]:
    if spec == "all":
        return list(range(n))
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return [i for i in out if i < n]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["locomo"])
    p.add_argument("--conversations", default="all", help="LoCoMo only: 'all', '0-4', '5-9'")
    args = p.parse_args()
    parser = DucklingDateParser()
    for name in args.datasets:
        convs = load_locomo() if name == "locomo" else build_dataset(name)
        picked = _indices(args.conversations, len(convs)) if name == "locomo" else range(len(convs))
        total = moved = 0
        for i in picked:
            conv = convs[i]
            for q in conv.questions:
                total += 1
                before = _hull(parser, q.question, conv.query_time)
                after = parser.parse_query_dates(q.question, conv.query_time)
                if before != after:
                    moved += 1
                    print(
                        f"  {name} conv {i} cat {q.category}: {q.question!r}: {_fmt(before)} -> {_fmt(after)}"
                    )
        print(f"{name}: {moved} of {total} question windows moved")


if __name__ == "__main__":
    main()
