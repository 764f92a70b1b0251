"""Per-question, paired: the questions whose window the "as of X" / "by X" rule moves, recalled
on one bank with the rule and without it (issue 11).

A LoCoMo run compares two separately built banks, which differ run to run in a few recalls (HNSW's
random layers); the rule moves only a handful of windows, so this recalls exactly those questions
twice on the same bank: once as shipped, once with ``parse_query_dates`` as it was before the rule
(the hull of ``parse_dates``). Defaults otherwise (``ours``).

    .venv/bin/python benchmarks/as_of_paired.py --conversations 0-4
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import KS, load_locomo, recall_at_k
from _peers import EmbeddingCache
from as_of_windows import _hull, _indices
from locomo import ours

from shared_core.extraction.dates import DucklingDateParser
from shared_core.types import TimeWindow, as_utc

_SHIPPED = DucklingDateParser.parse_query_dates


def _before(self: DucklingDateParser, text: str, reference_time: dt.datetime) -> TimeWindow | None:
    return _hull(self, text, as_utc(reference_time))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--conversations", default="0-4")
    args = p.parse_args()
    convs = load_locomo()
    parser = DucklingDateParser()
    rows: list[tuple[int, int, str, dict[int, float], dict[int, float]]] = []
    for i in _indices(args.conversations, len(convs)):
        conv = convs[i]
        moved = [
            q
            for q in conv.questions
            if _hull(parser, q.question, conv.query_time)
            != parser.parse_query_dates(q.question, conv.query_time)
        ]
        if not moved:
            continue
        cache = EmbeddingCache(cache_dir="default")
        cache.ensure([t.text for t in conv.turns])
        system = ours("default", cache)
        try:
            system.index(conv.turns, query_time=conv.query_time)
            for q in moved:
                after = recall_at_k(system.search(q.question), q.evidence)
                DucklingDateParser.parse_query_dates = _before  # type: ignore[method-assign,assignment]
                try:
                    before = recall_at_k(system.search(q.question), q.evidence)
                finally:
                    DucklingDateParser.parse_query_dates = _SHIPPED  # type: ignore[method-assign]
                rows.append((i, q.category, q.question, before, after))
                b, a = ([r[k] for k in (1, 5, 10)] for r in (before, after))
                print(f"conv {i} cat {q.category} {q.question!r}: R@1/5/10 {b} -> {a}", flush=True)
        finally:
            system.close()
    for k in KS[:3]:
        b = sum(r[3][k] for r in rows)
        a = sum(r[4][k] for r in rows)
        print(f"R@{k}: moved questions {len(rows)}, summed recall before {b:.2f} after {a:.2f}")


if __name__ == "__main__":
    main()
