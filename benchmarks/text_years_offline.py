"""The shipped learned reranker on traced candidates (benchmarks/reranker_data.py), with the
window year features read from the written years only ("old", the code before
shared_core/recall/text_years.py) and from the written + implied years ("new"), in one run:
R@1 / R@10 per set, and how many candidate rows' features changed at all. Offline, the same
candidates; the weights are not refitted.

    .venv/bin/python benchmarks/reranker_data.py --conversations all --data-dir D
    .venv/bin/python benchmarks/reranker_data.py --dataset dated-train --conversations all --data-dir D
    .venv/bin/python benchmarks/reranker_data.py --dataset wiki-dev --conversations all --data-dir D
    .venv/bin/python benchmarks/text_years_offline.py --data-dir D [--out F.json]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from dated_paragraphs import CATEGORIES
from reranker_data import DEFAULT_DATA_DIR, data_file
from text_years_speed import written_only
from train_reranker import LOCOMO_CATEGORIES, QuestionData, evaluate, load
from wiki_diagnose import marked

from shared_core.recall import learned
from shared_core.recall.learned import LearnedScorer

SETS: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("LoCoMo 0-4 (train)", "locomo", (0, 1, 2, 3, 4)),
    ("LoCoMo 5-9 (held out)", "locomo", (5, 6, 7, 8, 9)),
    ("dated-train", "dated-train", (0, 1, 2)),
    ("wiki-dev", "wiki-dev", (0, 1)),
)


def _load(dataset: str, banks: Sequence[int], data_dir: Path, old: bool) -> list[QuestionData]:
    new_told = learned._told
    learned._told = written_only if old else new_told  # type: ignore[assignment]
    try:
        return load(dataset, banks, data_dir)
    finally:
        learned._told = new_told


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    scorer = LearnedScorer.default()
    out: dict[str, Any] = {}
    print("| set | questions | candidate rows changed | old R@1 / R@10 | new R@1 / R@10 |")
    print("|---|---:|---:|---:|---:|")
    for label, dataset, wanted in SETS:
        banks = [i for i in wanted if data_file(args.data_dir, dataset, i).exists()]
        if not banks:
            print(f"| {label} | (not traced) | | | |")
            continue
        cats = LOCOMO_CATEGORIES if dataset == "locomo" else CATEGORIES
        old = marked(_load(dataset, banks, args.data_dir, old=True), scorer)
        new = marked(_load(dataset, banks, args.data_dir, old=False), scorer)
        rows = sum(len(q.x) for q in new)
        changed = sum(int((~np.all(a.x == b.x, axis=1)).sum()) for a, b in zip(old, new, strict=True))
        before, after = evaluate(old, scorer, cats), evaluate(new, scorer, cats)
        out[label] = {"banks": banks, "rows": rows, "rows_changed": changed, "old": before, "new": after}
        b, a = before["overall"], after["overall"]
        print(
            f"| {label} {banks} | {len(new)} | {changed} of {rows} | {b['R@1']} / {b['R@10']} "
            f"| {a['R@1']} / {a['R@10']} |",
            flush=True,
        )
    if args.out:
        from _report import write_json

        write_json(args.out, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
