"""The graph arm's ablation on LoCoMo, cheaply: each conversation is retained once and every
selected question is recalled four ways (learned reranker or passthrough, with or without the
graph arm), so the four numbers share one index. R@k as in ``benchmarks/locomo.py``.

    .venv/bin/python benchmarks/graph_ablation.py --conversations 5-9 --categories multi-hop
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


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--conversations", default="5-9")
    p.add_argument("--categories", nargs="+", default=["multi-hop"], help="category names, or 'all'")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA_PATH)
    p.add_argument("--k", type=int, default=10)
    args = p.parse_args(argv)
    convs = [c for i, c in enumerate(load_locomo(args.data)) if i in parse_selection(args.conversations, 10)]
    wanted = set(CATEGORY_NAMES.values()) if args.categories == ["all"] else set(args.categories)
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
