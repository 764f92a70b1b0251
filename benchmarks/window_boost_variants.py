"""The window boost's variants on stored traces: which years a text tells, how wide a stint of
them may be, and the boost's strength (issue 11 item 3, docs/benchmarks/tmp_temporal.md).

Ranks every question of the given sets as ``benchmarks/temporal_ablation.py`` ranks ``ours``
(shipped learned weights, second graph round, the learned profile's boosts), with
``boosts.stated_time_match`` reading the written years only or the told ones
(``text_years.told_years``), ``boosts.STATED_SPAN_MAX_YEARS`` at each width, and
``DEFAULT_LEARNED_TEMPORAL_ALPHA`` at each strength. Prints R@1 / R@5 / R@10 per set (LoCoMo:
overall, temporal, and the questions naming a time). Tune only on LoCoMo 0-4, wiki-dev,
dated-train and dated-prose-train.

    .venv/bin/python benchmarks/reranker_data.py --conversations 0-4 --data-dir D
    .venv/bin/python benchmarks/reranker_data.py --dataset wiki-dev --conversations all --data-dir D
    .venv/bin/python benchmarks/reranker_data.py --dataset dated-prose-train --conversations 0-0 --data-dir D
    .venv/bin/python benchmarks/reranker_data.py --dataset dated-train --conversations 0-1 --data-dir D
    .venv/bin/python benchmarks/window_boost_variants.py --data-dir D locomo:0-4 wiki-dev:0-1 \
        dated-prose-train:0 dated-train:0-1
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import temporal_ablation as A
import train_reranker as T
from reranker_data import DEFAULT_DATA_DIR, load_rows

from shared_core.recall import boosts
from shared_core.recall.learned import LearnedScorer
from shared_core.recall.text_years import told_years, written_years

ANY_SPAN = 10**6


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("sets", nargs="+", type=T.parse_banks, help="NAME:BANKS (locomo:0-4, wiki-dev:0-1)")
    p.add_argument("--widths", type=int, nargs="+", default=[ANY_SPAN, 5, 10, 20])
    p.add_argument("--alphas", type=float, nargs="+", default=[0.5])
    args = p.parse_args(argv)
    model = LearnedScorer.default()
    data = {
        name: [
            (raw["question"], q)
            for block in load_rows(args.data_dir, name, list(banks))
            for raw, q in zip(block["questions"], T.questions_of(block), strict=True)
        ]
        for name, banks in args.sets
    }
    for years, width, alpha in itertools.product(("written", "told"), args.widths, args.alphas):
        boosts.told_years = told_years if years == "told" else written_years  # type: ignore[attr-defined]
        boosts.STATED_SPAN_MAX_YEARS = width  # type: ignore[misc]
        A.DEFAULT_LEARNED_TEMPORAL_ALPHA = alpha  # type: ignore[misc]
        cells = [f"{years} years, span <= {'any' if width == ANY_SPAN else width}, alpha {alpha}"]
        for name, items in data.items():
            res: dict[str, list[list[float]]] = {}
            for text, q in items:
                order = A._ranked(q, model, text)
                groups = ["overall"]
                if name == "locomo":
                    groups += [T.LOCOMO_CATEGORIES[q.category]] + (["names a time"] if q.query.window else [])
                for g in groups:
                    res.setdefault(g, []).append([T.recall_at(order, q.evidence, k) for k in (1, 5, 10)])
            for g in ("overall", "temporal", "names a time") if name == "locomo" else ("overall",):
                r = 100 * np.mean(res[g], axis=0)
                cells.append(f"{name} {g} (n={len(res[g])}) " + " / ".join(f"{v:.1f}" for v in r))
        print(" | ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
