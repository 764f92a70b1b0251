"""What the learned reranker cannot express for time questions: interaction columns, measured.

The shipped model (shared_core/recall/learned.py) is linear: a "when" question changes a
candidate's logit only through ``when_and_dated``, ``when_and_year_stated`` and
``dated_evidence_rr``, never how much its cosine, coverage or speaker count. This script adds
candidate interaction columns (products of a time-question flag with an existing column, or a
sharper form of the "when" list's rank) and measures them on stored recall traces
(``benchmarks/reranker_data.py``), ranking every question as recall ranks it
(``temporal_ablation.orders``: the model, then the learned profile's boosts; ``no-temporal``:
the temporal arm's list removed, the model blind to the question's time, no boosts).

Two ways of fitting the extra columns, both logistic regression on LoCoMo 0-4 + dated-train
(``train_reranker.EXTRA_TRAIN``), as the shipped model was trained:

* ``retrained``: the shipped feature set plus the extra columns, all refitted
  (``train_reranker.fit``; no size calibration, which moves probabilities, not a list's order,
  except through the boosts);
* ``--frozen``: only the extra columns, fitted on top of the shipped model's logit (an offset),
  every other weight kept: a question that is not a time question ranks exactly as shipped, and
  ``no-temporal`` does too (the columns are 0 for a blind question).

The second graph round is marked from the shipped first stage throughout (the first stage reads
none of the extra columns). Default: leave-one-conversation-out over LoCoMo 0-4 (the tuning
split; each conversation ranked by a model fitted on the other four and dated-train).
``--held-out`` fits on all of 0-4 and reports 5-9: use it once, for a choice fixed on 0-4.
Besides R@1 / R@5 / R@10 the table reports ``auc20`` (mean of R@1..R@20), finer than R@10 on a
split where temporal R@10 is saturated.

    .venv/bin/python benchmarks/reranker_data.py --conversations all --data-dir D
    .venv/bin/python benchmarks/reranker_data.py --dataset dated-train --conversations 0-1 --data-dir D
    .venv/bin/python benchmarks/when_interactions.py --data-dir D                       # every column alone
    .venv/bin/python benchmarks/when_interactions.py --data-dir D --frozen
    .venv/bin/python benchmarks/when_interactions.py --data-dir D --held-out \
        --variants "" when_dated_x_speaker,when_list_inv_rank
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import numpy.typing as npt
import temporal_ablation as TA
import train_reranker as T
from _report import write_json
from reranker_data import DEFAULT_DATA_DIR, load_rows

from shared_core.recall.learned import FEATURE_NAMES, CandidateSignals, LearnedScorer, unfuse_when_list

Array = npt.NDArray[np.float64]
COL = {name: i for i, name in enumerate(FEATURE_NAMES)}
KS = (1, 5, 10)


@dataclass(frozen=True, slots=True)
class Item:
    """One question: its text, its traced candidates (second round marked) and the same as
    ``no-temporal`` fuses and reads them (None when no other arm found anything)."""

    text: str
    q: T.QuestionData
    blind: T.QuestionData | None


def _when(q: T.QuestionData) -> float:
    """1 for a "when" question without a window (the temporal arm's "when" list answers it)."""
    assert q.query is not None
    return float(q.query.asks_when and q.query.window is None)


def _windowed(q: T.QuestionData) -> float:
    assert q.query is not None
    return float(q.query.window is not None)


def _dated(q: T.QuestionData) -> Array:
    return np.array([float(s.occurred_start is not None or s.occurred_end is not None) for s in q.signals])


def _when_rank(q: T.QuestionData) -> Array:
    return np.array([float(s.ranks.get("temporal", 0)) for s in q.signals])


def _future(q: T.QuestionData) -> Array:
    """1 where the memory's own date lies after the time it was said (a plan, not a past event)."""
    out = []
    for s in q.signals:
        a, b = s.occurred_start, s.mentioned_at
        out.append(float(a is not None and b is not None and a.replace(tzinfo=None) > b.replace(tzinfo=None)))
    return np.array(out)


def _said_gap(q: T.QuestionData) -> Array:
    """1 / (1 + days between the memory's own date and when it was said); 0 if undated."""
    out = []
    for s in q.signals:
        a, b = s.occurred_start, s.mentioned_at
        days = abs((b.replace(tzinfo=None) - a.replace(tzinfo=None)).days) if a and b else None
        out.append(0.0 if days is None else 1.0 / (1.0 + days))
    return np.array(out)


def _day_grain(q: T.QuestionData) -> Array:
    return np.array([float(s.date_grain in ("day", "hour", "minute")) for s in q.signals])


def _inv_rank(q: T.QuestionData) -> Array:
    r = _when_rank(q)
    return np.where(r > 0, 1.0 / np.maximum(r, 1.0), 0.0)


def _col(q: T.QuestionData, name: str) -> Array:
    return q.x[:, COL[name]]


# name -> column of one question's candidates. "when" = a "when" question without a window,
# "when_dated" = the shipped when_and_dated column (such a question and a memory stating its own
# date), "windowed" = a question naming a time.
EXTRAS: dict[str, Callable[[T.QuestionData], Array]] = {
    "when_x_cosine_minus_best": lambda q: _when(q) * _col(q, "cosine_minus_best"),
    "when_x_cosine_z": lambda q: _when(q) * _col(q, "cosine_z"),
    "when_x_term_cover": lambda q: _when(q) * _col(q, "term_cover_over_best"),
    "when_x_keyword": lambda q: _when(q) * _col(q, "keyword_over_best"),
    "when_x_speaker": lambda q: _when(q) * _col(q, "speaker_named"),
    "when_x_rrf": lambda q: _when(q) * _col(q, "rrf_over_best"),
    "when_x_position": lambda q: _when(q) * _col(q, "log1p_position"),
    "when_dated_x_cosine": lambda q: _col(q, "when_and_dated") * _col(q, "cosine_minus_best"),
    "when_dated_x_term_cover": lambda q: _col(q, "when_and_dated") * _col(q, "term_cover_over_best"),
    "when_dated_x_speaker": lambda q: _col(q, "when_and_dated") * _col(q, "speaker_named"),
    "when_dated_x_keyword": lambda q: _col(q, "when_and_dated") * _col(q, "keyword_over_best"),
    "when_dated_x_future": lambda q: _col(q, "when_and_dated") * _future(q),
    "when_dated_x_said_gap": lambda q: _col(q, "when_and_dated") * _said_gap(q),
    "when_dated_x_day_grain": lambda q: _col(q, "when_and_dated") * _day_grain(q),
    "when_list_x_cosine": lambda q: _col(q, "dated_evidence_rr") * _col(q, "cosine_minus_best"),
    "when_list_x_term_cover": lambda q: _col(q, "dated_evidence_rr") * _col(q, "term_cover_over_best"),
    "when_list_inv_rank": lambda q: _when(q) * _inv_rank(q),
    "when_list_top5": lambda q: _when(q) * ((_when_rank(q) > 0) & (_when_rank(q) <= 5)),
    "when_list_top10": lambda q: _when(q) * ((_when_rank(q) > 0) & (_when_rank(q) <= 10)),
    "when_undated_x_cosine": lambda q: _when(q) * (1 - _dated(q)) * _col(q, "cosine_minus_best"),
    "when_undated_x_term_cover": lambda q: _when(q) * (1 - _dated(q)) * _col(q, "term_cover_over_best"),
    "when_undated_x_speaker": lambda q: _when(q) * (1 - _dated(q)) * _col(q, "speaker_named"),
    "windowed_x_cosine": lambda q: _windowed(q) * _col(q, "cosine_minus_best"),
    "windowed_x_term_cover": lambda q: _windowed(q) * _col(q, "term_cover_over_best"),
    "window_proximity_x_cosine": lambda q: _col(q, "window_proximity") * _col(q, "cosine_minus_best"),
    "window_proximity_x_term_cover": lambda q: _col(q, "window_proximity") * _col(q, "term_cover_over_best"),
}
BASE = tuple(f for f in T.DEFAULT_FEATURES if f != T.SIZE_FEATURE)


def extras(q: T.QuestionData, names: Sequence[str]) -> Array:
    return (
        np.column_stack([EXTRAS[n](q).astype(np.float64) for n in names])
        if names
        else np.zeros((len(q.x), 0))
    )


@dataclass(frozen=True, slots=True)
class Model:
    """Logit = (shipped logit if ``frozen`` else intercept + base columns) + extra columns."""

    names: tuple[str, ...]
    frozen: bool
    mean: Array
    scale: Array
    coef: Array
    intercept: float

    def logits(self, q: T.QuestionData, shipped: LearnedScorer) -> Array:
        if self.frozen:
            x, offset = extras(q, self.names), shipped.logits(q.x)
        else:
            x, offset = np.hstack([q.x[:, [COL[f] for f in BASE]], extras(q, self.names)]), 0.0
        z = (x - self.mean) / self.scale if x.shape[1] else x
        return np.asarray(offset + self.intercept + z @ self.coef, dtype=np.float64)


def _newton(z: Array, y: Array, offset: Array, l2: float, shrink_first: bool) -> Array:
    """L2 logistic regression with a fixed offset by Newton's method (``train_reranker._newton``
    plus the offset); column 0 is not shrunk unless ``shrink_first``."""
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    if not shrink_first:
        penalty[0] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(offset + z @ w, -40, 40)))
        step = np.linalg.solve(
            (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty + 1e-9), z.T @ (p - y) + penalty * w
        )
        w -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return w


def fit(
    qs: Sequence[T.QuestionData], names: Sequence[str], frozen: bool, shipped: LearnedScorer, l2: float
) -> Model:
    y = np.concatenate([q.labels for q in qs])
    if frozen:
        x = np.concatenate([extras(q, names) for q in qs])
        offset = np.concatenate([shipped.logits(q.x) for q in qs])
    else:
        x = np.concatenate([np.hstack([q.x[:, [COL[f] for f in BASE]], extras(q, names)]) for q in qs])
        offset = np.zeros(len(y))
    # frozen: scaled, not centred, so a column's 0 (every candidate of a question that is not a
    # time question) adds nothing to the shipped logit
    mean = np.zeros(x.shape[1]) if frozen else x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    if frozen:  # no intercept: the shipped one stays
        w = _newton(z, y, offset, l2, shrink_first=True)
        return Model(tuple(names), True, mean, scale, w, 0.0)
    w = _newton(np.hstack([np.ones((len(y), 1)), z]), y, offset, l2, shrink_first=False)
    return Model(tuple(names), False, mean, scale, w[1:], float(w[0]))


def _order(q: T.QuestionData, logits: Array, text: str | None) -> list[str]:
    p = 1.0 / (1.0 + np.exp(-np.clip(logits, -40, 40)))
    if text is not None:  # the learned profile's boosts (temporal_ablation._boosts)
        p = p * TA._boosts(q, text, p)
    return [q.dia_ids[i] for i in np.argsort(-p, kind="stable")]


def score(
    items: Sequence[Item], model: Model | None, shipped: LearnedScorer
) -> dict[str, dict[str, list[float]]]:
    """Per system (ours, no-temporal), per "category:k" (k in KS or auc20), the questions' values."""
    out: dict[str, dict[str, list[float]]] = {"ours": {}, "no-temporal": {}}
    for it in items:
        ours = _order(it.q, shipped.logits(it.q.x) if model is None else model.logits(it.q, shipped), it.text)
        blind: list[str] = []
        if it.blind is not None:
            blind = _order(
                it.blind,
                shipped.logits(it.blind.x) if model is None else model.logits(it.blind, shipped),
                None,
            )
        for system, order in (("ours", ours), ("no-temporal", blind)):
            for group in ("overall", T.LOCOMO_CATEGORIES[it.q.category]):
                cell = out[system]
                for k in KS:
                    cell.setdefault(f"{group}:R@{k}", []).append(T.recall_at(order, it.q.evidence, k))
                auc = float(np.mean([T.recall_at(order, it.q.evidence, k) for k in range(1, 21)]))
                cell.setdefault(f"{group}:auc20", []).append(auc)
    return out


def load(data_dir: Path, dataset: str, convs: Sequence[int], shipped: LearnedScorer) -> list[Item]:
    first = shipped.first_stage
    assert first is not None

    def mark(q: T.QuestionData) -> T.QuestionData:
        return T.with_neighbours(q, first, shipped.neighbour_seeds, shipped.neighbour_window)

    out = []
    for block in load_rows(data_dir, dataset, list(convs)):
        for raw, q in zip(block["questions"], T.questions_of(block), strict=True):
            blind = TA.without_temporal(q, raw["question"])
            out.append(Item(raw["question"], mark(q), None if blind is None else mark(blind)))
    return out


def when_list_counts(items: Sequence[Item]) -> dict[str, tuple[int, int]]:
    """The "when" list's members of "when" questions without a window, by their rank in it:
    (evidence, not evidence)."""
    counts: dict[str, list[int]] = {"1-3": [0, 0], "4-10": [0, 0], "11+": [0, 0]}
    for it in items:
        if not _when(it.q):
            continue
        for s, label in zip(it.q.signals, it.q.labels, strict=True):
            r = s.ranks.get("temporal")
            if r is not None:
                counts["1-3" if r <= 3 else "4-10" if r <= 10 else "11+"][0 if label > 0 else 1] += 1
    return {k: (v[0], v[1]) for k, v in counts.items()}


def summary(res: dict[str, dict[str, list[float]]]) -> dict[str, float]:
    m: dict[str, float] = {}
    for system, cells in res.items():
        for key, values in cells.items():
            m[f"{system}:{key}"] = round(100 * float(np.mean(values)), 2)
    m["margin:temporal:R@10"] = round(m["ours:temporal:R@10"] - m["no-temporal:temporal:R@10"], 2)
    return m


def row(name: str, m: dict[str, float]) -> str:
    return (
        f"| {name} | {m['ours:overall:R@10']:.1f} | {m['ours:multi-hop:R@10']:.1f} | "
        f"{m['ours:temporal:R@1']:.1f} / {m['ours:temporal:R@5']:.1f} / {m['ours:temporal:R@10']:.1f} | "
        f"{m['ours:temporal:auc20']:.2f} | {m['no-temporal:temporal:R@10']:.1f} | "
        f"{m['margin:temporal:R@10']:+.1f} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument(
        "--frozen", action="store_true", help="fit only the extra columns, on top of the shipped logit"
    )
    p.add_argument(
        "--variants",
        nargs="*",
        default=None,
        help='comma-separated column sets ("" = none: the shipped model with --frozen, else a plain '
        "retrain); default: each alone",
    )
    p.add_argument(
        "--held-out", action="store_true", help="fit on all of 0-4, report 5-9 (once, for a fixed choice)"
    )
    p.add_argument("--l2", type=float, default=T.DEFAULT_L2)
    p.add_argument(
        "--when-list", action="store_true", help='only: 0-4\'s "when" lists by rank, evidence or not'
    )
    p.add_argument(
        "--when-share-removed",
        type=float,
        default=1.0,
        help='share of the "when" list\'s RRF weight taken out beyond its head (recall: 1)',
    )
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    shipped = LearnedScorer.default()
    if args.when_share_removed != 1.0:
        share = args.when_share_removed

        def partly(signals: Sequence[CandidateSignals], *, weight: float, k: float) -> list[CandidateSignals]:
            return unfuse_when_list(signals, weight=weight * share, k=k)

        T.unfuse_when_list = partly  # train_reranker.questions_of reads the list through it
    variants = ["", *EXTRAS] if args.variants is None else list(args.variants)
    train = {c: load(args.data_dir, "locomo", [c], shipped) for c in T.TRAIN}
    if args.when_list:
        for band, (gold, other) in when_list_counts([it for c in T.TRAIN for it in train[c]]).items():
            print(f'"when" list rank {band}: {gold} evidence, {other} other')
        return 0
    extra = [
        it.q for name, banks in T.EXTRA_TRAIN.items() for it in load(args.data_dir, name, banks, shipped)
    ]
    held = (
        [it for c in T.HELD_OUT for it in load(args.data_dir, "locomo", [c], shipped)]
        if args.held_out
        else []
    )
    where = (
        "LoCoMo 5-9 (fitted on 0-4 + dated-train)"
        if args.held_out
        else "LoCoMo 0-4, leave one conversation out"
    )
    print(f"{where}; {'frozen shipped weights + extra columns' if args.frozen else 'retrained'}\n")
    print(
        "| columns | overall R@10 | multi-hop R@10 | temporal R@1 / R@5 / R@10 | temporal auc20 "
        "| no-temporal temporal R@10 | margin |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    results: dict[str, Any] = {}
    for spec in variants:
        names = [n for n in spec.split(",") if n]
        unknown = [n for n in names if n not in EXTRAS]
        if unknown:
            p.error(f"unknown columns {unknown}; known: {sorted(EXTRAS)}")
        shipped_only = not names and args.frozen
        if args.held_out:
            fitted = (
                None
                if shipped_only
                else fit(
                    [it.q for c in T.TRAIN for it in train[c]] + extra, names, args.frozen, shipped, args.l2
                )
            )
            res = score(held, fitted, shipped)
        else:
            res = {"ours": {}, "no-temporal": {}}
            for h in T.TRAIN:
                rest = [it.q for c in T.TRAIN if c != h for it in train[c]] + extra
                fitted = None if shipped_only else fit(rest, names, args.frozen, shipped, args.l2)
                for system, cells in score(train[h], fitted, shipped).items():
                    for key, values in cells.items():
                        res[system].setdefault(key, []).extend(values)
        m = summary(res)
        label = "+".join(names) or ("shipped weights" if args.frozen else "plain retrain")
        results[label] = m
        print(row(label, m), flush=True)
    if args.out:
        write_json(
            args.out,
            {
                "command": "python benchmarks/when_interactions.py " + " ".join(sys.argv[1:]),
                "frozen": args.frozen,
                "held_out": args.held_out,
                "results": results,
            },
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
