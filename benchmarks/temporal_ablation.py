"""Ablation of the temporal machinery on stored recall traces, with no server and no model.

Reads the traced candidates of ``benchmarks/reranker_data.py`` (one file per conversation) and
ranks every question four ways, as recall ranks them:

* ``passthrough``: the order recall returned with ``reranker="none"`` (RRF + boosts);
* ``ours``: the shipped learned model over the fused candidates (temporal arm included), its
  second graph round marked (the first stage's top hits' document neighbours, as recall marks
  them), then the learned profile's boosts: for a question naming a time,
  ``DEFAULT_LEARNED_TEMPORAL_ALPHA`` on the better of date proximity and stated years; for a
  "when" question without one, ``DEFAULT_LEARNED_WHEN_ALPHA`` on memories stating their own date
  scored within that boost of the best (the "when" list beyond its head read by its column only,
  as ``train_reranker.questions_of`` reads it);
* ``ours (no boosts)``: the same, without those boosts;
* ``no-temporal``: the temporal arm's ranks removed and RRF recomputed with the default arm
  weights (candidates only it found dropped), the model blind to the question's time (no
  window, not "when": what ``RecallSettings(date_signals=False)`` does), the second round
  marked on that list, no boosts (``benchmarks/locomo.py``'s ``ours:no-temporal``).

R@1 / R@5 / R@10 per category, as a markdown table, then (``--by-evidence``) where the
temporal questions' gold turns rank: by the kind of question (a "when" question without a
time, one naming a time, any other) and whether the gold memory states its own date. The
cosine is the run-time one (the memory's stored vector), so on traces of the current tree the
rows are the end-to-end ``benchmarks/locomo.py --systems ours ours:no-temporal`` numbers (on
LoCoMo 5-9, traces of main 7a03c22: 81.6 / 80.0 temporal against 81.4 / 79.6, as end to end).

    .venv/bin/python benchmarks/reranker_data.py --conversations all --data-dir /tmp/when-rr
    .venv/bin/python benchmarks/temporal_ablation.py --data-dir /tmp/when-rr --conversations 5-9

``--against DIR`` compares two trees' traces question by question (DIR's before, ``--data-dir``'s
after): every temporal question whose R@10 moved, its gold turns' ranks and dates.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import train_reranker as T
from _locomo import parse_selection
from dated_paragraphs import CATEGORIES, build_dataset
from reranker_data import DEFAULT_DATA_DIR, load_rows

from shared_core.config import DEFAULT_ARM_WEIGHTS, DEFAULT_LEARNED_TEMPORAL_ALPHA, DEFAULT_LEARNED_WHEN_ALPHA
from shared_core.recall.arms.temporal import asks_when
from shared_core.recall.boosts import NEUTRAL, effective_date, stated_time_match, window_match
from shared_core.recall.learned import LearnedScorer, QuerySignals, featurize

SYSTEMS = ("passthrough", "ours", "ours (no boosts)", "no-temporal")
KS = (1, 5, 10)


def _boosts(
    q: T.QuestionData, text: str, p: np.ndarray[Any, np.dtype[np.float64]]
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """The learned profile's boost of every candidate scored ``p`` (apply_boosts' arithmetic)."""
    assert q.query is not None
    window, when = q.query.window, asks_when(text)
    out = np.ones(len(q.signals))
    # the "when" boost goes to dated memories scored within the boost of the best (apply_boosts)
    floor = float(p.max()) / (1 + DEFAULT_LEARNED_WHEN_ALPHA * NEUTRAL) if len(p) else 0.0
    for i, s in enumerate(q.signals):
        if window is not None:
            # as recall's _boost_input: a dated memory's match with the window (window_match)
            date = effective_date(s.occurred_start, s.occurred_end, s.mentioned_at, s.date_grain)
            prox, stated = window_match(date, window), stated_time_match(s.text, window)
            value = (
                NEUTRAL if prox is None and stated == 0.0 else max(NEUTRAL if prox is None else prox, stated)
            )
            out[i] = 1 + DEFAULT_LEARNED_TEMPORAL_ALPHA * (value - NEUTRAL)
        elif when and (s.occurred_start is not None or s.occurred_end is not None) and p[i] >= floor:
            out[i] = 1 + DEFAULT_LEARNED_WHEN_ALPHA * NEUTRAL
    return out


def without_arm(q: T.QuestionData, arm: str, query: QuerySignals | None = None) -> T.QuestionData | None:
    """``q`` as recall fuses it without ``arm``'s own list: its ranks gone, RRF recomputed with
    the default arm weights, candidates only it found dropped, features recomputed over
    ``query`` (default: the question's own signals); None when no other arm found anything."""
    kept = []
    for i, s in enumerate(q.signals):
        ranks = {k: v for k, v in s.ranks.items() if k != arm}
        if ranks:
            rrf = sum(DEFAULT_ARM_WEIGHTS[k] / (T.DEFAULT_RRF_K + v) for k, v in ranks.items())
            kept.append((i, ranks, rrf))
    if not kept:
        return None
    kept.sort(key=lambda t: (-t[2], t[0]))  # RRF, then the fused order
    signals = tuple(
        dataclasses.replace(
            q.signals[i],
            position=p,
            ranks=ranks,
            rrf=rrf,
            arm_scores={k: v for k, v in q.signals[i].arm_scores.items() if k in ranks},
        )
        for p, (i, ranks, rrf) in enumerate(kept)
    )
    query = q.query if query is None else query
    index = [i for i, _, _ in kept]
    return dataclasses.replace(
        q,
        x=featurize(query, signals),
        labels=q.labels[index],
        dia_ids=tuple(q.dia_ids[i] for i in index),
        query=query,
        signals=signals,
        doc_pos=tuple(q.doc_pos[i] for i in index) if q.doc_pos else (),
    )


def without_temporal(q: T.QuestionData, text: str) -> T.QuestionData | None:
    """``q`` as recall fuses it without the temporal arm, featurised blind to the question's
    time; None when no other arm found anything."""
    return without_arm(q, "temporal", QuerySignals.from_query(text, None, asks_when=False))


def _ranked(q: T.QuestionData, model: LearnedScorer, text: str | None) -> list[str]:
    """``q``'s candidates ranked by the model, then boosted as the question asks (no boosts
    without ``text``)."""
    if model.first_stage is not None:
        q = T.with_neighbours(q, model.first_stage, model.neighbour_seeds, model.neighbour_window)
    p = 1 / (1 + np.exp(-np.clip(model.logits(q.x), -40, 40)))
    if text is not None:
        p = p * _boosts(q, text, p)
    return [q.dia_ids[i] for i in np.argsort(-p, kind="stable")]


def orders(q: T.QuestionData, text: str, model: LearnedScorer) -> dict[str, list[str]]:
    """Each system's order of ``q``'s candidates (dia ids)."""
    blind = without_temporal(q, text)
    return {
        "passthrough": list(q.passthrough),
        "ours": _ranked(q, model, text),
        "ours (no boosts)": _ranked(q, model, None),
        "no-temporal": [] if blind is None else _ranked(blind, model, None),
    }


def _kind(q: T.QuestionData, text: str) -> str:
    assert q.query is not None
    if q.query.window is not None:
        return "names a time"
    return "when, no time" if asks_when(text) else "other"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--dataset", default="locomo", help="locomo or a generated set (dated-hard, ...)")
    p.add_argument("--conversations", default="5-9")
    p.add_argument(
        "--by-evidence",
        action="store_true",
        help="also: the temporal questions' gold turns in the top 10, by question kind and dated or not",
    )
    p.add_argument(
        "--against",
        type=Path,
        default=None,
        metavar="DIR",
        help="also: every temporal question whose ours or no-temporal R@10 differs between DIR's "
        "traces (before) and --data-dir's (after), with its gold turns' ranks and whether they state a date",
    )
    p.add_argument("--show-text", action="store_true", help="with --against: print the questions' text")
    args = p.parse_args(argv)
    locomo = args.dataset == "locomo"
    cats = T.LOCOMO_CATEGORIES if locomo else CATEGORIES
    convs = parse_selection(args.conversations, 10 if locomo else len(build_dataset(args.dataset)))
    model = LearnedScorer.default()
    res: dict[str, dict[str, dict[int, list[float]]]] = {s: {} for s in SYSTEMS}
    gold: dict[tuple[str, str, bool], list[bool]] = {}
    for block in load_rows(args.data_dir, args.dataset, list(convs)):
        for raw, q in zip(block["questions"], T.questions_of(block), strict=True):
            text = raw["question"]
            for system, order in orders(q, text, model).items():
                for group in ("overall", cats[q.category]):
                    cell = res[system].setdefault(group, {k: [] for k in KS})
                    for k, values in cell.items():
                        values.append(T.recall_at(order, q.evidence, k))
                # LoCoMo's temporal questions, or every question of a generated set
                if (q.category == 2 or not locomo) and system in {"ours", "no-temporal"}:
                    top = set(order[:10])
                    for i in np.flatnonzero(q.labels > 0):
                        s = q.signals[i]
                        dated = s.occurred_start is not None or s.occurred_end is not None
                        gold.setdefault((system, _kind(q, text), dated), []).append(q.dia_ids[i] in top)
    groups = [g for g in ("overall", *cats.values()) if g in res["ours"]]
    print("| R@1 / R@5 / R@10 | " + " | ".join(f"{g} (n={len(res['ours'][g][1])})" for g in groups) + " |")
    print("|---|" + "---:|" * len(groups))
    for system, table in res.items():
        cells = [" / ".join(f"{100 * np.mean(table[g][k]):.1f}" for k in KS) for g in groups]
        print(f"| {system} | " + " | ".join(cells) + " |")
    if args.by_evidence and gold:
        print("\nTemporal questions' gold turns in the top 10 (%), by question kind and gold dated or not:\n")
        print("| question kind | gold states its date | n | ours | no-temporal |")
        print("|---|---|---:|---:|---:|")
        for kind in ("when, no time", "names a time", "other"):
            for dated in (True, False):
                ours, blind = gold.get(("ours", kind, dated), []), gold.get(("no-temporal", kind, dated), [])
                if ours:
                    print(
                        f"| {kind} | {'yes' if dated else 'no'} | {len(ours)} | "
                        f"{100 * np.mean(ours):.1f} | {100 * np.mean(blind):.1f} |"
                    )
    if args.against is not None:
        _print_changes(
            args.against, args.data_dir, args.dataset, list(convs), model, show_text=args.show_text
        )
    return 0


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Outcome:
    kind: str
    r10: tuple[float, float]  # ours, no-temporal
    ranks: dict[str, tuple[int | None, int | None]]  # gold dia id -> rank in ours, no-temporal
    dated: dict[str, bool]  # gold dia id -> states its own date


def _outcomes(
    data_dir: Path, dataset: str, convs: list[int], model: LearnedScorer
) -> dict[tuple[int, int], tuple[str, _Outcome]]:
    """Each temporal question's (conversation, number) -> (text, outcome) in ``data_dir``'s traces."""
    out: dict[tuple[int, int], tuple[str, _Outcome]] = {}
    for conv, block in zip(convs, load_rows(data_dir, dataset, convs), strict=True):
        for n, (raw, q) in enumerate(zip(block["questions"], T.questions_of(block), strict=True)):
            if dataset == "locomo" and q.category != 2:
                continue
            text = raw["question"]
            o = orders(q, text, model)

            def rank(order: list[str], gold: str) -> int | None:
                return order.index(gold) + 1 if gold in order else None

            out[(conv, n)] = (
                text,
                _Outcome(
                    kind=_kind(q, text),
                    r10=(
                        T.recall_at(o["ours"], q.evidence, 10),
                        T.recall_at(o["no-temporal"], q.evidence, 10),
                    ),
                    ranks={g: (rank(o["ours"], g), rank(o["no-temporal"], g)) for g in q.evidence},
                    dated={
                        q.dia_ids[i]: q.signals[i].occurred_start is not None
                        or q.signals[i].occurred_end is not None
                        for i in np.flatnonzero(q.labels > 0)
                    },
                ),
            )
    return out


def _print_changes(
    before_dir: Path,
    after_dir: Path,
    dataset: str,
    convs: list[int],
    model: LearnedScorer,
    *,
    show_text: bool,
) -> None:
    before = _outcomes(before_dir, dataset, convs, model)
    after = _outcomes(after_dir, dataset, convs, model)
    print(f"\nTemporal questions whose R@10 changed, {before_dir} -> {after_dir}:\n")
    for key, (text, b) in before.items():
        a = after[key][1]
        if a.r10 == b.r10:
            continue
        label = f"{text!r} " if show_text else ""
        print(
            f"- conv {key[0]} q{key[1]} {label}[{a.kind}] ours {b.r10[0]:.2f} -> {a.r10[0]:.2f}, "
            f"no-temporal {b.r10[1]:.2f} -> {a.r10[1]:.2f}; gold (rank ours, no-temporal; dated): "
            + ", ".join(
                f"{g} {b.ranks[g]} {b.dated.get(g)} -> {a.ranks[g]} {a.dated.get(g)}" for g in b.ranks
            )
        )
    for system, i in (("ours", 0), ("no-temporal", 1)):
        mean_b = 100 * np.mean([o.r10[i] for _, o in before.values()])
        mean_a = 100 * np.mean([o.r10[i] for _, o in after.values()])
        print(f"{system}: R@10 {mean_b:.1f} -> {mean_a:.1f} (n={len(before)})")


if __name__ == "__main__":
    raise SystemExit(main())
