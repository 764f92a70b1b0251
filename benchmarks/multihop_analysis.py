"""Where multi-hop evidence is lost: candidate generation or ranking (issue 11, the graph arm).

Reads the traces of benchmarks/reranker_data.py (every fused candidate of every question, with
each arm's rank, and every memory of the bank with its entities) and orders each question's
candidates with the shipped learned reranker (or passthrough), then puts every gold evidence
turn of the chosen questions in one bucket:

- ``top 10``: found (what R@10 counts);
- ``11-30`` / ``31-100`` / ``101+``: among the fused candidates, ranked there by the reranker
  (the reranker's job);
- ``not fused``: in no arm's hits that reached the fused list (candidate generation: the graph
  arm's job).

For every missed turn it reports which arms found it and at what rank, and what it shares with
the question (content terms, names, entities), with the evidence that was found and with the
reranker's top 5 (entities and how many memories of the bank mention them, the session, the
distance in turns). Last, an offline simulation of a second graph round seeded by the
reranker's top hits (a two-step spread over the memory-entity graph, degree-normalised like
the graph arm's SQL) over the bank's stored memories: where it would rank the missed turns.

    .venv/bin/python benchmarks/multihop_analysis.py --data-dir D --conversations 0-4

Tune on 0-4 only: this is an analysis of the training conversations; nothing here is fitted.
LoCoMo (CC BY-NC 4.0) is evaluation data: the traces and this report stay out of the package.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _locomo import parse_selection
from reranker_data import DEFAULT_DATA_DIR, load_rows
from train_reranker import LOCOMO_CATEGORIES, questions_of, with_neighbours

from shared_core.recall.learned import LearnedScorer, _content_terms, _names

BUCKETS = ("top 10", "11-30", "31-100", "101+", "not fused")
_DIA = re.compile(r"^D(\d+):(\d+)$")


def _bucket(rank: int | None) -> str:
    if rank is None:
        return "not fused"
    return "top 10" if rank <= 10 else "11-30" if rank <= 30 else "31-100" if rank <= 100 else "101+"


def _session_turn(dia: str) -> tuple[int, int]:
    m = _DIA.match(dia)
    return (int(m.group(1)), int(m.group(2))) if m else (-1, -1)


def spread(
    seeds: Mapping[str, float],
    entities: Mapping[str, Sequence[str]],
    members: Mapping[str, Sequence[str]],
) -> dict[str, float]:
    """Two steps of the graph arm's spread (arms/graph.py) from ``seeds`` (memory id -> mass):
    each seed splits its mass evenly over its entities, each entity splits what it holds
    evenly over the memories mentioning it (1 / degree); a seed gets nothing back from itself."""
    out: dict[str, float] = defaultdict(float)
    for src, mass in seeds.items():
        ents = entities.get(src, ())
        for e in ents:
            held = mass / len(ents)
            share = held / max(len(members[e]), 1)
            for mid in members[e]:
                if mid != src:
                    out[mid] += share
    return out


def _pct(n: float, d: float) -> str:
    return f"{100 * n / d:.1f}" if d else "–"


def analyse(blocks: Sequence[dict[str, Any]], category: int, scorer: LearnedScorer | None) -> dict[str, Any]:
    buckets: Counter[str] = Counter()
    arms_found: Counter[str] = Counter()
    arm_ranks: dict[str, list[int]] = defaultdict(list)
    shares: Counter[str] = Counter()
    n_missed_fused = n_missed = 0
    second_round: dict[str, list[int]] = defaultdict(list)
    examples: list[str] = []
    for block in blocks:
        memories = block["memories"]
        dia_of = {mid: str(m["dia_id"]) for mid, m in memories.items()}
        by_dia = {d: mid for mid, d in dia_of.items()}
        entities = {mid: sorted(set(m["entities"])) for mid, m in memories.items()}
        members: dict[str, list[str]] = defaultdict(list)
        for mid, ents in entities.items():
            for e in ents:
                members[e].append(mid)
        datas = questions_of(block)
        for raw, q in zip(block["questions"], datas, strict=True):
            if q.category != category:
                continue
            if scorer is not None and scorer.first_stage is not None:
                # the second graph round, marked as recall marks it
                q = with_neighbours(q, scorer.first_stage, scorer.neighbour_seeds, scorer.neighbour_window)
            ids = [c["id"] for c in raw["candidates"]]
            if scorer is None:
                order = [by_dia.get(d, d) for d in q.passthrough]
                order += [i for i in ids if i not in set(order)]
            else:
                logits = scorer.logits(q.x)
                order = [ids[i] for i in np.argsort(-logits, kind="stable")]
            rank_of = {mid: r for r, mid in enumerate(order, start=1)}
            cand = {c["id"]: c for c in raw["candidates"]}
            gold = [by_dia[d] for d in q.evidence if d in by_dia]
            found = [g for g in gold if rank_of.get(g, 10**9) <= 10]
            top5 = order[:5]
            q_terms, q_names = _content_terms(raw["question"]), _names(raw["question"])
            q_ents = {e for e in members if e.lower() in raw["question"].lower()}
            # the second round: mass on the reranker's top 5, 1/rank each
            round2 = spread({mid: 1.0 / r for r, mid in enumerate(top5, start=1)}, entities, members)
            r2_order = sorted((m for m in round2 if m not in set(order[:10])), key=lambda m: (-round2[m], m))
            r2_rank = {m: r for r, m in enumerate(r2_order, start=1)}
            for g in gold:
                b = _bucket(rank_of.get(g))
                buckets[b] += 1
                if b == "top 10":
                    continue
                n_missed += 1
                text = memories[g]["text"]
                g_terms, g_ents = _content_terms(text), set(entities[g])
                if g in cand:
                    n_missed_fused += 1
                    for arm, r in cand[g]["ranks"].items():
                        arms_found[arm] += 1
                        arm_ranks[arm].append(int(r))
                    if set(cand[g]["ranks"]) == {"graph"}:
                        arms_found["graph only"] += 1
                sess, turn = _session_turn(dia_of[g])
                found_sessions = {_session_turn(dia_of[f])[0] for f in found}
                top_sessions = {_session_turn(dia_of[t])[0] for t in top5}
                near = [
                    abs(turn - _session_turn(dia_of[t])[1])
                    for t in top5
                    if _session_turn(dia_of[t])[0] == sess
                ]
                found_ents = set().union(*(entities[f] for f in found)) if found else set()
                top_ents = set().union(*(entities[t] for t in top5))
                rare = {e for e in g_ents if len(members[e]) <= 0.05 * len(memories)}
                shares["question term"] += bool(g_terms & q_terms)
                shares["question name"] += bool(_names(text) & q_names or q_names & g_terms)
                shares["question entity"] += bool(g_ents & q_ents)
                shares["entity of found evidence"] += bool(g_ents & found_ents)
                shares["rare entity (<=5% of bank) of found evidence"] += bool(rare & found_ents)
                shares["entity of top 5"] += bool(g_ents & top_ents)
                shares["rare entity of top 5"] += bool(rare & top_ents)
                shares["any entity at all"] += bool(g_ents)
                shares["rare entity at all"] += bool(rare)
                shares["session of found evidence"] += sess in found_sessions
                shares["session of top 5"] += sess in top_sessions
                shares["within 3 turns of a top-5 hit"] += bool(near and min(near) <= 3)
                shares["term of found evidence (not in question)"] += bool(
                    found
                    and (g_terms - q_terms)
                    & set().union(*(_content_terms(memories[f]["text"]) for f in found))
                )
                second_round["rank"].append(r2_rank.get(g, 10**6))
                if len(examples) < 12 and g in cand:
                    examples.append(
                        f"- [{block['index']}] {raw['question']!r}: missed {dia_of[g]} (rank "
                        f"{rank_of.get(g)}, arms {cand[g]['ranks']}): {text[:110]!r}; found "
                        f"{[dia_of[f] for f in found]}"
                    )
    total = sum(buckets.values())
    r2 = np.asarray(second_round["rank"]) if second_round["rank"] else np.zeros(0)
    return {
        "total": total,
        "buckets": {b: buckets[b] for b in BUCKETS},
        "missed": n_missed,
        "missed_fused": n_missed_fused,
        "arms_found": dict(arms_found),
        "arm_rank_median": {a: float(np.median(v)) for a, v in arm_ranks.items()},
        "shares": dict(shares),
        "second_round_top": {k: int((r2 <= k).sum()) for k in (5, 10, 20, 50)},
        "examples": examples,
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--conversations", default="0-4", help="tune split only: '0-4'")
    p.add_argument("--category", default="multi-hop", choices=list(LOCOMO_CATEGORIES.values()))
    p.add_argument("--passthrough", action="store_true", help="order as recall returned (no learned)")
    p.add_argument("--weights", type=Path, default=None, help="a learned_reranker.json (default: shipped)")
    args = p.parse_args(argv)
    category = {v: k for k, v in LOCOMO_CATEGORIES.items()}[args.category]
    blocks = load_rows(args.data_dir, "locomo", parse_selection(args.conversations, 10))
    scorer = (
        LearnedScorer.from_dict(json.loads(args.weights.read_text()))
        if args.weights
        else LearnedScorer.default()
    )
    out = analyse(blocks, category, None if args.passthrough else scorer)
    total, missed = out["total"], out["missed"]
    print(f"## {args.category}, conversations {args.conversations}: {total} gold turns\n")
    print("| bucket | turns | % |\n|---|---:|---:|")
    for b, n in out["buckets"].items():
        print(f"| {b} | {n} | {_pct(n, total)} |")
    print(
        f"\nmissed (not in the top 10): {missed}, of which among the fused candidates {out['missed_fused']}"
    )
    print("\nmissed and fused, found by arm (count, median rank in that arm):")
    for arm, n in sorted(out["arms_found"].items(), key=lambda t: -t[1]):
        print(
            f"- {arm}: {n} ({_pct(n, out['missed_fused'])}%), "
            f"median rank {out['arm_rank_median'].get(arm, '–')}"
        )
    print("\nmissed turns sharing ... (% of missed):")
    for k, n in out["shares"].items():
        print(f"- {k}: {n} ({_pct(n, missed)}%)")
    print(
        "\nsecond graph round from the reranker's top 5 (offline spread over stored entities), "
        "missed turns it ranks within the first k memories outside the top 10: "
        + ", ".join(f"{k}: {n} ({_pct(n, missed)}%)" for k, n in out["second_round_top"].items())
    )
    print("\nexamples:")
    print("\n".join(out["examples"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
