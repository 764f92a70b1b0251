"""Ablation of the temporal machinery on stored recall traces, with no server and no model.

Reads the traced candidates of ``benchmarks/reranker_data.py`` (one file per conversation) and
ranks every question four ways:

* ``passthrough``: the order recall returned with ``reranker="none"`` (RRF + boosts);
* ``ours``: the shipped learned model over the fused candidates (temporal arm included), then
  the learned profile's boosts: for a question naming a time, ``DEFAULT_LEARNED_TEMPORAL_ALPHA``
  on the better of date proximity and stated years; for a "when" question without one,
  ``DEFAULT_LEARNED_WHEN_ALPHA`` on memories stating their own date;
* ``ours (no boosts)``: the same, without those boosts;
* ``no-temporal``: the temporal arm's ranks removed and RRF recomputed with the default arm
  weights (candidates only it found dropped), the model blind to the question's time (no
  window, not "when": what ``RecallSettings(date_signals=False)`` does), no boosts.

R@1 / R@5 / R@10 per category, as a markdown table. The end-to-end equivalent is
``benchmarks/locomo.py --conversations 5-9 --systems ours ours:no-temporal`` (about an hour on
a loaded 2-core machine; this reads the same candidates in seconds).

    .venv/bin/python benchmarks/reranker_data.py --conversations all --data-dir /tmp/when-rr
    .venv/bin/python benchmarks/temporal_ablation.py --data-dir /tmp/when-rr --conversations 5-9
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import train_reranker as T
from _locomo import parse_selection
from reranker_data import DEFAULT_DATA_DIR, load_rows

from shared_core.config import DEFAULT_ARM_WEIGHTS, DEFAULT_LEARNED_TEMPORAL_ALPHA, DEFAULT_LEARNED_WHEN_ALPHA
from shared_core.recall.arms.temporal import asks_when
from shared_core.recall.boosts import NEUTRAL, stated_time_match
from shared_core.recall.learned import CandidateSignals, LearnedScorer, QuerySignals, featurize
from shared_core.types import TimeWindow

SYSTEMS = ("passthrough", "ours", "ours (no boosts)", "no-temporal")


def _d(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if value else None


def _signals(
    c: dict[str, Any], m: dict[str, Any], ranks: dict[str, int], pos: int, rrf: float
) -> CandidateSignals:
    return CandidateSignals(
        position=pos,
        rrf=rrf,
        ranks=ranks,  # type: ignore[arg-type]
        arm_scores={k: v for k, v in c["scores"].items() if k in ranks},
        cosine=c["cosine"],
        text=m["text"],
        occurred_start=_d(m["occurred_start"]),
        occurred_end=_d(m["occurred_end"]),
        mentioned_at=_d(m["mentioned_at"]),
        date_grain=m["date_grain"],
    )


def _orders(q: dict[str, Any], mem: list[dict[str, Any]], model: LearnedScorer) -> dict[str, list[str]]:
    window = None
    if q["window"] is not None:
        start, end, grain = q["window"]
        window = TimeWindow(
            start=dt.datetime.fromisoformat(start), end=dt.datetime.fromisoformat(end), grain=grain
        )
    cands = q["candidates"]
    dia = [str(mem[c["id"]]["dia_id"]) for c in cands]
    signals = [_signals(c, mem[c["id"]], c["ranks"], c["position"], c["rrf"]) for c in cands]
    plain = 1 / (
        1
        + np.exp(
            -np.clip(
                model.logits(featurize(QuerySignals.from_query(q["question"], window), signals)), -40, 40
            )
        )
    )
    boosted = plain.copy()
    when = asks_when(q["question"])
    for i, (c, s) in enumerate(zip(cands, signals, strict=True)):
        m = mem[c["id"]]
        if window is not None:
            prox = s.proximity(window)
            value = max(NEUTRAL if prox is None else prox, stated_time_match(m["text"], window))
            if prox is None and stated_time_match(m["text"], window) == 0.0:
                value = NEUTRAL
            boosted[i] *= 1 + DEFAULT_LEARNED_TEMPORAL_ALPHA * (value - NEUTRAL)
        elif when and (m["occurred_start"] or m["occurred_end"]):
            boosted[i] *= 1 + DEFAULT_LEARNED_WHEN_ALPHA * NEUTRAL
    kept = []
    for c in cands:
        ranks = {k: v for k, v in c["ranks"].items() if k != "temporal"}
        if ranks:
            kept.append((c, ranks, sum(DEFAULT_ARM_WEIGHTS[k] / (60 + v) for k, v in ranks.items())))
    kept.sort(key=lambda t: (-t[2], min(t[1].values()), t[0]["id"]))
    blind = QuerySignals.from_query(q["question"], None, asks_when=False)
    no_temporal: list[str] = []
    if kept:
        rows = featurize(blind, [_signals(c, mem[c["id"]], r, i, f) for i, (c, r, f) in enumerate(kept)])
        no_temporal = [
            str(mem[kept[i][0]["id"]]["dia_id"]) for i in np.argsort(-model.logits(rows), kind="stable")
        ]
    return {
        "passthrough": [str(mem[i]["dia_id"]) for i in q["passthrough"]],
        "ours": [dia[i] for i in np.argsort(-boosted, kind="stable")],
        "ours (no boosts)": [dia[i] for i in np.argsort(-plain, kind="stable")],
        "no-temporal": no_temporal,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--dataset", default="locomo", help="locomo or a generated set (dated-hard, ...)")
    p.add_argument("--conversations", default="5-9")
    args = p.parse_args(argv)
    cats = T.LOCOMO_CATEGORIES if args.dataset == "locomo" else T.DATED_CATEGORIES
    convs = parse_selection(args.conversations, 10 if args.dataset == "locomo" else 5)
    model = LearnedScorer.default()
    res: dict[str, dict[str, dict[int, list[float]]]] = {s: {} for s in SYSTEMS}
    for block in load_rows(args.data_dir, args.dataset, list(convs)):
        for q in block["questions"]:
            evidence = frozenset(q["evidence"])
            for system, order in _orders(q, block["memories"], model).items():
                for group in ("overall", cats[q["category"]]):
                    cell = res[system].setdefault(group, {1: [], 5: [], 10: []})
                    for k, values in cell.items():
                        values.append(T.recall_at(order, evidence, k))
    groups = [g for g in ("overall", *cats.values()) if g in res["ours"]]
    print("| R@1 / R@5 / R@10 | " + " | ".join(f"{g} (n={len(res['ours'][g][1])})" for g in groups) + " |")
    print("|---|" + "---:|" * len(groups))
    for system, table in res.items():
        cells = [" / ".join(f"{100 * np.mean(table[g][k]):.1f}" for k in (1, 5, 10)) for g in groups]
        print(f"| {system} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
