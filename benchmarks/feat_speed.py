"""The learned reranker's featurize (and featurize + score, both stages) of this tree against
another tree's, interleaved in one process, on the benchmark lists of ``learned_speed.py``
(300 synthetic chat-like texts, three questions) and ``text_years_speed.py`` (155 wiki-dev
paragraphs and 155 LoCoMo turns, a year-window question), every list new to the process.

Every list's feature matrix and scores must be equal (``np.array_equal``, bit for bit) in the
two trees, else the script fails. Times are CPU times of the thread: per list the best of
``--rounds`` runs in each tree, the trees alternating list by list (a busy neighbour hits both
alike); reported as the mean over the lists and the median of the per-list changes. "score"
is featurize + both stages of the shipped model (LearnedScorer.prepare + probabilities).

    git worktree add --detach /tmp/base c0b7552
    .venv/bin/python benchmarks/feat_speed.py --a /tmp/base
    .venv/bin/python benchmarks/feat_speed.py --a /tmp/base --out docs/benchmarks/feat_speed.json
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np

from shared_core.recall import learned


def load_learned(tree: Path) -> ModuleType:
    """``shared_core.recall.learned`` of the tree at ``tree``, beside this tree's (the
    ``shared_core`` modules are swapped out while it is imported, then put back)."""
    ours = {k: v for k, v in sys.modules.items() if k == "shared_core" or k.startswith("shared_core.")}
    for k in ours:
        del sys.modules[k]
    sys.path.insert(0, str(tree))
    try:
        other = importlib.import_module("shared_core.recall.learned")
    finally:
        sys.path.remove(str(tree))
        for k in [k for k in sys.modules if k == "shared_core" or k.startswith("shared_core.")]:
            del sys.modules[k]
        sys.modules.update(ours)
    if not str(other.__file__).startswith(str(tree.resolve())):
        raise SystemExit(f"{other.__file__} is not in {tree}")
    return other


def _both_stages(mod: ModuleType, scorer: Any, query: Any, cands: Sequence[Any]) -> list[float]:
    rows, seeds = scorer.prepare(query, cands)
    marks = {i: seeds[:1] for i in range(len(rows)) if i not in seeds}
    out: list[float] = scorer.probabilities(rows, seeds, marks)
    return out


def measure(a: Path, repeat: int, rounds: int) -> dict[str, Any]:
    import learned_speed as ls
    import text_years_speed as ts
    from _locomo import load_locomo
    from dated_paragraphs import DATASETS

    old = load_learned(a)
    wiki = [t.text for c in DATASETS["wiki-dev"]() for t in c.turns]
    chat = [t.text for c in load_locomo() for t in c.turns]
    fresh = [ls.candidates(300, seed=1000 + i) for i in range(repeat)]
    jobs = [(f"synthetic 300, {q!r}", q, w, fresh) for q, w in ls._QUESTIONS]
    jobs += [
        ("wiki-dev paragraphs 155", ts._QUESTIONS["encyclopedia"], ts._WINDOW, ts._lists(wiki, 155, repeat)),
        ("LoCoMo turns 155", ts._QUESTIONS["chat"], ts._WINDOW, ts._lists(chat, 155, repeat)),
    ]
    trees = {"a": (old, old.LearnedScorer.default()), "b": (learned, learned.LearnedScorer.default())}
    rows = []
    for name, question, window, lists in jobs:
        queries = {k: mod.QuerySignals.from_query(question, window) for k, (mod, _) in trees.items()}
        for cands in lists:  # the same numbers, bit for bit
            (ma, sa), (mb, sb) = trees["a"], trees["b"]
            fa, fb = ma.featurize(queries["a"], cands), mb.featurize(queries["b"], cands)
            if fa.shape != fb.shape or not np.array_equal(fa, fb):
                raise SystemExit(f"{name}: the feature matrices differ")
            pa, pb = _both_stages(ma, sa, queries["a"], cands), _both_stages(mb, sb, queries["b"], cands)
            if not np.array_equal(np.asarray(pa), np.asarray(pb)):
                raise SystemExit(f"{name}: the scores differ")
        # per list, the best of ``rounds`` CPU times in each tree, the trees alternating
        # list by list (and which goes first, round by round): a busy neighbour hits both alike
        best = {f"{k}_{what}": np.full(len(lists), 1 << 62) for k in trees for what in ("featurize", "score")}
        for r in range(rounds):
            for j, cands in enumerate(lists):
                for k in ("a", "b") if r % 2 == 0 else ("b", "a"):
                    mod, scorer = trees[k]
                    q = queries[k]
                    t = time.thread_time_ns()
                    mod.featurize(q, cands)
                    t1 = time.thread_time_ns()
                    _both_stages(mod, scorer, q, cands)
                    t2 = time.thread_time_ns()
                    best[f"{k}_featurize"][j] = min(best[f"{k}_featurize"][j], t1 - t)
                    best[f"{k}_score"][j] = min(best[f"{k}_score"][j], t2 - t1)
        row: dict[str, Any] = {"lists": name, "n_lists": len(lists)}
        for what in ("featurize", "score"):
            a_ms, b_ms = best[f"a_{what}"] / 1e6, best[f"b_{what}"] / 1e6
            row[f"a_{what}"] = round(float(a_ms.mean()), 3)
            row[f"b_{what}"] = round(float(b_ms.mean()), 3)
            row[f"{what}_paired_median_change_pct"] = round(100 * float(np.median(b_ms / a_ms - 1)), 1)
        rows.append(row)
    return {
        "a": str(a),
        "repeat": repeat,
        "rounds": rounds,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "rows": rows,
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--a", type=Path, required=True, help="the other tree (before)")
    p.add_argument("--repeat", type=int, default=50, help="lists a kind (each timed once a round)")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    result = measure(args.a, args.repeat, args.rounds)
    print(
        f"{args.repeat} lists a kind, each list's best of {args.rounds} CPU times per tree "
        "(trees alternating), "
        "mean over the lists in ms, and the median of the per-list changes, "
        f"load average {result['load_average']}; every list's features and scores bit-identical"
    )
    print(
        "| lists | featurize a ms | featurize b ms | paired change "
        "| featurize + score a ms | featurize + score b ms | paired change |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in result["rows"]:
        print(
            f"| {r['lists']} | {r['a_featurize']} | {r['b_featurize']} "
            f"| {r['featurize_paired_median_change_pct']:+.1f}% | {r['a_score']} | {r['b_score']} "
            f"| {r['score_paired_median_change_pct']:+.1f}% |"
        )
    if args.out:
        from _report import write_json

        write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
