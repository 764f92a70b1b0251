"""What reading implied years (shared_core/recall/text_years.py) costs the learned reranker:
featurize + score of an encyclopedia list and of a chat list, old (written years only) against
new (written + implied), in one run.

The encyclopedia lists are paragraphs of ``wiki-dev`` (benchmarks/wiki_paragraphs.py, the
dated_paragraphs.py set; tuning data, so reading it is allowed), the chat lists LoCoMo turns
(``<speaker> said, "..."``), ``--n`` texts a list (155 by default: about one wiki bank's
candidate list), every list different (nothing is cached per text). Each is scored for a
question with a year window (the only one whose features read the years) and the shipped
weights, both stages (LearnedScorer.prepare + probabilities). "old" is the same code with the
implied years switched off (``learned._told`` returning the written years: the code before
text_years). Times are best-of-N CPU times of the thread, old and new interleaved.

    .venv/bin/python benchmarks/text_years_speed.py                       # table
    .venv/bin/python benchmarks/text_years_speed.py --out docs/benchmarks/brk_years_speed.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_cpu_ms

from shared_core.recall import learned
from shared_core.recall.learned import CandidateSignals, LearnedScorer, QuerySignals
from shared_core.recall.text_years import offsets as find_offsets
from shared_core.types import ARM_NAMES, TimeWindow

_WINDOW = TimeWindow(start=dt.datetime(2005, 1, 1, tzinfo=dt.UTC), end=dt.datetime(2006, 1, 1, tzinfo=dt.UTC))
_QUESTIONS = {
    "encyclopedia": "Which club did Varga play for in 2005?",
    "chat": "What did Caroline paint in 2005?",
}


def _signals(texts: Sequence[str], seed: int) -> list[CandidateSignals]:
    """Candidates with ``texts`` in fused order and deterministic arm ranks and scores."""
    rng = random.Random(seed)
    out = []
    for i, text in enumerate(texts):
        arms = [a for a in ARM_NAMES if rng.random() < (0.9 if a == "semantic" else 0.4)]
        ranks = {a: rng.randint(1, 300) for a in arms}
        out.append(
            CandidateSignals(
                position=i,
                rrf=round(sum(1 / (60 + r) for r in ranks.values()), 6),
                ranks=ranks,
                arm_scores={a: round(rng.uniform(0.1, 0.9), 4) for a in arms},
                cosine=round(rng.uniform(-0.1, 0.8), 4),
                text=text,
            )
        )
    return out


def _lists(texts: Sequence[str], n: int, count: int) -> list[list[CandidateSignals]]:
    """``count`` lists of ``n`` texts, each a different slice (wrapping around)."""
    step = max(1, (len(texts) - n) // max(count, 1))
    return [_signals([texts[(k * step + j) % len(texts)] for j in range(n)], k) for k in range(count)]


def _score(scorer: LearnedScorer, query: QuerySignals, cands: Sequence[CandidateSignals]) -> list[float]:
    rows, seeds = scorer.prepare(query, cands)
    return scorer.probabilities(rows, seeds, {})


def written_only(written: dict[int, list[tuple[int, int]]], candidates: Any) -> dict[int, list[int]]:
    """A stand-in for ``learned._told``: the written years only (the code before text_years)."""
    return {i: [year for _, year in found] for i, found in written.items()}


def measure(n: int, repeat: int) -> dict[str, Any]:
    from _locomo import load_locomo
    from dated_paragraphs import DATASETS

    wiki = [t.text for c in DATASETS["wiki-dev"]() for t in c.turns]
    chat = [t.text for c in load_locomo() for t in c.turns]
    scorer = LearnedScorer.default()
    new_told = learned._told
    rows = []
    for kind, texts in (("encyclopedia", wiki), ("chat", chat)):
        lists = _lists(texts, n, repeat)
        query = QuerySignals.from_query(_QUESTIONS[kind], _WINDOW)
        offsets = sum(bool(find_offsets(c.text)) for ls in lists for c in ls) / (n * repeat)
        times: dict[str, float] = {"old": float("inf"), "new": float("inf")}
        for _ in range(3):  # interleaved, so a busy neighbour hits both alike
            for label, told in (("old", written_only), ("new", new_told)):
                learned._told = told  # type: ignore[assignment]
                try:
                    t = best_cpu_ms(lambda i, q=query, ls=lists: _score(scorer, q, ls[i]), repeat)  # type: ignore[misc]
                finally:
                    learned._told = new_told
                times[label] = min(times[label], t)
        rows.append(
            {
                "texts": kind,
                "n": n,
                "share_with_offset_phrase": round(offsets, 3),
                "old_ms": round(times["old"], 3),
                "new_ms": round(times["new"], 3),
                "change_pct": round(100 * (times["new"] / times["old"] - 1), 1),
            }
        )
    return {"repeat": repeat, "load_average": [round(x, 2) for x in os.getloadavg()], "rows": rows}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--n", type=int, default=155)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    result = measure(args.n, args.repeat)
    print(
        f"featurize + score (both stages), {args.n} texts a list, best of {args.repeat} CPU times x 3 "
        f"interleaved rounds, load average {result['load_average']}"
    )
    print("| texts | share with an offset phrase | old ms | new ms | change |")
    print("|---|---:|---:|---:|---:|")
    for r in result["rows"]:
        print(
            f"| {r['texts']} | {r['share_with_offset_phrase']} | {r['old_ms']} | {r['new_ms']} "
            f"| {r['change_pct']:+.1f}% |"
        )
    if args.out:
        from _report import write_json

        write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
