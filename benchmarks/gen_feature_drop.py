"""Which columns of the learned reranker carry over from LoCoMo to other chats (issue 11, gen20).

Offline, on reranker_data.py traces: the shipped model (or ``--weights``) scores each question's
fused candidates; for every column, the same model with that column's contribution removed (its
standardised value set to 0, i.e. the training mean) scores them again. A column whose removal
raises R@10 on a chat set the model never saw (life-chats-train) but lowers it on LoCoMo 0-4 is
a LoCoMo-only prior. Also: for questions whose gold falls out of the top 10, the mean per-column
logit gap between the gold and the 10th candidate (which columns push the gold down).

    .venv/bin/python benchmarks/reranker_data.py --dataset life-chats-train --data-dir /tmp/rr
    .venv/bin/python benchmarks/reranker_data.py --conversations 0-4 --data-dir /tmp/rr
    .venv/bin/python benchmarks/gen_feature_drop.py --data-dir /tmp/rr \\
        --sets locomo:0-4 life-chats-train:0-7

The end-to-end numbers are dated_paragraphs.py's / locomo.py's; these are the offline
reranking of the traced candidates (passthrough's fused lists), so they only rank causes.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from train_reranker import (
    DATED_CATEGORIES,
    LOCOMO_CATEGORIES,
    QuestionData,
    evaluate,
    load,
    parse_banks,
    with_neighbours,
)

from shared_core.recall.learned import FEATURE_NAMES, LearnedScorer


def _zeroed(model: LearnedScorer, feature: str) -> LearnedScorer:
    """``model`` without ``feature``'s contribution (also in its first stage)."""
    coef = model.coef.copy()
    coef[model.features.index(feature)] = 0.0
    first = model.first_stage
    if first is not None and feature in first.features:
        fc = first.coef.copy()
        fc[first.features.index(feature)] = 0.0
        first = dataclasses.replace(first, coef=fc)
    return dataclasses.replace(model, coef=coef, first_stage=first)


def _marked(qs: Sequence[QuestionData], model: LearnedScorer) -> list[QuestionData]:
    if model.first_stage is None:
        return list(qs)
    return [with_neighbours(q, model.first_stage, model.neighbour_seeds, model.neighbour_window) for q in qs]


def _gaps(qs: Sequence[QuestionData], model: LearnedScorer) -> tuple[int, dict[str, float]]:
    """(questions with a gold outside the top 10, mean per-column logit gap gold - 10th)."""
    out = np.zeros(len(model.features))
    n = 0
    cols = [FEATURE_NAMES.index(f) for f in model.features]
    for q in qs:
        logits = model.logits(q.x)
        order = np.argsort(-logits, kind="stable")
        if len(order) < 10:
            continue
        tenth = order[9]
        top = set(order[:10].tolist())
        for g in np.flatnonzero(q.labels):
            if int(g) in top:
                continue
            zg = (q.x[g, cols] - model.mean) / model.scale * model.coef
            zt = (q.x[tenth, cols] - model.mean) / model.scale * model.coef
            out += zg - zt
            n += 1
    return n, {f: round(float(v / max(n, 1)), 3) for f, v in zip(model.features, out, strict=True)}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--data-dir", type=Path, required=True)
    p.add_argument("--sets", nargs="+", default=["locomo:0-4", "life-chats-train:0-7"])
    p.add_argument("--weights", type=Path, default=None, help="a learned_reranker.json (default: shipped)")
    args = p.parse_args(argv)
    model = (
        LearnedScorer.default()
        if args.weights is None
        else LearnedScorer.from_dict(__import__("json").loads(args.weights.read_text()))
    )
    sets = {}
    for spec in args.sets:
        name, banks = parse_banks(spec)
        sets[spec] = _marked(load(name, banks, args.data_dir), model)

    def r10(spec: str, qs: Sequence[QuestionData], m: LearnedScorer) -> dict[str, float]:
        cats = LOCOMO_CATEGORIES if spec.startswith("locomo") else DATED_CATEGORIES
        return {g: v["R@10"] for g, v in evaluate(_marked(qs, m) if m is not model else qs, m, cats).items()}

    base = {spec: r10(spec, qs, model) for spec, qs in sets.items()}
    print("| column dropped | " + " | ".join(f"{s} R@10 (delta)" for s in sets) + " |")
    print("|---|" + "---:|" * len(sets))
    print("| (none: shipped) | " + " | ".join(f"{base[s]['overall']:.1f}" for s in sets) + " |")
    for f in model.features:
        m = _zeroed(model, f)
        cells = []
        for spec, qs in sets.items():
            v = r10(spec, qs, m)["overall"]
            cells.append(f"{v:.1f} ({v - base[spec]['overall']:+.1f})")
        print(f"| {f} | " + " | ".join(cells) + " |", flush=True)
    for spec, qs in sets.items():
        print(f"\n{spec} by kind (shipped):", {k: v for k, v in base[spec].items()})
        n, gaps = _gaps(qs, model)
        worst = sorted(gaps.items(), key=lambda t: t[1])[:8]
        print(
            f"{spec}: {n} gold candidates outside the top 10; columns pushing them down most (gold - 10th):"
        )
        for f, g in worst:
            print(f"  {f:32s} {g:+.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
