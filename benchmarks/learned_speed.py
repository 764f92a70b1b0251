"""Micro-benchmark of the learned reranker: featurize + score 300 candidates (issue 11.1: < 2 ms).

The candidate lists are synthetic and deterministic (chat-like texts of 5-60 words, some dated,
a few with years written in them; every arm's ranks and scores), scored for three questions:
plain, "when" and with a time window, so every feature path runs. Every timed run scores a
list of texts the process has never seen (one list per run, made beforehand: recall's
candidates are mostly texts it has not scored before; nothing is cached per text). Times are
best-of-N CPU times of the thread (on a shared machine wall time mostly measures the
neighbours); the ratio is to the weighted RRF of the same candidates' four arm lists in the
same run (:func:`shared_core.recall.fusion.reciprocal_rank_fusion`), the pure stage just
before it. "signals" is the cost of building the 300 ``CandidateSignals`` recall hands the
scorer (pipeline._signals: one frozen dataclass per candidate), outside the scorer. The last
column is the per-candidate reference implementation (the spec; same numbers).

    .venv/bin/python benchmarks/learned_speed.py                 # table
    .venv/bin/python benchmarks/learned_speed.py --repeat 30 --out docs/benchmarks/learned_speed.json \
        --md docs/benchmarks/learned_speed.md

A fifth row scores the plain question over the same lists with one non-ASCII word added to
every text ("café"): such texts take the code-point path of the text scan instead of bytes.
The last one writes every text as a chat turn (``Caroline said, "…"`` / ``Melanie said, "…"``):
the speaker column reads the speech form of every text that holds a name of the question.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_cpu_ms

from shared_core.recall.fusion import ArmHit, reciprocal_rank_fusion
from shared_core.recall.learned import (
    CandidateSignals,
    LearnedScorer,
    QuerySignals,
    _featurize_rows,
    featurize,
)
from shared_core.types import ARM_NAMES, ArmName, TimeWindow

_VOCABULARY = (
    "alice bob carol went to the support group yesterday and said she loved painting with her "
    "kids at the lake in summer adopted a cat named pixel works at google as an engineer moved "
    "from sweden after her grandmother passed running marathon charity race camping trip book "
    "about glaciers violin workshop cremona nurse emergency room hospital zurich Caroline "
    "Melanie LGBTQ Pride March Paris Lisbon Novabank"
)
_WORDS = tuple(_VOCABULARY.split())
_QUESTIONS: tuple[tuple[str, TimeWindow | None], ...] = (
    ("What does Caroline like about the support group?", None),
    ("When did Melanie go camping with her kids?", None),
    (
        "Where did Alice work in 2022?",
        TimeWindow(start=dt.datetime(2022, 1, 1, tzinfo=dt.UTC), end=dt.datetime(2023, 1, 1, tzinfo=dt.UTC)),
    ),
)


def candidates(n: int = 300, seed: int = 7) -> list[CandidateSignals]:
    """``n`` deterministic candidates in fused order."""
    rng = random.Random(seed)
    out = []
    base = dt.datetime(2021, 1, 1, tzinfo=dt.UTC)
    for i in range(n):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(5, 60))]
        if rng.random() < 0.15:
            words.insert(rng.randrange(len(words)), str(rng.randint(2015, 2025)))
        arms: list[ArmName] = [a for a in ARM_NAMES if rng.random() < (0.9 if a == "semantic" else 0.4)]
        ranks = {a: rng.randint(1, 300) for a in arms}
        scores = {a: round(rng.uniform(0.1, 9.0 if a == "keyword" else 0.9), 4) for a in arms}
        dated = rng.random() < 0.5
        start = base + dt.timedelta(days=rng.randint(0, 1200)) if dated else None
        out.append(
            CandidateSignals(
                position=i,
                rrf=round(sum(1 / (60 + r) for r in ranks.values()), 6),
                ranks=ranks,
                arm_scores=scores,
                cosine=round(rng.uniform(-0.1, 0.8), 4) if rng.random() < 0.95 else None,
                text=" ".join(words).capitalize() + ".",
                occurred_start=start,
                occurred_end=start + dt.timedelta(days=1) if start and rng.random() < 0.3 else None,
                mentioned_at=base + dt.timedelta(days=rng.randint(0, 1300)),
                date_grain=rng.choice(("day", "month", "year", None)) if start else None,
            )
        )
    return out


def measure(n: int = 300, repeat: int = 50) -> dict[str, Any]:
    scorer = LearnedScorer.default()
    cands = candidates(n)
    fresh = [candidates(n, seed=1000 + i) for i in range(repeat)]  # texts never scored before
    lists = {
        arm: [
            ArmHit(id=str(i), score=c.arm_scores[arm])
            for i, c in sorted(enumerate(cands), key=lambda t: t[1].ranks.get(arm, 10**6))
            if arm in c.ranks
        ]
        for arm in ARM_NAMES
    }
    fusion = best_cpu_ms(lambda _: reciprocal_rank_fusion(lists), repeat)
    fields = [{f.name: getattr(c, f.name) for f in dataclasses.fields(c)} for c in cands]
    signals = best_cpu_ms(lambda _: [CandidateSignals(**f) for f in fields], repeat)
    accented = [[dataclasses.replace(c, text=c.text + " café") for c in f] for f in fresh]
    # chat turns, every other one said by the person the question names: the speaker column's
    # worst case (its speech-form regex runs on every text holding one of the question's names)
    turns = [
        [
            dataclasses.replace(c, text=f'{("Caroline", "Melanie")[i % 2]} said, "{c.text}"')
            for i, c in enumerate(f)
        ]
        for f in fresh
    ]
    rows: list[dict[str, Any]] = []
    for (question, window), cands_by_run, texts in [
        *((q, fresh, "ascii") for q in _QUESTIONS),
        (_QUESTIONS[0], accented, "non-ascii"),
        (_QUESTIONS[0], turns, "chat turns"),
    ]:
        query = QuerySignals.from_query(question, window)
        features = best_cpu_ms(lambda i, q=query, ls=cands_by_run: featurize(q, ls[i]), repeat)  # type: ignore[misc]
        # both stages of a model reading the second graph round (prepare: features and the
        # first stage's seeds; probabilities: the final scores, every other candidate marked
        # as a neighbour of the top seed, the worst case; the neighbour lookup between them is
        # a statement, timed with recall, not here)
        total = best_cpu_ms(lambda i, q=query, ls=cands_by_run: _both_stages(scorer, q, ls[i]), repeat)  # type: ignore[misc]
        reference = best_cpu_ms(
            lambda i, q=query, ls=cands_by_run: scorer.logits(_featurize_rows(q, ls[i])),  # type: ignore[misc]
            repeat,
        )
        rows.append(
            {
                "question": question,
                "texts": texts,
                "window": window is not None,
                "featurize_ms": round(features, 3),
                "score_ms": round(total, 3),
                "per_candidate_reference_ms": round(reference, 3),
                "ratio_to_fusion": round(total / fusion, 2),
            }
        )
    load = [round(x, 2) for x in os.getloadavg()]
    return {
        "candidates": n,
        "repeat": repeat,
        "load_average": load,
        "fusion_ms": round(fusion, 3),
        "signals_ms": round(signals, 3),
        "rows": rows,
    }


def _both_stages(
    scorer: LearnedScorer, query: QuerySignals, cands: Sequence[CandidateSignals]
) -> list[float]:
    rows, seeds = scorer.prepare(query, cands)
    return scorer.probabilities(rows, seeds, {i: seeds[:1] for i in range(len(rows)) if i not in seeds})


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--md", type=Path, default=None, help="also write this Markdown report")
    args = p.parse_args(argv)
    result = measure(args.n, args.repeat)
    lines = [
        f"{args.n} candidates (texts never seen before), best of {args.repeat} CPU times, load average "
        f"{result['load_average']} (1/5/15 min, 2 cores); RRF of the same lists: {result['fusion_ms']} ms; "
        f"building the CandidateSignals (outside the scorer): {result['signals_ms']} ms",
        "",
        "| question | texts | featurize ms | featurize + score ms | ratio to RRF "
        "| per-candidate reference ms |",
        "|---|---|---:|---:|---:|---:|",
        *(
            f"| {r['question']} | {r['texts']} | {r['featurize_ms']} | {r['score_ms']} | "
            f"{r['ratio_to_fusion']} | {r['per_candidate_reference_ms']} |"
            for r in result["rows"]
        ),
    ]
    print("\n".join(lines))
    if args.md:
        from _report import write_text

        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        command = " ".join(
            ["python benchmarks/learned_speed.py", *(argv if argv is not None else sys.argv[1:])]
        )
        write_text(
            args.md,
            "\n".join(
                [
                    "# Learned reranker: scoring cost",
                    "",
                    f"Run {when}. `{command}`",
                    "",
                    *lines,
                    "",
                    (__doc__ or "").split("\n\n")[1],
                    "",
                ]
            ),
        )
    if args.out:
        from _report import write_json

        write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
