"""The graph arm's ablation on LoCoMo, cheaply: each conversation is retained once and every
selected question is recalled four ways (learned reranker or passthrough, with or without the
graph arm), so the four numbers share one index. R@k as in ``benchmarks/locomo.py``.

    .venv/bin/python benchmarks/graph_ablation.py --conversations 5-9 --categories multi-hop

``--traces DIR`` reads what ``benchmarks/reranker_data.py --data-dir DIR`` stored instead (no
retain, no recall) and says where the gold evidence of the selected questions sits: among the
fused candidates at all, in the fused top k, in the graph arm's list, and in the graph arm only.
It answers "can the graph arm help by finding memories, or only by ranking them?".

    .venv/bin/python benchmarks/graph_ablation.py --traces /tmp/rr --conversations 0-4

``--traces DIR --rank`` ranks the stored candidates as recall does with the shipped learned
reranker (``benchmarks/temporal_ablation.py``'s ``ours``, second graph round and boosts
included) and again with the graph arm's own ranks removed (RRF recomputed with the default arm
weights, candidates only it found dropped, the second round still marked): R@k per category,
i.e. what the PageRank arm earns apart from the second round (the end-to-end ``ours:no-graph``
drops both).

    .venv/bin/python benchmarks/graph_ablation.py --traces /tmp/rr --conversations 5-9 --rank --categories all
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import CATEGORY_NAMES, DEFAULT_DATA_PATH, load_locomo, parse_selection, recall_at_k
from _peers import SEARCH_K, EmbeddingCache
from locomo import ours

NO_GRAPH = ("semantic", "keyword", "temporal")
VARIANTS: dict[str, dict[str, Any]] = {
    "learned": {},
    "learned, no graph": {"arms": NO_GRAPH},
    "passthrough": {"reranker": "none"},
    "passthrough, no graph": {"reranker": "none", "arms": NO_GRAPH},
}


def evidence_coverage(blocks: Sequence[dict[str, Any]], categories: set[int], k: int) -> dict[str, int]:
    """Counts of gold evidence turns of the questions in ``categories``, over stored traces.

    >>> block = {"memories": {"a": {"dia_id": "D1:1"}, "b": {"dia_id": "D2:4"}},
    ...          "questions": [{"category": 1, "evidence": ["D1:1", "D2:4", "D3:1"],
    ...                         "candidates": [{"id": "a", "position": 0, "ranks": {"semantic": 1}},
    ...                                        {"id": "b", "position": 12, "ranks": {"graph": 3}}]}]}
    >>> evidence_coverage([block], {1}, 10)
    {'evidence': 3, 'candidates': 2, 'fused_top_k': 1, 'graph': 1, 'graph_top_k': 1, 'graph_only': 1}
    """
    out = dict.fromkeys(("evidence", "candidates", "fused_top_k", "graph", "graph_top_k", "graph_only"), 0)
    for block in blocks:
        dia = {mid: str(m["dia_id"]) for mid, m in block["memories"].items()}
        for q in block["questions"]:
            if q["category"] not in categories:
                continue
            gold = set(q["evidence"])
            out["evidence"] += len(gold)
            for c in q["candidates"]:
                if dia[c["id"]] not in gold:
                    continue
                ranks = c["ranks"]
                out["candidates"] += 1
                out["fused_top_k"] += c["position"] < k
                if "graph" in ranks:
                    out["graph"] += 1
                    out["graph_top_k"] += ranks["graph"] <= k
                    out["graph_only"] += len(ranks) == 1
    return out


def _coverage_report(data_dir: Path, selection: str, wanted: set[str], k: int) -> int:
    from reranker_data import load_rows

    categories = {c for c, name in CATEGORY_NAMES.items() if name in wanted}
    indices = sorted(parse_selection(selection, 10))
    counts = evidence_coverage(load_rows(data_dir, "locomo", indices), categories, k)
    print(f"gold evidence of {', '.join(sorted(wanted))} questions, conversations {selection}:")
    for name, n in counts.items():
        print(f"  {name:12s} {n:5d}  ({100 * n / max(counts['evidence'], 1):5.1f}%)")
    return 0


def without_graph_arm(q: Any) -> Any:
    """``q`` (train_reranker.QuestionData) as recall fuses it without the graph arm's own
    list: its ranks gone, RRF recomputed with the default arm weights, candidates only it found
    dropped, features recomputed (the second round is marked later, as recall marks it); None
    when only the graph arm found anything."""
    import temporal_ablation as A

    return A.without_arm(q, "graph")


def _rank_report(data_dir: Path, selection: str, wanted: set[str], k: int) -> int:
    import numpy as np
    import temporal_ablation as A
    import train_reranker as T
    from reranker_data import load_rows

    from shared_core.recall.learned import LearnedScorer

    model = LearnedScorer.default()
    res: dict[str, dict[str, list[float]]] = {"ours": {}, "without the PageRank arm's list": {}}
    for block in load_rows(data_dir, "locomo", sorted(parse_selection(selection, 10))):
        for raw, q in zip(block["questions"], T.questions_of(block), strict=True):
            category = T.LOCOMO_CATEGORIES[q.category]
            if category not in wanted:
                continue
            text = raw["question"]
            blind = without_graph_arm(q)
            for name, data in zip(res, (q, blind), strict=True):
                order = [] if data is None else A._ranked(data, model, text)
                for group in ("overall", category):
                    res[name].setdefault(group, []).append(T.recall_at(order, q.evidence, k))
    groups = list(res["ours"])
    print(
        f"| R@{k}, conversations {selection} | "
        + " | ".join(f"{g} (n={len(res['ours'][g])})" for g in groups)
        + " |"
    )
    print("|---|" + "---:|" * len(groups))
    for name, table in res.items():
        print(f"| {name} | " + " | ".join(f"{100 * np.mean(table[g]):.1f}" for g in groups) + " |")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--conversations", default="5-9")
    p.add_argument("--categories", nargs="+", default=["multi-hop"], help="category names, or 'all'")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA_PATH)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--traces", type=Path, default=None, help="stored reranker_data.py output to read")
    p.add_argument(
        "--rank",
        action="store_true",
        help="with --traces: R@k of the learned ranking with and without the graph arm's own list",
    )
    args = p.parse_args(argv)
    wanted = set(CATEGORY_NAMES.values()) if args.categories == ["all"] else set(args.categories)
    if args.traces is not None and args.rank:
        return _rank_report(args.traces, args.conversations, wanted, args.k)
    if args.traces is not None:
        return _coverage_report(args.traces, args.conversations, wanted, args.k)
    convs = [c for i, c in enumerate(load_locomo(args.data)) if i in parse_selection(args.conversations, 10)]
    cache = EmbeddingCache(cache_dir="default")
    cache.ensure([t.text for c in convs for t in c.turns])
    system = ours("default", cache)
    base = dict(system.params)
    recalls: dict[str, list[float]] = {v: [] for v in VARIANTS}
    t0 = time.perf_counter()
    try:
        for conv in convs:
            system.index(conv.turns, query_time=conv.query_time)
            for q in conv.questions:
                if CATEGORY_NAMES.get(q.category) not in wanted:
                    continue
                for name, extra in VARIANTS.items():
                    system.params = base | extra
                    got = system.search(q.question, SEARCH_K)
                    recalls[name].append(recall_at_k(got, q.evidence, (args.k,))[args.k])
            # running totals after every conversation: a long run is readable while it goes
            print(f"R@{args.k} (%) through conversation {conv.index} ({time.perf_counter() - t0:.0f}s):")
            for name, values in recalls.items():
                print(f"  {name:24s} {100 * sum(values) / max(len(values), 1):5.1f}  (n={len(values)})")
            sys.stdout.flush()
    finally:
        system.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
