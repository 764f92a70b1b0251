"""Per question, where ours loses to (and wins over) the equal-weight dense + BM25 RRF on a
dated_paragraphs.py set (gen20 error analysis; run it on a TRAIN split only).

    .venv/bin/python benchmarks/gen_losses.py --dataset life-chats-train --out /tmp/losses.json

Prints the count of questions lost / won at R@10 by kind, then each lost question with its
gold messages (and their rank in each system) and ours' first three results.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import recall_at_k
from _peers import SEARCH_K, EmbeddingCache
from dated_paragraphs import CATEGORIES, build_dataset
from locomo import make_system


def _ranked(system_name: str, convs: Sequence, cache: EmbeddingCache) -> list[list[str]]:  # type: ignore[type-arg]
    system = make_system(system_name, cache)
    out = []
    try:
        for conv in convs:
            system.index(conv.turns, query_time=conv.query_time)
            out += [system.search(q.question, SEARCH_K) for q in conv.questions]
    finally:
        system.close()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--dataset", required=True)
    p.add_argument("--a", default="ours")
    p.add_argument("--b", default="langchain-ensemble")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if args.dataset.endswith("-test") or args.dataset in {
        "said-chats",
        "wiki-test",
        "dated-hard",
        "dated-long",
    }:
        p.error("error analysis runs on training / tuning sets only")
    convs = build_dataset(args.dataset)
    cache = EmbeddingCache()
    ra, rb = _ranked(args.a, convs, cache), _ranked(args.b, convs, cache)
    texts = {t.dia_id: t.text for c in convs for t in c.turns}
    qs = [q for c in convs for q in c.questions]
    lost: Counter[str] = Counter()
    won: Counter[str] = Counter()
    rows = []
    for q, a, b in zip(qs, ra, rb, strict=True):
        kind = CATEGORIES[q.category]
        ka, kb = recall_at_k(a, q.evidence, (10,))[10], recall_at_k(b, q.evidence, (10,))[10]
        if ka < kb:
            lost[kind] += 1
        elif ka > kb:
            won[kind] += 1
        rows.append(
            {
                "question": q.question,
                "kind": kind,
                "a_r10": ka,
                "b_r10": kb,
                "gold": [
                    {
                        "text": texts[e],
                        "rank_a": a.index(e) + 1 if e in a else None,
                        "rank_b": b.index(e) + 1 if e in b else None,
                    }
                    for e in q.evidence
                ],
                "a_top3": [texts[d] for d in a[:3]],
            }
        )
    print(f"{args.a} vs {args.b} on {args.dataset}: R@10 lost / won by kind")
    for kind in sorted(set(lost) | set(won)):
        print(f"  {kind:24s} lost {lost[kind]:3d}  won {won[kind]:3d}")
    for r in rows:
        if r["a_r10"] < r["b_r10"]:
            print(f"\nLOST ({r['kind']}) {r['question']}  R@10 {r['a_r10']:.2f} vs {r['b_r10']:.2f}")
            for g in r["gold"]:
                print(f"   gold [{g['rank_a']} / {g['rank_b']}] {g['text']}")
            for t in r["a_top3"]:
                print(f"   ours: {t}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
