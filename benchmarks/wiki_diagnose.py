"""Which learned feature costs recall on the wiki articles: the shipped reranker on wiki-dev's
traced candidates (benchmarks/reranker_data.py --dataset wiki-dev), against passthrough, and
with one feature at a time neutralised (its column set to the training mean, so it adds
nothing). Offline, the same candidates; wiki-dev only (wiki-test stays for scoring).

    .venv/bin/python benchmarks/reranker_data.py --dataset wiki-dev --data-dir D
    .venv/bin/python benchmarks/wiki_diagnose.py --data-dir D
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from dated_paragraphs import CATEGORIES
from reranker_data import DEFAULT_DATA_DIR, data_file
from train_reranker import FEATURE_NAMES, QuestionData, evaluate, load, with_neighbours

from shared_core.recall.learned import LearnedScorer


def neutralised(scorer: LearnedScorer, feature: str) -> LearnedScorer:
    """``scorer`` with ``feature``'s weight 0 (in both stages)."""
    coef = np.where(np.asarray(scorer.features) == feature, 0.0, scorer.coef)
    first = None if scorer.first_stage is None else neutralised(scorer.first_stage, feature)
    return dataclasses.replace(scorer, coef=coef, first_stage=first)


def marked(qs: Sequence[QuestionData], scorer: LearnedScorer) -> list[QuestionData]:
    if scorer.first_stage is None:
        return list(qs)
    return [
        with_neighbours(q, scorer.first_stage, scorer.neighbour_seeds, scorer.neighbour_window) for q in qs
    ]


def row(label: str, table: dict[str, dict[str, float]]) -> str:
    groups = [g for g in ("overall", *CATEGORIES.values()) if g in table]
    return f"| {label} | " + " | ".join(f"{table[g]['R@1']} / {table[g]['R@10']}" for g in groups) + " |"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--dataset", default="wiki-dev")
    args = p.parse_args(argv)
    banks = [i for i in range(10) if data_file(args.data_dir, args.dataset, i).exists()]
    qs = load(args.dataset, banks, args.data_dir)
    found = np.mean([q.labels.sum() > 0 for q in qs])
    print(f"{args.dataset} banks {banks}: {len(qs)} questions; gold among the candidates: {100 * found:.1f}%")
    shipped = LearnedScorer.default()
    pass_table = evaluate(qs, None, CATEGORIES)
    groups = [g for g in ("overall", *CATEGORIES.values()) if g in pass_table]
    print("| ranking (R@1 / R@10) | " + " | ".join(groups) + " |")
    print("|---|" + "---:|" * len(groups))
    print(row("passthrough", pass_table))
    print(row("shipped", evaluate(marked(qs, shipped), shipped, CATEGORIES)))
    for f in shipped.features:
        if f not in FEATURE_NAMES:
            continue
        s = neutralised(shipped, f)
        print(row(f"shipped without {f}", evaluate(marked(qs, s), s, CATEGORIES)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
